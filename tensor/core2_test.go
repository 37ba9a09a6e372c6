package tensor_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// core2Ops computes each case of testdata/core2.json (written by
// testdata/gen_core2.py) from the case's inputs, by case name prefix.
var core2Ops = map[string]func(in map[string]*tensor.Tensor) *tensor.Tensor{
	"and_":         func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].And(in["b"]) },
	"or_":          func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].Or(in["b"]) },
	"xor_":         func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].Xor(in["b"]) },
	"not_":         func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].Not() },
	"sub_":         func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["x"].Sub(in["y"]) },
	"divscalar_":   func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["x"].DivScalar(-2.5) },
	"mean_all_":    func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["x"].Mean() },
	"mean_dims_":   func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["x"].Mean(0, -1) },
	"meankeep_":    func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["x"].MeanKeep(1) },
	"meanempty_":   func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["x"].Mean(0) },
	"sumkeep_":     func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["x"].SumKeep(-1, 0) },
	"squeeze_all_": func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["x"].Squeeze() },
	"squeeze_f":    func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["x"].Squeeze(1) },
	"rmsnorm_":     func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["x"].RMSNorm([]int{8}, in["w"], 1e-6) },
	"ifftn_ortho":  func(in map[string]*tensor.Tensor) *tensor.Tensor { return tensor.IFFTN(in["z"], []int{0, 1}, "ortho") },
	"ifftn_backward": func(in map[string]*tensor.Tensor) *tensor.Tensor {
		return tensor.IFFTN(in["z"], []int{0, 1}, "backward")
	},
	"zeroslike_": func(in map[string]*tensor.Tensor) *tensor.Tensor { return tensor.ZerosLike(in["x"]) },
	"fulllike_":  func(in map[string]*tensor.Tensor) *tensor.Tensor { return tensor.FullLike(in["x"], 7) },
}

// TestCore2Fixtures checks the ops no other fixture file covers against
// PyTorch 1.13 (testdata/core2.json) on every test device: values, dtypes
// and, where the case holds them, the gradients of the output's sum.
// Every case of the file must be checked.
func TestCore2Fixtures(t *testing.T) {
	cases := loadFixtures(t, "core2.json")
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		var op func(map[string]*tensor.Tensor) *tensor.Tensor
		longest := 0
		for prefix, f := range core2Ops {
			if strings.HasPrefix(name, prefix) && len(prefix) > longest {
				op, longest = f, len(prefix)
			}
		}
		if op == nil {
			t.Errorf("fixture %s is not checked (no op for it in core2Ops)", name)
			continue
		}
		c := cases[name]
		t.Run(name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				adev := dev.Autodiff()
				in := map[string]*tensor.Tensor{}
				for k, f := range c {
					if k == "out" || strings.HasPrefix(k, "grad_") {
						continue
					}
					in[k] = f.Tensor(adev)
					if _, wantsGrad := c["grad_"+k]; wantsGrad {
						in[k].RequireGrad()
					}
				}
				out := op(in)
				rtol, atol := 1e-12, 1e-12
				if c["out"].DType == "float32" {
					rtol, atol = 4e-6, 1e-6
				}
				if out.DType().String() != c["out"].DType {
					t.Errorf("dtype %s, want %s", out.DType(), c["out"].DType)
				}
				assertClose(t, "out", out, c["out"], rtol, atol)
				if !out.RequiresGrad() {
					return
				}
				grads := out.Sum().Backward()
				for k, x := range in {
					if want, ok := c["grad_"+k]; ok {
						assertClose(t, "grad_"+k, x.Grad(grads), want, rtol, atol)
					}
				}
			})
		})
	}
}
