package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

var sink byte

// TestMappedReadFaultIsAnError truncates a memory-mapped file under an
// open SafetensorsFile and reads the lost pages through faultGuard, as
// Tensor does when the file shrinks between its size check and its copy:
// the fault must come back as an ErrCorrupt error, not crash the process.
func TestMappedReadFaultIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.safetensors")
	var x *tensor.Tensor
	tensor.Scope(func() {
		x = tensor.Zeros(tensor.CPU(), 64<<10) // 256 KiB of data: many pages
		if err := WriteSafetensors(path, map[string]*tensor.Tensor{"x": x}, nil); err != nil {
			t.Fatal(err)
		}
	})
	sf, err := OpenSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	if sf.mapped == nil {
		t.Skip("files are not memory-mapped on this platform")
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	err = faultGuard(sf.name, "tensor \"x\"", func() error {
		for i := len(sf.mapped) - 1; i > 0; i -= 4096 {
			sink += sf.mapped[i]
		}
		return nil
	})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "changed while reading") {
		t.Fatalf("err = %v, want ErrCorrupt saying the file changed", err)
	}
	// Tensor itself sees the shrink before touching the mapping.
	if _, err := sf.Tensor("x", tensor.CPU()); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "file ends before") {
		t.Errorf("Tensor after truncation: err = %v, want ErrCorrupt saying the file ends early", err)
	}
}
