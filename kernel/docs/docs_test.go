package docs_test

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/kernel/docs"
	"github.com/kiln-ml/kiln/kernel/docs/extract"
)

// The embedded documentation of Kiln's own packages must match their
// sources: a doc comment changed without regenerating fails here.
func TestKilnDocsUpToDate(t *testing.T) {
	all := docs.All()
	var kiln []string
	for p := range all.Packages {
		if strings.HasPrefix(p, "github.com/kiln-ml/kiln") {
			kiln = append(kiln, p)
		}
	}
	sort.Strings(kiln)
	if len(kiln) < 8 {
		t.Fatalf("only %d Kiln packages documented: %v", len(kiln), kiln)
	}
	fresh, err := extract.Packages(kiln)
	if err != nil {
		t.Fatal(err)
	}
	var stale []string
	for key, e := range fresh.Entries {
		if got, ok := all.Entries[key]; !ok || !reflect.DeepEqual(got, e) {
			stale = append(stale, key)
		}
	}
	for key := range all.Entries {
		if _, ok := fresh.Entries[key]; !ok && strings.HasPrefix(key, "github.com/kiln-ml/kiln") {
			stale = append(stale, key+" (gone)")
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		if len(stale) > 10 {
			stale = append(stale[:10], "…")
		}
		t.Fatalf("the embedded docs are stale for %s: run go generate ./kernel/docs", strings.Join(stale, ", "))
	}
}

func TestLookup(t *testing.T) {
	e, ok := docs.Lookup("github.com/kiln-ml/kiln/nn", "NewLinear")
	if !ok || !strings.HasPrefix(e.Decl, "func NewLinear(") || !strings.Contains(e.Doc, "NewLinear") {
		t.Errorf("nn.NewLinear: %+v", e)
	}
	if e, ok := docs.Lookup("strings", "Builder.WriteString"); !ok || !strings.Contains(e.Decl, "func (b *Builder) WriteString(s string)") {
		t.Errorf("strings.Builder.WriteString: %+v", e)
	}
	if s, ok := docs.Synopsis("fmt"); !ok || !strings.Contains(s, "formatted I/O") {
		t.Errorf("fmt synopsis %q", s)
	}
}
