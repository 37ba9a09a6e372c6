package modelfile

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/kiln-ml/kiln/store"
)

// Tensor describes one tensor of a safetensors file.
type Tensor struct {
	Name      string `json:"name"`
	DType     string `json:"dtype"`
	Shape     []int  `json:"shape"`
	Bytes     int64  `json:"bytes"`
	Supported bool   `json:"supported"` // whether Kiln has a tensor type for the dtype
}

// SafetensorsReport describes one safetensors file.
type SafetensorsReport struct {
	Path     string            `json:"path"`
	Bytes    int64             `json:"bytes"`
	Metadata map[string]string `json:"metadata"`
	Tensors  []Tensor          `json:"tensors"`
	Elements int64             `json:"elements"`   // total number of elements
	Data     int64             `json:"data_bytes"` // total bytes of tensor data
}

// DescribeSafetensors describes the size-byte file at path that sf reads,
// its tensors sorted by name.
func DescribeSafetensors(path string, size int64, sf *store.SafetensorsFile) SafetensorsReport {
	rep := SafetensorsReport{Path: path, Bytes: size, Metadata: sf.Metadata(), Tensors: []Tensor{}}
	names := sf.Names()
	sort.Strings(names)
	for _, n := range names {
		info, _ := sf.Info(n)
		shape := info.Shape
		if shape == nil {
			shape = []int{}
		}
		elems := int64(1)
		for _, d := range shape {
			elems *= int64(d)
		}
		rep.Tensors = append(rep.Tensors, Tensor{Name: n, DType: info.FileDType, Shape: shape, Bytes: info.Size, Supported: info.Supported})
		rep.Elements += elems
		rep.Data += info.Size
	}
	return rep
}

// Print writes the file's metadata and a table of its tensors, each line
// prefixed with indent; with limit > 0, at most limit tensors, then how
// many more there are.
func (r SafetensorsReport) Print(w io.Writer, indent string, limit int) {
	fmt.Fprintf(w, "%sfile      %s (%s)\n", indent, r.Path, Bytes(r.Bytes))
	keys := make([]string, 0, len(r.Metadata))
	for k := range r.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		fmt.Fprintf(w, "%smetadata  (none)\n", indent)
	}
	for i, k := range keys {
		label := "metadata "
		if i > 0 {
			label = "         "
		}
		fmt.Fprintf(w, "%s%s %s = %s\n", indent, label, k, r.Metadata[k])
	}
	fmt.Fprintf(w, "%stensors   %d, %d elements, %s of data\n", indent, len(r.Tensors), r.Elements, Bytes(r.Data))
	if len(r.Tensors) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s  NAME\tDTYPE\tSHAPE\tSIZE\n", indent)
	for i, t := range r.Tensors {
		if limit > 0 && i == limit {
			break
		}
		dtype := t.DType
		if !t.Supported {
			dtype += " (not readable by Kiln)"
		}
		fmt.Fprintf(tw, "%s  %s\t%s\t%s\t%s\n", indent, t.Name, dtype, Shape(t.Shape), Bytes(t.Bytes))
	}
	tw.Flush()
	if limit > 0 && len(r.Tensors) > limit {
		fmt.Fprintf(w, "%s  … and %d more tensors\n", indent, len(r.Tensors)-limit)
	}
}

// GGUFTensor describes one tensor of a GGUF file.
type GGUFTensor struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Shape []int  `json:"shape"`
	Bytes int64  `json:"bytes"`
}

// GGUFReport describes one GGUF file.
type GGUFReport struct {
	Path     string         `json:"path"`
	Format   string         `json:"format"`
	Version  uint32         `json:"version"`
	Bytes    int64          `json:"bytes"`
	Metadata map[string]any `json:"metadata"`
	Tensors  []GGUFTensor   `json:"tensors"`
}

// DescribeGGUF describes the size-byte GGUF file at path that f reads.
// Long arrays in the metadata (vocabularies) are given by their length and
// first items, not 100k strings.
func DescribeGGUF(path string, size int64, f *store.GGUFFile) GGUFReport {
	rep := GGUFReport{Path: path, Format: GGUF, Version: f.Version, Bytes: size, Metadata: map[string]any{}}
	for _, k := range f.Keys {
		v := f.Metadata[k]
		if a, ok := v.([]any); ok && len(a) > 16 {
			v = fmt.Sprintf("[%d items: %v …]", len(a), a[:8])
		}
		rep.Metadata[k] = v
	}
	for _, t := range f.Tensors {
		rep.Tensors = append(rep.Tensors, GGUFTensor{Name: t.Name, Type: t.Type.String(), Shape: t.Shape, Bytes: t.Size})
	}
	return rep
}

// Print writes the file's version, metadata and tensors; with limit > 0,
// at most limit tensors, then how many more there are.
func (r GGUFReport) Print(w io.Writer, limit int) {
	fmt.Fprintf(w, "%s: GGUF version %d, %s, %d tensors\n", r.Path, r.Version, Bytes(r.Bytes), len(r.Tensors))
	if len(r.Metadata) > 0 {
		fmt.Fprintln(w, "metadata:")
		keys := make([]string, 0, len(r.Metadata))
		for k := range r.Metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  %s = %v\n", k, r.Metadata[k])
		}
	}
	fmt.Fprintf(w, "%-40s %-6s %-20s %10s\n", "TENSOR", "TYPE", "SHAPE", "SIZE")
	for i, t := range r.Tensors {
		if limit > 0 && i == limit {
			fmt.Fprintf(w, "… and %d more tensors\n", len(r.Tensors)-limit)
			break
		}
		fmt.Fprintf(w, "%-40s %-6s %-20s %10s\n", t.Name, t.Type, Shape(t.Shape), Bytes(t.Bytes))
	}
}

// Shape formats a shape as Kiln prints shapes: [4 3]; [] for a scalar.
func Shape(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = strconv.Itoa(d)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// Bytes formats a byte count for people: "812 B", "1.5 KiB", "2.0 GiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
