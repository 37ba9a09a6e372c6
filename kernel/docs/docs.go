package docs

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"io"
	"sync"
)

//go:embed docs.json.gz
var compressed []byte

// Entry is one documented name.
type Entry struct {
	Decl string `json:"d"`           // the declaration, as gofmt prints it (function bodies left out)
	Doc  string `json:"c,omitempty"` // the doc comment, as text
}

// File is the generated collection: entries by key, and each package's
// synopsis by import path.
type File struct {
	Packages map[string]string `json:"packages"`
	Entries  map[string]Entry  `json:"entries"`
}

var (
	once   sync.Once
	loaded File
)

// All returns the embedded documentation, decoded on first use (an empty
// File if the embedded data is damaged).
func All() *File {
	once.Do(func() {
		zr, err := gzip.NewReader(bytes.NewReader(compressed))
		if err != nil {
			return
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			return
		}
		json.Unmarshal(b, &loaded)
	})
	return &loaded
}

// Lookup returns the entry for a package-level name ("fmt", "Println") or,
// with a type, a method or field of it (pkg "net/http", name
// "Client.Do").
func Lookup(pkg, name string) (Entry, bool) {
	e, ok := All().Entries[pkg+"."+name]
	return e, ok
}

// Synopsis returns a package's one-sentence summary.
func Synopsis(pkg string) (string, bool) {
	s, ok := All().Packages[pkg]
	return s, ok
}
