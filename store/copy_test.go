package store_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
)

// TestSafetensorsCopyTo copies files (Kiln's layout, a hand-made one with
// a dtype Kiln cannot hold, one with empty tensors) with new metadata and
// checks that every tensor's bytes, dtype and shape survive.
func TestSafetensorsCopyTo(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		dir := t.TempDir()
		kiln := filepath.Join(dir, "kiln.safetensors")
		if err := store.WriteSafetensors(kiln, sampleCheckpoint(dev).Model, map[string]string{"old": "yes"}); err != nil {
			t.Fatal(err)
		}
		u16 := filepath.Join(dir, "u16.safetensors")
		os.WriteFile(u16, rawFile(`{"small":{"dtype":"U16","shape":[3],"data_offsets":[0,6]},"x":{"dtype":"U8","shape":[1],"data_offsets":[6,7]}}`, 7), 0o644)
		for _, src := range []string{kiln, u16, "testdata/fixture.safetensors", "testdata/torch_names.safetensors"} {
			t.Run(filepath.Base(src), func(t *testing.T) {
				in, err := store.OpenSafetensors(src)
				if err != nil {
					t.Fatal(err)
				}
				defer in.Close()
				for _, md := range []map[string]string{nil, {"format": "pt", "kiln.step": "7"}} {
					dst := filepath.Join(t.TempDir(), "copy.safetensors")
					if err := in.CopyTo(dst, md); err != nil {
						t.Fatal(err)
					}
					out, err := store.OpenSafetensors(dst)
					if err != nil {
						t.Fatalf("the copy does not open: %v", err)
					}
					if got := out.Metadata(); len(got) != len(md) || got["kiln.step"] != md["kiln.step"] {
						t.Errorf("metadata %v, want %v", got, md)
					}
					if !slices.Equal(out.Names(), in.Names()) {
						t.Errorf("names %v, want %v", out.Names(), in.Names())
					}
					for _, n := range in.Names() {
						a, _ := in.Info(n)
						b, _ := out.Info(n)
						if a.FileDType != b.FileDType || !slices.Equal(a.Shape, b.Shape) || a.Size != b.Size {
							t.Errorf("%s: copied as %+v, was %+v", n, b, a)
						}
						if !a.Supported {
							continue
						}
						tensor.Scope(func() {
							x, err1 := in.Tensor(n, dev)
							y, err2 := out.Tensor(n, dev)
							if err1 != nil || err2 != nil {
								t.Fatalf("%s: %v, %v", n, err1, err2)
							}
							if !bytes.Equal(x.Bytes(), y.Bytes()) {
								t.Errorf("%s: bytes differ in the copy", n)
							}
						})
					}
					out.Close()
				}
			})
		}
	})
}

func TestSafetensorsCopyToErrors(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.safetensors")
	os.WriteFile(src, validFile(t), 0o644)

	in, err := store.OpenSafetensors(src)
	if err != nil {
		t.Fatal(err)
	}
	// The source shrinks after it was opened: the copy fails and leaves
	// nothing behind.
	st, _ := os.Stat(src)
	os.Truncate(src, st.Size()-3)
	dst := filepath.Join(dir, "dst.safetensors")
	if err := in.CopyTo(dst, nil); !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "src.safetensors") {
		t.Errorf("copy of a shrunk file: err = %v, want ErrCorrupt naming the source", err)
	}
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed copy left %s behind (%v)", dst, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("a failed copy left temporary files: %v", entries)
	}

	// Closed files refuse to be read or copied.
	in.Close()
	if err := in.CopyTo(dst, nil); !errors.Is(err, os.ErrClosed) {
		t.Errorf("copy of a closed file: err = %v, want os.ErrClosed", err)
	}
	if _, err := in.Tensor("a", tensor.CPU()); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Tensor of a closed file: err = %v, want os.ErrClosed", err)
	}
	if err := in.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	var zero store.SafetensorsFile
	if err := zero.CopyTo(dst, nil); err == nil || !strings.Contains(err.Error(), "not open") {
		t.Errorf("copy of a zero SafetensorsFile: err = %v", err)
	}
}

// TestOpenCheckpoint reads a checkpoint's description and single tensors
// without loading the rest.
func TestOpenCheckpoint(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		dir := filepath.Join(t.TempDir(), "ckpt")
		want := sampleCheckpoint(dev)
		if err := store.SaveCheckpoint(dir, want); err != nil {
			t.Fatal(err)
		}
		r, err := store.OpenCheckpoint(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		info := r.Info
		if info.Dir != dir || info.Epoch != 3 || info.Step != 700 || info.RNG != want.RNG || info.Version != store.CheckpointVersion || info.Created == "" {
			t.Errorf("Info = %+v", info)
		}
		if info.Metrics["loss"] != 0.25 || len(info.Metrics) != len(want.Metrics) {
			t.Errorf("Metrics = %v", info.Metrics)
		}
		if !jsonEqual(info.Config, want.Config) {
			t.Errorf("Config = %s", info.Config)
		}
		var names []string
		for _, f := range info.Files {
			names = append(names, f.Name)
			if f.Size <= 0 || len(f.SHA256) != 64 {
				t.Errorf("file %+v", f)
			}
		}
		if !slices.Equal(names, []string{"model.safetensors", "optimizer.safetensors", "state.json"}) {
			t.Errorf("Files = %v", names)
		}
		if got := len(r.Model.Names()); got != len(want.Model) {
			t.Errorf("model holds %d tensors, want %d", got, len(want.Model))
		}
		w, err := r.Model.Tensor("l1.weight", dev)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w.Bytes(), want.Model["l1.weight"].Bytes()) {
			t.Error("l1.weight differs")
		}
		if _, err := r.Optimizer.Tensor("l1.weight.exp_avg", dev); err != nil {
			t.Error(err)
		}
	})
}
