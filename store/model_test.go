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
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
)

// smallNet is a model with parameters and buffers of several dtypes.
type smallNet struct {
	L1 *nn.Linear
	BN *nn.BatchNorm1d
	L2 *nn.Linear
}

func newSmallNet(dev tensor.Device, seed uint64) *smallNet {
	dev.Seed(seed)
	return &smallNet{L1: nn.NewLinear(dev, 3, 4), BN: nn.NewBatchNorm1d(dev, 4), L2: nn.NewLinear(dev, 4, 2)}
}

func (m *smallNet) Forward(x *tensor.Tensor) *tensor.Tensor {
	return m.L2.Forward(m.BN.Forward(m.L1.Forward(x)).Relu())
}

// stateBytes snapshots every tensor of a model's state dict.
func stateBytes(m any) map[string][]byte {
	out := map[string][]byte{}
	tensor.Scope(func() {
		for k, v := range nn.StateDict(m) {
			out[k] = v.Bytes()
		}
	})
	return out
}

func sameState(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func TestSaveLoadModelRoundTrip(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		src := newSmallNet(dev, 1)
		// Running statistics that differ from their initial values.
		src.BN.Forward(src.L1.Forward(tensor.Randn(dev, 8, 3)))
		nn.Eval(src)
		path := filepath.Join(t.TempDir(), "net.safetensors")
		if err := store.SaveModel(src, path); err != nil {
			t.Fatal(err)
		}
		f, err := store.OpenSafetensors(path)
		if err != nil {
			t.Fatal(err)
		}
		wantNames := []string{"BN.bias", "BN.num_batches_tracked", "BN.running_mean", "BN.running_var", "BN.weight", "L1.bias", "L1.weight", "L2.bias", "L2.weight"}
		if got := f.Names(); !slices.Equal(got, wantNames) {
			t.Errorf("file names %v, want %v", got, wantNames)
		}
		if md := f.Metadata(); md["format"] != "pt" {
			t.Errorf("metadata %v, want format pt", md)
		}
		f.Close()

		for _, target := range []struct {
			name string
			dev  tensor.Device
		}{{"plain device", dev}, {"autodiff device", dev.Autodiff()}} {
			dst := newSmallNet(target.dev, 2)
			nn.Eval(dst)
			if err := store.LoadModel(dst, path); err != nil {
				t.Fatalf("%s: %v", target.name, err)
			}
			if !sameState(stateBytes(src), stateBytes(dst)) {
				t.Errorf("%s: loaded state differs from the saved one", target.name)
			}
			x := tensor.Randn(dev, 5, 3)
			if !src.Forward(x).AllClose(dst.Forward(x), 0, 0) {
				t.Errorf("%s: loaded model computes another function", target.name)
			}
		}
	})
}

func TestLoadModelFromCheckpoint(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		src := newSmallNet(dev, 3)
		dir := filepath.Join(t.TempDir(), "ckpt")
		if err := store.SaveCheckpoint(dir, store.Checkpoint{Model: nn.StateDict(src), Epoch: 2, Step: 40}); err != nil {
			t.Fatal(err)
		}
		dst := newSmallNet(dev, 4)
		if err := store.LoadModel(dst, dir); err != nil {
			t.Fatal(err)
		}
		if !sameState(stateBytes(src), stateBytes(dst)) {
			t.Error("model loaded from the checkpoint differs from the saved one")
		}

		// A damaged optimizer file fails the whole checkpoint: the manifest is
		// verified before the model is read.
		p := filepath.Join(dir, "optimizer.safetensors")
		b, _ := os.ReadFile(p)
		b[len(b)-1] ^= 1
		if len(b) <= 8 {
			b = append(b, 0)
		}
		os.WriteFile(p, b, 0o644)
		fresh := newSmallNet(dev, 5)
		before := stateBytes(fresh)
		err := store.LoadModel(fresh, dir)
		if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "optimizer.safetensors") {
			t.Errorf("damaged checkpoint: err = %v, want ErrCorrupt naming optimizer.safetensors", err)
		}
		if !sameState(before, stateBytes(fresh)) {
			t.Error("a failed load changed the model")
		}
	})
}

// TestLoadModelMismatch checks that every kind of mismatch is refused,
// that all offending keys are named at once, and that the model is left
// untouched.
func TestLoadModelMismatch(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		good := func() map[string]*tensor.Tensor { return nn.StateDict(newSmallNet(dev, 6)) }
		cases := []struct {
			name  string
			edit  func(sd map[string]*tensor.Tensor)
			wants []string
		}{
			{"missing key", func(sd map[string]*tensor.Tensor) { delete(sd, "L2.bias") },
				[]string{"missing keys: L2.bias"}},
			{"unexpected key", func(sd map[string]*tensor.Tensor) { sd["L3.weight"] = tensor.Zeros(dev, 2) },
				[]string{"unexpected keys: L3.weight"}},
			{"wrong shape", func(sd map[string]*tensor.Tensor) { sd["L1.weight"] = tensor.Zeros(dev, 3, 4) },
				[]string{"L1.weight: shape [3 4], model has [4 3]"}},
			{"wrong float dtype", func(sd map[string]*tensor.Tensor) { sd["L1.bias"] = tensor.Zeros(dev, 4).To(tensor.Float64) },
				[]string{"L1.bias: dtype float64, model has float32"}},
			{"wrong integer dtype", func(sd map[string]*tensor.Tensor) {
				sd["BN.num_batches_tracked"] = tensor.ScalarOf(dev, tensor.Int32, 1)
			}, []string{"BN.num_batches_tracked: dtype int32, model has int64"}},
			{"everything at once", func(sd map[string]*tensor.Tensor) {
				delete(sd, "L2.bias")
				delete(sd, "BN.weight")
				sd["extra"] = tensor.Zeros(dev, 1)
				sd["L2.weight"] = tensor.Zeros(dev, 2, 5)
				sd["L1.bias"] = tensor.Zeros(dev, 4).To(tensor.BFloat16)
			}, []string{"missing keys: BN.weight, L2.bias", "unexpected keys: extra", "L2.weight: shape [2 5], model has [2 4]", "L1.bias: dtype bfloat16, model has float32"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				tensor.Scope(func() { // subtests run on their own goroutines
					sd := good()
					tc.edit(sd)
					path := filepath.Join(t.TempDir(), "bad.safetensors")
					if err := store.WriteSafetensors(path, sd, nil); err != nil {
						t.Fatal(err)
					}
					m := newSmallNet(dev, 7)
					before := stateBytes(m)
					err := store.LoadModel(m, path)
					if !errors.Is(err, nn.ErrStateDict) {
						t.Fatalf("err = %v, want one wrapping nn.ErrStateDict", err)
					}
					for _, w := range append(tc.wants, path) {
						if !strings.Contains(err.Error(), w) {
							t.Errorf("err = %q, want it to say %q", err, w)
						}
					}
					if !sameState(before, stateBytes(m)) {
						t.Error("a refused load changed the model")
					}
				})
			})
		}
	})
}

func TestLoadModelBadFiles(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		dir := t.TempDir()
		good := filepath.Join(dir, "good.safetensors")
		if err := store.SaveModel(newSmallNet(dev, 8), good); err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(good)
		write := func(name string, b []byte) string {
			p := filepath.Join(dir, name)
			os.WriteFile(p, b, 0o644)
			return p
		}
		cases := []struct {
			name string
			path string
			is   error
			says string
		}{
			{"missing file", filepath.Join(dir, "nope.safetensors"), os.ErrNotExist, "nope.safetensors"},
			{"truncated data", write("trunc.safetensors", raw[:len(raw)-5]), store.ErrCorrupt, "trunc.safetensors"},
			{"truncated header", write("head.safetensors", raw[:20]), store.ErrCorrupt, "head.safetensors"},
			{"not safetensors", write("text.safetensors", []byte("hello, this is not a model file")), store.ErrCorrupt, "text.safetensors"},
			{"empty file", write("empty.safetensors", nil), store.ErrCorrupt, "empty.safetensors"},
			{"directory without a manifest", dir, store.ErrCorrupt, "manifest.json"},
			{"unsupported dtype", write("u16.safetensors", rawFile(`{"L1.weight":{"dtype":"U16","shape":[4,3],"data_offsets":[0,24]}}`, 24)), nn.ErrStateDict, "dtype U16, which Kiln cannot hold"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				tensor.Scope(func() {
					m := newSmallNet(dev, 9)
					before := stateBytes(m)
					err := store.LoadModel(m, tc.path)
					if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.says) {
						t.Errorf("err = %v, want one wrapping %v that says %q", err, tc.is, tc.says)
					}
					if !sameState(before, stateBytes(m)) {
						t.Error("a failed load changed the model")
					}
				})
			})
		}
	})
}

func TestSaveModelErrors(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m := newSmallNet(dev, 10)
		if err := store.SaveModel(m, filepath.Join(t.TempDir(), "no", "such", "dir", "m.safetensors")); err == nil || !errors.Is(err, os.ErrNotExist) {
			t.Errorf("save into a missing directory: err = %v, want os.ErrNotExist", err)
		}
		m.L2.Bias.Release()
		if err := store.SaveModel(m, filepath.Join(t.TempDir(), "m.safetensors")); err == nil || !strings.Contains(err.Error(), "released") {
			t.Errorf("save of a released parameter: err = %v, want one saying released", err)
		}
	})
}
