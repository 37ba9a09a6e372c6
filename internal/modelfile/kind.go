package modelfile

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/kiln-ml/kiln/store"
)

// The formats Kind tells apart.
const (
	Safetensors = "safetensors"
	GGUF        = "gguf"
	ONNX        = "onnx"
)

// Kind tells the format of the size-byte file at path from its content:
// Safetensors, GGUF or ONNX. A file whose content matches none but whose
// name ends in one of their extensions is taken as that format, so that a
// damaged file gets its reader's specific error. For any other file kind is
// "" and start says what the file begins with ("it is empty", "it starts
// with the text …", "it starts with the bytes …"), for the caller's error.
// err is only the failure to read the file.
func Kind(path string, size int64) (kind, start string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	head := make([]byte, 16)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	switch {
	case isSafetensors(head):
		return Safetensors, "", nil
	case store.IsGGUF(head):
		return GGUF, "", nil
	case isONNX(f, size):
		return ONNX, "", nil
	}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".safetensors", ".gguf", ".onnx":
		return ext[1:], "", nil
	}
	return "", describeStart(head), nil
}

// isSafetensors reports whether a file starting with head looks like
// safetensors: a little-endian 64-bit header length, then the header's
// opening '{'. A length past the end of the file still counts (a
// truncated file, which the reader reports as such), but not one of 4 GiB
// or more, which text and random bytes give.
func isSafetensors(head []byte) bool {
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
// error of a file that is no model.
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
