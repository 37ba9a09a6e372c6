package store_test

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
)

// torchNet is the Kiln equivalent of Net in testdata/gen_torch_names.py,
// with its own field names: the PyTorch model's features.0/1/3 are Conv1,
// BN1 and Conv2, its classifier is Head, and its proj (a GPT-2-style
// Conv1D holding its weight [in, out]) is the Linear Proj.
type torchNet struct {
	Conv1 *nn.Conv2d
	BN1   *nn.BatchNorm2d
	Conv2 *nn.Conv2d
	Head  *nn.Linear
	Proj  *nn.Linear
}

func newTorchNet(dev tensor.Device) *torchNet {
	return &torchNet{
		Conv1: nn.NewConv2d(dev, 2, 4, 3, nn.ConvConfig{Padding: []int{1, 1}}),
		BN1:   nn.NewBatchNorm2d(dev, 4),
		Conv2: nn.NewConv2d(dev, 4, 3, 3, nn.ConvConfig{Stride: []int{2, 2}}),
		Head:  nn.NewLinear(dev, 12, 5),
		Proj:  nn.NewLinear(dev, 5, 2),
	}
}

func (n *torchNet) Forward(x *tensor.Tensor) *tensor.Tensor {
	h := n.Conv2.Forward(n.BN1.Forward(n.Conv1.Forward(x)).Relu())
	return n.Proj.Forward(n.Head.Forward(h.Flatten(1, -1)).Tanh())
}

// torchMap maps the DataParallel-wrapped PyTorch Net onto torchNet.
var torchMap = store.NameMap{
	Rules: []store.NameRule{
		{From: "module."},
		{From: "features.0.", To: "Conv1."},
		{From: "features.1.", To: "BN1."},
		{From: "features.3.", To: "Conv2."},
		{From: "classifier.", To: "Head."},
		{From: "proj.", To: "Proj."},
	},
	Transpose: []string{`^Proj\.weight$`},
}

// TestNameMapLoadsTorchModel loads the state dict PyTorch saved (renamed
// keys, a transposed weight, BatchNorm statistics) into the Kiln model and
// compares its output with PyTorch's.
func TestNameMapLoadsTorchModel(t *testing.T) {
	fx := testutil.LoadFixtures(t, "torch_names.json")["forward"]
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m := newTorchNet(dev)
		if err := torchMap.Load(m, "testdata/torch_names.safetensors"); err != nil {
			t.Fatal(err)
		}
		nn.Eval(m)
		testutil.AssertClose(t, "output", m.Forward(fx["x"].Tensor(dev)), fx["y"], 1e-5, 1e-5)

		// Without the transpose, the one mis-laid weight is named.
		noT := torchMap
		noT.Transpose = nil
		err := noT.Load(newTorchNet(dev), "testdata/torch_names.safetensors")
		if !errors.Is(err, nn.ErrStateDict) || !strings.Contains(err.Error(), "module.proj.weight (as Proj.weight): shape [5 2], model has [2 5]") {
			t.Errorf("load without the transpose: err = %v, want the shape of module.proj.weight named", err)
		}
		// Without the rules every key is unexpected and every parameter missing.
		err = store.LoadModel(newTorchNet(dev), "testdata/torch_names.safetensors")
		if !errors.Is(err, nn.ErrStateDict) || !strings.Contains(err.Error(), "missing keys: BN1.bias, BN1.num_batches_tracked") ||
			!strings.Contains(err.Error(), "unexpected keys: module.classifier.bias, module.classifier.weight") {
			t.Errorf("load without a map: err = %v", err)
		}
	})
}

// TestNameMapSaveLoadedByTorch saves a Kiln model through the map and has
// PyTorch load it into the original module with strict=True; the outputs
// must agree. It runs only where Debian's /usr/bin/python3 has torch.
func TestNameMapSaveLoadedByTorch(t *testing.T) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import torch").Run(); err != nil {
		t.Skipf("skipping: %s cannot import torch (%v)", python, err)
	}
	dev := tensor.CPU()
	tensor.Scope(func() {
		dev.Seed(5)
		m := newTorchNet(dev)
		// Running statistics that differ from their initial values.
		m.BN1.Forward(m.Conv1.Forward(tensor.Randn(dev, 4, 2, 5, 5)))
		nn.Eval(m)
		dir := t.TempDir()
		weights, input := filepath.Join(dir, "kiln.safetensors"), filepath.Join(dir, "x.safetensors")
		if err := torchMap.Save(m, weights); err != nil {
			t.Fatal(err)
		}
		x := tensor.Randn(dev, 3, 2, 5, 5)
		if err := store.WriteSafetensors(input, map[string]*tensor.Tensor{"x": x}, nil); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(python, "testdata/gen_torch_names.py", "--check", weights, input).Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("torch could not load Kiln's weights strictly: %v\n%s", err, ee.Stderr)
			}
			t.Fatal(err)
		}
		var got struct {
			Shape []int     `json:"shape"`
			Data  []float64 `json:"data"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("parsing torch's output: %v\n%s", err, out)
		}
		want := m.Forward(x)
		testutil.AssertValues(t, "torch's output on Kiln's weights", want, got.Shape, got.Data, 1e-5, 1e-5)
	})
}

func TestNameMapNames(t *testing.T) {
	cases := []struct {
		name      string
		m         store.NameMap
		key, kiln string // key loads as kiln
		file      string // kiln saves as file ("" means key)
	}{
		{"identity", store.NameMap{}, "L1.weight", "L1.weight", ""},
		{"strip a prefix", store.NameMap{Rules: []store.NameRule{{From: "module."}}}, "module.fc.weight", "fc.weight", ""},
		{"prefix rules chain", torchMap, "module.features.1.running_var", "BN1.running_var", ""},
		{"a prefix that does not match", torchMap, "other.weight", "other.weight", "module.other.weight"},
		{"regexp with submatches", store.NameMap{
			Rules:     []store.NameRule{{From: `^layer(\d+)\.`, To: "Layers.$1.", Regexp: true}},
			SaveRules: []store.NameRule{{From: `^Layers\.(\d+)\.`, To: "layer$1.", Regexp: true}},
		}, "layer12.weight", "Layers.12.weight", ""},
		{"regexp replaces every match", store.NameMap{
			Rules:     []store.NameRule{{From: `_`, To: ".", Regexp: true}},
			SaveRules: []store.NameRule{{From: `\.`, To: "_", Regexp: true}},
		}, "a_b_c", "a.b.c", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.m.KilnName(tc.key)
			if err != nil || got != tc.kiln {
				t.Errorf("KilnName(%q) = %q, %v; want %q", tc.key, got, err, tc.kiln)
			}
			want := tc.file
			if want == "" {
				want = tc.key
			}
			back, err := tc.m.FileName(tc.kiln)
			if err != nil || back != want {
				t.Errorf("FileName(%q) = %q, %v; want %q", tc.kiln, back, err, want)
			}
		})
	}
}

func TestNameMapErrors(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		dir := t.TempDir()
		// A file in the PyTorch net's layout, saved through the map.
		src := newTorchNet(dev)
		torchFile := filepath.Join(dir, "torch.safetensors")
		if err := torchMap.Save(src, torchFile); err != nil {
			t.Fatal(err)
		}
		kilnFile := filepath.Join(dir, "kiln.safetensors")
		if err := store.SaveModel(src, kilnFile); err != nil {
			t.Fatal(err)
		}
		with := func(edit func(m *store.NameMap)) store.NameMap {
			m := torchMap
			m.Rules = slices.Clone(m.Rules)
			edit(&m)
			return m
		}
		cases := []struct {
			name  string
			m     store.NameMap
			save  bool // Save instead of Load
			path  string
			is    error // nil: any error
			wants []string
		}{
			{"bad rule regexp", with(func(m *store.NameMap) { m.Rules = append(m.Rules, store.NameRule{From: "(", Regexp: true}) }),
				false, torchFile, nil, []string{"rule 6", `"("`}},
			{"bad transpose pattern", with(func(m *store.NameMap) { m.Transpose = []string{"[x"} }),
				false, torchFile, nil, []string{"transpose pattern 0"}},
			{"bad ignore pattern", with(func(m *store.NameMap) { m.Ignore = []string{"*"} }),
				false, torchFile, nil, []string{"ignore pattern 0"}},
			{"dims that are not a permutation", with(func(m *store.NameMap) {
				m.Permute = []store.Permutation{{Pattern: "x", Dims: []int{0, 0}}}
			}), false, torchFile, nil, []string{"not a permutation"}},
			{"transpose of a tensor that is not 2-D", with(func(m *store.NameMap) { m.Transpose = append(m.Transpose, `^Conv1\.weight$`) }),
				false, torchFile, nn.ErrStateDict, []string{"module.features.0.weight (as Conv1.weight): matches transpose pattern", "4 dimensions"}},
			{"permutation of the wrong rank", with(func(m *store.NameMap) {
				m.Permute = []store.Permutation{{Pattern: `^Head\.bias$`, Dims: []int{1, 0}}}
			}), false, torchFile, nn.ErrStateDict, []string{"Head.bias): matches permute pattern", "1 dimensions"}},
			{"two keys mapping to one name", store.NameMap{Rules: []store.NameRule{{From: `^(Conv1|Conv2)\.bias$`, To: "Conv1.bias", Regexp: true}}},
				false, kilnFile, nn.ErrStateDict, []string{"Conv1.bias and Conv2.bias both map to Conv1.bias"}},
			{"a regexp rule cannot be inverted", store.NameMap{Rules: []store.NameRule{{From: "^x", Regexp: true}}},
				true, filepath.Join(dir, "out.safetensors"), nil, []string{"cannot be inverted"}},
			{"two names saving as one key", store.NameMap{SaveRules: []store.NameRule{{From: "Conv2.", To: "Conv1."}}},
				true, filepath.Join(dir, "out.safetensors"), nil, []string{"both map to Conv1."}},
			{"a name that does not load back", store.NameMap{Rules: []store.NameRule{{From: "Head.", To: "Proj."}}},
				true, filepath.Join(dir, "out.safetensors"), nil, []string{"loads back as"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				tensor.Scope(func() {
					m := newTorchNet(dev)
					before := stateBytes(m)
					var err error
					if tc.save {
						err = tc.m.Save(m, tc.path)
					} else {
						err = tc.m.Load(m, tc.path)
					}
					if err == nil {
						t.Fatal("no error")
					}
					if tc.is != nil && !errors.Is(err, tc.is) {
						t.Errorf("err = %v, want one wrapping %v", err, tc.is)
					}
					for _, w := range tc.wants {
						if !strings.Contains(err.Error(), w) {
							t.Errorf("err = %q, want it to say %q", err, w)
						}
					}
					if !sameState(before, stateBytes(m)) {
						t.Error("a failed load changed the model")
					}
				})
			})
		}
	})
}

// TestNameMapOptions covers Ignore, Permute and ConvertFloats on a round
// trip through a file.
func TestNameMapOptions(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		dir := t.TempDir()
		src := newSmallNet(dev, 20)
		sd := nn.StateDict(src)
		// A file whose L1.weight is stored [in, out] as a 3-D [1, in, out]
		// kernel, with its biases in bfloat16 and a stray extra key.
		file := map[string]*tensor.Tensor{}
		for k, v := range sd {
			file[k] = v
		}
		file["L1.weight"] = sd["L1.weight"].Transpose(0, 1).Reshape(1, 3, 4)
		file["L1.bias"] = sd["L1.bias"].To(tensor.BFloat16)
		file["L1.extra_state"] = tensor.Zeros(dev, 1)
		path := filepath.Join(dir, "odd.safetensors")
		if err := store.WriteSafetensors(path, file, nil); err != nil {
			t.Fatal(err)
		}
		m := store.NameMap{
			Permute:       []store.Permutation{{Pattern: `^L1\.weight$`, Dims: []int{0, 2, 1}}},
			Ignore:        []string{`extra_state$`},
			ConvertFloats: true,
		}
		// L1.weight is [4 3] in Kiln and [1 3 4] in the file: permuting
		// [1 3 4] by (0 2 1) gives [1 4 3], which does not fit.
		if err := m.Load(newSmallNet(dev, 21), path); !errors.Is(err, nn.ErrStateDict) || !strings.Contains(err.Error(), "L1.weight: shape [1 3 4] in the file ([1 4 3] in Kiln's layout), model has [4 3]") {
			t.Errorf("permutation of the wrong shape: err = %v", err)
		}
		file["L1.weight"] = sd["L1.weight"].Transpose(0, 1).Reshape(3, 4)
		m.Permute[0].Dims = []int{1, 0}
		if err := store.WriteSafetensors(path, file, nil); err != nil {
			t.Fatal(err)
		}
		dst := newSmallNet(dev, 22)
		if err := m.Load(dst, path); err != nil {
			t.Fatal(err)
		}
		got := nn.StateDict(dst)
		if !got["L1.weight"].AllClose(sd["L1.weight"], 0, 0) {
			t.Error("L1.weight not permuted back into Kiln's layout")
		}
		if !got["L1.bias"].AllClose(sd["L1.bias"].To(tensor.BFloat16).To(tensor.Float32), 0, 0) || got["L1.bias"].DType() != tensor.Float32 {
			t.Error("L1.bias not converted from bfloat16")
		}
		strict := m
		strict.ConvertFloats = false
		if err := strict.Load(newSmallNet(dev, 23), path); !errors.Is(err, nn.ErrStateDict) || !strings.Contains(err.Error(), "L1.bias: dtype bfloat16, model has float32") {
			t.Errorf("without ConvertFloats: err = %v", err)
		}
		noIgnore := m
		noIgnore.Ignore = nil
		if err := noIgnore.Load(newSmallNet(dev, 23), path); !errors.Is(err, nn.ErrStateDict) || !strings.Contains(err.Error(), "unexpected keys: L1.extra_state") {
			t.Errorf("without Ignore: err = %v", err)
		}

		// Saving applies the inverse permutation.
		out := filepath.Join(dir, "saved.safetensors")
		if err := m.Save(dst, out); err != nil {
			t.Fatal(err)
		}
		f, err := store.OpenSafetensors(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		w, err := f.Tensor("L1.weight", dev)
		if err != nil {
			t.Fatal(err)
		}
		if !w.AllClose(got["L1.weight"].Transpose(0, 1), 0, 0) {
			t.Error("Save did not store L1.weight in the file's layout")
		}
	})
}
