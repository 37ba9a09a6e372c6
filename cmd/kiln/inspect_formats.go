package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/store"
)

// ggufReport is what `kiln inspect` says of a GGUF file.
type ggufReport struct {
	Path     string           `json:"path"`
	Format   string           `json:"format"`
	Version  uint32           `json:"version"`
	Bytes    int64            `json:"bytes"`
	Metadata map[string]any   `json:"metadata"`
	Tensors  []ggufTensorInfo `json:"tensors"`
}

type ggufTensorInfo struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Shape []int  `json:"shape"`
	Bytes int64  `json:"bytes"`
}

// inspectGGUF describes the GGUF file at path.
func inspectGGUF(out io.Writer, path string, size int64, asJSON bool) error {
	f, err := store.OpenGGUF(path)
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	rep := ggufReport{Path: path, Format: "gguf", Version: f.Version, Bytes: size, Metadata: map[string]any{}}
	for _, k := range f.Keys {
		v := f.Metadata[k]
		if a, ok := v.([]any); ok && len(a) > 16 { // vocabularies: the length, not 100k strings
			v = fmt.Sprintf("[%d items: %v …]", len(a), a[:8])
		}
		rep.Metadata[k] = v
	}
	for _, t := range f.Tensors {
		rep.Tensors = append(rep.Tensors, ggufTensorInfo{Name: t.Name, Type: t.Type.String(), Shape: t.Shape, Bytes: t.Size})
	}
	if asJSON {
		return writeJSON(out, rep)
	}
	fmt.Fprintf(out, "%s: GGUF version %d, %s, %d tensors\n", path, f.Version, humanBytes(size), len(f.Tensors))
	if len(f.Keys) > 0 {
		fmt.Fprintln(out, "metadata:")
		keys := append([]string(nil), f.Keys...)
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(out, "  %s = %v\n", k, rep.Metadata[k])
		}
	}
	fmt.Fprintf(out, "%-40s %-6s %-20s %10s\n", "TENSOR", "TYPE", "SHAPE", "SIZE")
	for _, t := range rep.Tensors {
		fmt.Fprintf(out, "%-40s %-6s %-20s %10s\n", t.Name, t.Type, shapeText(t.Shape), humanBytes(t.Bytes))
	}
	return nil
}

// onnxReport is what `kiln inspect --json` says of an ONNX file.
type onnxReport struct {
	Path        string `json:"path"`
	Format      string `json:"format"`
	Description string `json:"description"`
}

// inspectONNX describes the ONNX model at path: opsets, inputs, outputs,
// operators and initializers (onnx.Describe).
func inspectONNX(out io.Writer, path string, asJSON bool) error {
	d, err := onnx.Describe(path)
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	if asJSON {
		return writeJSON(out, onnxReport{Path: path, Format: "onnx", Description: d})
	}
	fmt.Fprintf(out, "%s: ONNX model\n%s", path, d)
	return nil
}

// errNotModelFile is the error of `kiln inspect` for a file of none of the
// formats it reads.
var errNotModelFile = errors.New("not a safetensors, GGUF or ONNX file (or a run or checkpoint directory)")

// fileKind tells the format of the size-byte file at path from its
// content: "safetensors", "gguf" or "onnx". A file whose content matches
// none but whose name ends in one of their extensions is taken as that
// format, so that a damaged file gets the reader's specific error; any
// other file is an error wrapping errNotModelFile that says what the file
// starts with.
func fileKind(path string, size int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, 16)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	switch {
	case isSafetensors(head, size):
		return "safetensors", nil
	case store.IsGGUF(head):
		return "gguf", nil
	case isONNX(f, size):
		return "onnx", nil
	}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".safetensors", ".gguf", ".onnx":
		return ext[1:], nil
	}
	return "", fmt.Errorf("%s is %w: %s", path, errNotModelFile, describeStart(head))
}

// isSafetensors reports whether a file starting with head looks like
// safetensors: a little-endian 64-bit header length, then the header's
// opening '{'. A length past the end of the file still counts (a
// truncated file, which the reader reports as such), but not one of 4 GiB
// or more, which text and random bytes give.
func isSafetensors(head []byte, size int64) bool {
	if len(head) < 9 || head[8] != '{' {
		return false
	}
	n := binary.LittleEndian.Uint64(head)
	return n >= 2 && n < 1<<32
}

// modelProtoFields are the wire types of ModelProto's fields (onnx.proto).
var modelProtoFields = map[protowire.Number]protowire.Type{
	1:  protowire.VarintType, // ir_version
	2:  protowire.BytesType,  // producer_name
	3:  protowire.BytesType,  // producer_version
	4:  protowire.BytesType,  // domain
	5:  protowire.VarintType, // model_version
	6:  protowire.BytesType,  // doc_string
	7:  protowire.BytesType,  // graph
	8:  protowire.BytesType,  // opset_import
	14: protowire.BytesType,  // metadata_props
	20: protowire.BytesType,  // training_info
	25: protowire.BytesType,  // functions
}

// isONNX reports whether the size-byte file f looks like an ONNX model: a
// protobuf message whose top-level fields are all ModelProto's, with the
// right wire types, holding an ir_version and a graph. It reads the tags
// and lengths, not the fields. A file cut short after an ir_version still
// counts, so that the reader says where it ends.
func isONNX(f io.ReaderAt, size int64) bool {
	var buf [2 * binary.MaxVarintLen64]byte
	sawVersion, sawGraph := false, false
	off := int64(0)
	for fields := 0; off < size; fields++ {
		if fields > 100_000 {
			return false
		}
		n, _ := f.ReadAt(buf[:], off)
		num, typ, tagLen := protowire.ConsumeTag(buf[:n])
		if tagLen < 0 {
			return false
		}
		if want, ok := modelProtoFields[num]; !ok || want != typ {
			return false
		}
		rest := buf[tagLen:n]
		switch typ {
		case protowire.VarintType:
			v, l := protowire.ConsumeVarint(rest)
			if l < 0 {
				return sawVersion && off+int64(tagLen+len(rest)) >= size
			}
			if num == 1 {
				if v == 0 || v > 1000 {
					return false
				}
				sawVersion = true
			}
			off += int64(tagLen + l)
		case protowire.BytesType:
			v, l := protowire.ConsumeVarint(rest)
			if l < 0 {
				return sawVersion && off+int64(tagLen+len(rest)) >= size
			}
			end := off + int64(tagLen+l) + int64(v)
			if v > uint64(size) || end > size {
				return sawVersion // cut short
			}
			sawGraph = sawGraph || num == 7
			off = end
		}
	}
	return sawVersion && sawGraph
}

// describeStart says what a file starting with head looks like, for the
// error of a file kiln inspect cannot read.
func describeStart(head []byte) string {
	if len(head) == 0 {
		return "it is empty"
	}
	for cut := 0; cut < utf8.UTFMax && cut < len(head); cut++ { // head may end inside a character
		if text := string(head[:len(head)-cut]); utf8.ValidString(text) && isText(text) {
			return fmt.Sprintf("it starts with the text %q", text)
		}
	}
	return fmt.Sprintf("it starts with the bytes % x", head[:min(len(head), 8)])
}

// isText reports whether s has no control characters but line breaks and
// tabs.
func isText(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t' {
			return false
		}
	}
	return true
}
