package data

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Column types of CSVConfig.
const (
	CSVFloat    = "float"    // a decimal number (the default)
	CSVInt      = "int"      // an integer
	CSVBool     = "bool"     // true/false, 1/0 (as strconv.ParseBool), stored as 1 or 0
	CSVCategory = "category" // any string; the sorted distinct values become class indices 0, 1, …
)

// CSVConfig says how LoadCSV reads a CSV file.
//
// Columns are named by the header row when Header is set, else by their
// 0-based position as a decimal string ("0", "1", …).
type CSVConfig struct {
	// Header says that the first row names the columns.
	Header bool
	// Comma is the field separator; 0 means ','.
	Comma rune
	// Features are the columns that make X, in this order; nil means every
	// column but Label.
	Features []string
	// Label is the label column; "" means none (every Label is 0).
	Label string
	// LabelType is CSVInt (class indices, the default), CSVCategory (class
	// names, numbered in sorted order, see CSVDataset.Classes) or CSVFloat
	// (a regression target, stored in Item.Target).
	LabelType string
	// Types gives feature columns a type other than CSVFloat: CSVInt,
	// CSVBool or CSVCategory (numbered in sorted order, stored as floats).
	Types map[string]string
}

// CSVDataset is a CSV file loaded into memory.
type CSVDataset struct {
	InMemory
	// Features names the columns of X, in order.
	Features []string
	// Classes lists the label's class names when LabelType is CSVCategory:
	// Label i means Classes[i].
	Classes []string
	// Categories lists, for each CSVCategory feature column, its values:
	// the value v stands for the index of v in its list.
	Categories map[string][]string
}

// LoadCSV reads the CSV file at path into memory, one Item per row: X
// holds the Features columns as float32, Label or Target the label.
//
// It returns an error naming the file, and where it applies the line and
// the column, for a missing file, a malformed row (wrapping ErrCorrupt:
// a wrong number of fields, bad quoting), a value that does not parse as
// its column's type (wrapping ErrCorrupt), an unknown column in cfg, an
// unknown type, or a file with no header when Header is set.
func LoadCSV(path string, cfg CSVConfig) (*CSVDataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data: LoadCSV: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	if cfg.Comma != 0 {
		r.Comma = cfg.Comma
	}
	r.ReuseRecord = false
	fail := func(err error) error {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return fmt.Errorf("data: CSV %s line %d column %d: %v: %w", path, pe.Line, pe.Column, pe.Err, ErrCorrupt)
		}
		return fmt.Errorf("data: CSV %s: %w", path, err)
	}

	var names []string
	first, err := r.Read()
	if err == io.EOF {
		if cfg.Header {
			return nil, fmt.Errorf("data: CSV %s: empty file, want a header: %w", path, ErrCorrupt)
		}
		return &CSVDataset{Features: cfg.Features}, nil
	}
	if err != nil {
		return nil, fail(err)
	}
	var rows [][]string
	var lines []int
	if cfg.Header {
		names = first
	} else {
		names = make([]string, len(first))
		for i := range names {
			names[i] = strconv.Itoa(i)
		}
		rows = append(rows, first)
		line, _ := r.FieldPos(0)
		lines = append(lines, line)
	}
	col := map[string]int{}
	for i, n := range names {
		col[strings.TrimSpace(n)] = i
	}
	lookup := func(what, name string) (int, error) {
		if i, ok := col[name]; ok {
			return i, nil
		}
		return 0, fmt.Errorf("data: CSV %s: %s column %q is not among the columns %q", path, what, name, names)
	}
	labelCol := -1
	if cfg.Label != "" {
		if labelCol, err = lookup("label", cfg.Label); err != nil {
			return nil, err
		}
	}
	features := cfg.Features
	if features == nil {
		for i, n := range names {
			if i != labelCol {
				features = append(features, strings.TrimSpace(n))
			}
		}
	}
	fcols := make([]int, len(features))
	ftypes := make([]string, len(features))
	for k, n := range features {
		if fcols[k], err = lookup("feature", n); err != nil {
			return nil, err
		}
		ftypes[k] = CSVFloat
		if t, ok := cfg.Types[n]; ok {
			ftypes[k] = t
		}
		if !slices.Contains([]string{CSVFloat, CSVInt, CSVBool, CSVCategory}, ftypes[k]) {
			return nil, fmt.Errorf("data: CSV %s: column %q has unknown type %q (want float, int, bool or category)",
				path, n, ftypes[k])
		}
	}
	for n := range cfg.Types {
		if !slices.Contains(features, n) {
			return nil, fmt.Errorf("data: CSV %s: Types names %q, which is not a feature column", path, n)
		}
	}
	ltype := cfg.LabelType
	if ltype == "" {
		ltype = CSVInt
	}
	if ltype != CSVInt && ltype != CSVFloat && ltype != CSVCategory {
		return nil, fmt.Errorf("data: CSV %s: LabelType %q is not int, float or category", path, ltype)
	}

	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fail(err)
		}
		line, _ := r.FieldPos(0)
		rows = append(rows, rec)
		lines = append(lines, line)
	}

	// Category columns: the sorted distinct values.
	cats := map[int][]string{}
	catCols := []int{}
	for k, t := range ftypes {
		if t == CSVCategory {
			catCols = append(catCols, fcols[k])
		}
	}
	if labelCol >= 0 && ltype == CSVCategory {
		catCols = append(catCols, labelCol)
	}
	for _, c := range catCols {
		var vals []string
		for _, row := range rows {
			vals = append(vals, strings.TrimSpace(row[c]))
		}
		slices.Sort(vals)
		cats[c] = slices.Compact(vals)
	}
	catIndex := func(c int, v string) int {
		i, _ := slices.BinarySearch(cats[c], strings.TrimSpace(v))
		return i
	}

	ds := &CSVDataset{Features: features, Categories: map[string][]string{}}
	for k, t := range ftypes {
		if t == CSVCategory {
			ds.Categories[features[k]] = cats[fcols[k]]
		}
	}
	if labelCol >= 0 && ltype == CSVCategory {
		ds.Classes = cats[labelCol]
	}
	bad := func(line, c int, v, typ string) error {
		return fmt.Errorf("data: CSV %s line %d column %q: cannot parse %q as %s: %w", path, line,
			strings.TrimSpace(names[c]), v, typ, ErrCorrupt)
	}
	ds.Items = make([]Item, len(rows))
	for ri, row := range rows {
		it := Item{X: make([]float32, len(fcols))}
		for k, c := range fcols {
			v := strings.TrimSpace(row[c])
			switch ftypes[k] {
			case CSVFloat:
				x, err := strconv.ParseFloat(v, 32)
				if err != nil {
					return nil, bad(lines[ri], c, v, "float")
				}
				it.X[k] = float32(x)
			case CSVInt:
				x, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return nil, bad(lines[ri], c, v, "int")
				}
				it.X[k] = float32(x)
			case CSVBool:
				x, err := strconv.ParseBool(v)
				if err != nil {
					return nil, bad(lines[ri], c, v, "bool")
				}
				if x {
					it.X[k] = 1
				}
			case CSVCategory:
				it.X[k] = float32(catIndex(c, v))
			}
		}
		if labelCol >= 0 {
			v := strings.TrimSpace(row[labelCol])
			switch ltype {
			case CSVInt:
				x, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return nil, bad(lines[ri], labelCol, v, "int")
				}
				it.Label = x
			case CSVFloat:
				x, err := strconv.ParseFloat(v, 32)
				if err != nil {
					return nil, bad(lines[ri], labelCol, v, "float")
				}
				it.Target = []float32{float32(x)}
			case CSVCategory:
				it.Label = int64(catIndex(labelCol, v))
			}
		}
		ds.Items[ri] = it
	}
	return ds, nil
}
