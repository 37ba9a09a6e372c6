package onnx

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecodeValue feeds decodeValue damaged SequenceProto and
// OptionalProto bytes (seeded with the suite's own files where installed):
// it must never panic, and must fail with ErrCorrupt or ErrUnsupported.
func FuzzDecodeValue(f *testing.F) {
	for _, name := range []string{"node/test_sequence_insert_at_back/test_data_set_0/input_0.pb",
		"node/test_optional_get_element_sequence/test_data_set_0/input_0.pb"} {
		if b, err := os.ReadFile(filepath.Join(conformanceDir(), name)); err == nil {
			f.Add(b, true)
			f.Add(b, false)
		}
	}
	f.Add([]byte{0x1a, 0x02, 0x08, 0x01}, true)
	f.Add([]byte{0x1a, 0x05}, false)
	seq := &TypeProto{Kind: "sequence", Elem: &TypeProto{Kind: "tensor"}}
	opt := &TypeProto{Kind: "optional", Elem: seq}
	f.Fuzz(func(t *testing.T, b []byte, asSeq bool) {
		typ := opt
		if asSeq {
			typ = seq
		}
		if _, err := decodeValue(b, typ, 0); err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
			t.Fatalf("decodeValue: %v wraps neither ErrCorrupt nor ErrUnsupported", err)
		}
	})
}
