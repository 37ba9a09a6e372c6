package data_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/data"
)

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadCSV(t *testing.T) {
	const iris = "sepal,petal,big,species,n\n" +
		"5.1, 1.4,true,setosa,3\n" +
		"7.0,4.7,false,versicolor,1\n" +
		"6.3,6.0,1,virginica,2\n" +
		"4.9,1.5,0,setosa,5\n"
	path := writeFile(t, "iris.csv", iris)
	ds, err := data.LoadCSV(path, data.CSVConfig{
		Header: true, Features: []string{"petal", "sepal", "big", "n"}, Label: "species", LabelType: data.CSVCategory,
		Types: map[string]string{"big": data.CSVBool, "n": data.CSVInt},
	})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Len() != 4 || !slices.Equal(ds.Classes, []string{"setosa", "versicolor", "virginica"}) {
		t.Fatalf("Len %d, classes %v", ds.Len(), ds.Classes)
	}
	if got := labels(t, ds); !slices.Equal(got, []int{0, 1, 2, 0}) {
		t.Errorf("labels %v", got)
	}
	it, _ := ds.Get(0)
	if !slices.Equal(it.X, []float32{1.4, 5.1, 1, 3}) {
		t.Errorf("row 0 X = %v", it.X)
	}

	// No header, columns by position, a float label (regression), semicolons.
	reg := writeFile(t, "reg.csv", "1;2;0.5\n3;4;1.5\n")
	rds, err := data.LoadCSV(reg, data.CSVConfig{Comma: ';', Label: "2", LabelType: data.CSVFloat})
	if err != nil {
		t.Fatal(err)
	}
	it, _ = rds.Get(1)
	if !slices.Equal(rds.Features, []string{"0", "1"}) || !slices.Equal(it.X, []float32{3, 4}) ||
		!slices.Equal(it.Target, []float32{1.5}) {
		t.Errorf("features %v, row 1 %v target %v", rds.Features, it.X, it.Target)
	}

	// Category features are numbered in sorted order.
	cat := writeFile(t, "cat.csv", "color,y\nred,1\nblue,0\nred,1\n")
	cds, err := data.LoadCSV(cat, data.CSVConfig{Header: true, Label: "y", Types: map[string]string{"color": data.CSVCategory}})
	if err != nil {
		t.Fatal(err)
	}
	it, _ = cds.Get(0)
	if !slices.Equal(cds.Categories["color"], []string{"blue", "red"}) || it.X[0] != 1 || it.Label != 1 {
		t.Errorf("categories %v, row 0 %v label %d", cds.Categories, it.X, it.Label)
	}
}

func TestLoadCSVErrors(t *testing.T) {
	header := data.CSVConfig{Header: true, Label: "y"}
	for _, tc := range []struct {
		name string
		text string
		cfg  data.CSVConfig
		want []string
		kind error
	}{
		{"bad float names line and column", "a,y\n1,0\n2,0\nx1,1\n", header, []string{"line 4", `column "a"`, `"x1"`}, data.ErrCorrupt},
		{"bad int label", "a,y\n1,0\n2,zero\n", header, []string{"line 3", `column "y"`, "int"}, data.ErrCorrupt},
		{"short row", "a,y\n1,0\n2\n", header, []string{"line 3", "wrong number of fields"}, data.ErrCorrupt},
		{"bad quoting", "a,y\n1,0\n\"2,0\n", header, []string{"line 3"}, data.ErrCorrupt},
		{"bad bool", "a,y\nmaybe,0\n", data.CSVConfig{Header: true, Label: "y", Types: map[string]string{"a": data.CSVBool}},
			[]string{"line 2", `column "a"`, "bool"}, data.ErrCorrupt},
		{"empty file with header", "", header, []string{"empty"}, data.ErrCorrupt},
		{"unknown label column", "a,b\n1,2\n", header, []string{`label column "y"`}, nil},
		{"unknown feature column", "a,y\n1,2\n", data.CSVConfig{Header: true, Features: []string{"z"}}, []string{`"z"`}, nil},
		{"unknown type", "a,y\n1,2\n", data.CSVConfig{Header: true, Types: map[string]string{"a": "complex"}}, []string{"complex"}, nil},
		{"unknown label type", "a,y\n1,2\n", data.CSVConfig{Header: true, Label: "y", LabelType: "text"}, []string{"text"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "bad.csv", tc.text)
			_, err := data.LoadCSV(path, tc.cfg)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append(tc.want, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if tc.kind != nil && !errors.Is(err, tc.kind) {
				t.Errorf("error %v does not wrap %v", err, tc.kind)
			}
		})
	}
	if _, err := data.LoadCSV(filepath.Join(t.TempDir(), "missing.csv"), header); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
