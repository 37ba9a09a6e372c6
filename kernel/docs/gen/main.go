package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/traefik/yaegi/stdlib"

	"github.com/kiln-ml/kiln/kernel/docs/extract"
	"github.com/kiln-ml/kiln/kernel/symbols"
)

func main() {
	out := flag.String("out", "docs.json.gz", "file to write")
	flag.Parse()
	var paths []string
	seen := map[string]bool{}
	for _, table := range []map[string]map[string]any{toAny(stdlib.Symbols), toAny(symbols.Symbols)} {
		for key := range table {
			p := path.Dir(key)
			if !seen[p] && p != "." && !strings.HasSuffix(p, "/symbols") {
				seen[p] = true
				paths = append(paths, p)
			}
		}
	}
	sort.Strings(paths)
	f, err := extract.Packages(paths)
	if err != nil {
		log.Fatal(err)
	}
	b, err := json.Marshal(f)
	if err != nil {
		log.Fatal(err)
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(b)
	zw.Close()
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d packages, %d entries, %d KB\n", *out, len(f.Packages), len(f.Entries), buf.Len()>>10)
}

// toAny drops the value type of a symbol table, so both kinds fit one loop.
func toAny[V any](m map[string]V) map[string]map[string]any {
	out := make(map[string]map[string]any, len(m))
	for k := range m {
		out[k] = nil
	}
	return out
}
