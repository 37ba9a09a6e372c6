package kernel_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/kernel"
)

func TestPanicLineInCellBody(t *testing.T) {
	s := newSession(t, kernel.Options{})
	run(t, s, "func boom(i int) int {\n\treturn []int{1}[i]\n}")
	tests := []struct {
		name, cell string
		want       []string
	}{
		{"index out of range in the body", "a := []int{1, 2}\ni := 5\n_ = a[i]\nfmt.Println(\"not reached\")",
			[]string{"3: in the cell", "   3 | _ = a[i]"}},
		{"explicit panic inside a loop", "for i := 0; i < 3; i++ {\n\tif i == 2 {\n\t\tpanic(\"two\")\n\t}\n}",
			[]string{"panic: two", "1: in the cell", "   1 | for i := 0"}},
		{"panic in a function called from the body", "x := 1\ny := boom(x + 3)\n_ = y",
			[]string{"in boom", "2: in the cell"}},
		{"labeled loop still works before the panic", "n := 0\nouter:\nfor i := 0; i < 3; i++ {\n\tfor j := 0; j < 3; j++ {\n\t\tif j == 1 {\n\t\t\tcontinue outer\n\t\t}\n\t\tn++\n\t}\n}\nvar m map[string]int\nm[\"x\"] = n",
			[]string{"12: in the cell", "  12 | m[\"x\"] = n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Execute(context.Background(), tc.cell, nil)
			var e *kernel.Error
			if !errors.As(err, &e) || e.Name != "panic" {
				t.Fatalf("got %v, want a panic", err)
			}
			tb := strings.Join(e.Traceback, "\n")
			for _, w := range tc.want {
				if !strings.Contains(tb, w) {
					t.Errorf("traceback lacks %q:\n%s", w, tb)
				}
			}
		})
	}
	if got := run(t, s, "1 + 2"); got != "3" {
		t.Fatalf("after the panics: %q", got)
	}
}
