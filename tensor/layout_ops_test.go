package tensor_test

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// fixtureOp applies one op of testdata/index.json to the case's inputs
// (built on the device under test) and returns its outputs.
type fixtureOp func(in map[string]*tensor.Tensor) []*tensor.Tensor

func one(t *tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{t} }

// layoutFixtureOps are the layout cases of gen_index.py, by case name.
var layoutFixtureOps = map[string]fixtureOp{
	"flatten_all": func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Flatten(0, -1)) },
	"flatten_mid": func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Flatten(1, 2)) },
	"flatten_neg": func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Flatten(-2, -1)) },
	"flatten_permuted": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(in["x"].Permute(2, 0, 1).Flatten(1, 2))
	},
	"flatten_permuted_mergeable": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(in["x"].Permute(2, 0, 1).Flatten(0, 0))
	},
	"flatten_scalar": func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Flatten(0, -1)) },
	"unflatten":      func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Unflatten(1, 3, -1)) },

	"repeat_more_dims":  func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Repeat(2, 1, 2)) },
	"repeat_same_rank":  func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Repeat(3, 2)) },
	"repeat_zero":       func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Repeat(0, 2)) },
	"repeat_transposed": func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].T().Repeat(2, 2)) },
	"repeat_int":        func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Repeat(1, 3)) },

	"flip_0_2": func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Flip(0, 2)) },
	"flip_neg": func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Flip(-1)) },
	"flip_all": func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Flip()) },
	"flip_sliced": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(in["x"].Slice(1, 1, math.MaxInt, 1).Slice(2, math.MinInt, math.MaxInt, 2).Flip(1))
	},

	"roll_0":          func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Roll(1, 0)) },
	"roll_neg_wrap":   func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Roll(-5, 1)) },
	"roll_transposed": func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].T().Roll(2, 0)) },
	"roll_chain":      func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Roll(1, 0).Roll(-2, 1)) },
	"roll_flat": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		x := in["x"]
		return one(x.Flatten(0, -1).Roll(3, 0).Reshape(x.Shape()...))
	},

	"narrow":                func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Narrow(1, 1, 3)) },
	"narrow_neg_start":      func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Narrow(0, -2, 2)) },
	"narrow_empty":          func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Narrow(1, 5, 0)) },
	"slice_step":            func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Slice(0, 2, 8, 2)) },
	"slice_neg_start":       func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Slice(0, -3, math.MaxInt, 1)) },
	"slice_neg_end_step":    func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Slice(0, math.MinInt, -2, 3)) },
	"slice_clamped_empty":   func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Slice(0, 100, 200, 1)) },
	"slice_backwards_empty": func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Slice(0, 7, 3, 1)) },
	"slice_reverse": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(in["x"].Slice(0, math.MaxInt, math.MinInt, -1))
	},
	"slice_neg_step":      func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Slice(0, 8, 2, -2)) },
	"slice_neg_both":      func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Slice(0, -1, -4, -1)) },
	"slice_neg_clamped":   func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Slice(0, 50, -50, -3)) },
	"slice_dim1":          func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Slice(1, 1, math.MaxInt, 2)) },
	"slice_dim1_neg_step": func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Slice(-1, 4, math.MinInt, -2)) },
	"slice_transposed":    func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].T().Slice(0, 1, 5, 3)) },
	"select":              func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Select(1, -1)) },
	"select_0":            func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Select(0, 2)) },
	"unbind":              func(in map[string]*tensor.Tensor) []*tensor.Tensor { return in["x"].Unbind(1) },

	"chunk_uneven":           func(in map[string]*tensor.Tensor) []*tensor.Tensor { return in["x"].Chunk(3, 0) },
	"chunk_fewer":            func(in map[string]*tensor.Tensor) []*tensor.Tensor { return in["x"].Chunk(4, -1) },
	"split_sizes":            func(in map[string]*tensor.Tensor) []*tensor.Tensor { return in["x"].Split([]int{1, 2, 3}, 0) },
	"split_every":            func(in map[string]*tensor.Tensor) []*tensor.Tensor { return in["x"].SplitEvery(3, 0) },
	"chunk_empty_dim":        func(in map[string]*tensor.Tensor) []*tensor.Tensor { return in["x"].Chunk(3, 0) },
	"split_every_empty_dim":  func(in map[string]*tensor.Tensor) []*tensor.Tensor { return in["x"].SplitEvery(2, 0) },
	"split_every_zero_piece": func(in map[string]*tensor.Tensor) []*tensor.Tensor { return in["x"].Split([]int{7, 0}, 0) },

	"cat_0": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(tensor.Cat([]*tensor.Tensor{in["a"], in["b"]}, 0))
	},
	"cat_neg": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(tensor.Cat([]*tensor.Tensor{in["a"], in["b"], in["c"]}, -1))
	},
	"cat_promote": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(tensor.Cat([]*tensor.Tensor{in["a"], in["b"]}, 1))
	},
	"cat_transposed": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(tensor.Cat([]*tensor.Tensor{in["a"].T(), in["b"]}, 1))
	},
	"cat_legacy_empty": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(tensor.Cat([]*tensor.Tensor{in["a"], in["b"], in["a"]}, 0))
	},
	"stack_0": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(tensor.Stack([]*tensor.Tensor{in["a"], in["b"], in["c"]}, 0))
	},
	"stack_1": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(tensor.Stack([]*tensor.Tensor{in["a"], in["b"], in["c"]}, 1))
	},
	"stack_neg": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(tensor.Stack([]*tensor.Tensor{in["a"], in["b"], in["c"]}, -1))
	},
	"stack_promote": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(tensor.Stack([]*tensor.Tensor{in["a"], in["b"]}, 0))
	},

	"pad_constant": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(in["x"].Pad([]int{1, 2}, "constant", 0.5))
	},
	"pad_constant_2d": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(in["x"].Pad([]int{1, 1, 2, 0}, "constant", 0))
	},
	"pad_constant_crop": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(in["x"].Pad([]int{-1, 2, 0, -2}, "constant", -1))
	},
	"pad_constant_all_dims": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(in["x"].Pad([]int{0, 1, 1, 0, 1, 1}, "constant", 3))
	},
	"pad_reflect": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(in["x"].Pad([]int{2, 3}, "reflect", 0))
	},
	"pad_reflect_crop": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(in["x"].Pad([]int{-1, 2}, "reflect", 0))
	},
	"pad_reflect_2d": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(in["x"].Pad([]int{1, 2, 3, 1}, "reflect", 0))
	},
	"pad_replicate": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(in["x"].Pad([]int{2, 3}, "replicate", 0))
	},
	"pad_replicate_2d": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(in["x"].Pad([]int{1, 2, 2, 1}, "replicate", 0))
	},
	"pad_circular": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(in["x"].Pad([]int{1, 3}, "circular", 0))
	},
	"pad_reflect_any_rank": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(in["x"].Pad([]int{2, 1, 1, 2}, "reflect", 0))
	},
	"pad_edge_any_rank": func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Pad([]int{3, 2}, "edge", 0)) },
}

// runFixtureOps checks every case of ops against testdata/index.json.
func runFixtureOps(t *testing.T, ops map[string]fixtureOp) {
	fixtures := loadFixtures(t, "index.json")
	names := make([]string, 0, len(ops))
	for name := range ops {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c, ok := fixtures[name]
		if !ok {
			t.Errorf("%s: no such case in index.json (regenerate with /usr/bin/python3 testdata/gen_index.py)", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				in := map[string]*tensor.Tensor{}
				for k, v := range c {
					if !strings.HasPrefix(k, "out") && k != "count" {
						in[k] = v.Tensor(dev)
					}
				}
				got := ops[name](in)
				if want, ok := c["out"]; ok {
					if len(got) != 1 {
						t.Fatalf("%d outputs, want 1", len(got))
					}
					assertFixtureDType(t, "out", got[0], want)
					assertClose(t, "out", got[0], want, 1e-6, 1e-6)
					return
				}
				n := int(c["count"].Float64s()[0])
				if len(got) != n {
					t.Fatalf("%d outputs, want %d", len(got), n)
				}
				for i, g := range got {
					what := fmt.Sprintf("out%d", i)
					assertClose(t, what, g, c[what], 1e-6, 1e-6)
				}
			})
		})
	}
}

// assertFixtureDType checks the dtype of an output against PyTorch's.
func assertFixtureDType(t *testing.T, what string, got *tensor.Tensor, want fixtureTensor) {
	t.Helper()
	if got.DType().String() != want.DType {
		t.Errorf("%s: dtype %s, want %s", what, got.DType(), want.DType)
	}
}

func TestLayoutOpsMatchPyTorch(t *testing.T) { runFixtureOps(t, layoutFixtureOps) }

// TestIndexFixturesAllUsed makes sure no case of index.json goes unchecked.
func TestIndexFixturesAllUsed(t *testing.T) {
	for name := range loadFixtures(t, "index.json") {
		if layoutFixtureOps[name] == nil && indexingFixtureOps[name] == nil {
			t.Errorf("fixture case %s has no Go op", name)
		}
	}
}

// rnd1 returns one random Float64 input of shape.
func rnd1(shape ...int) func(dev tensor.Device) []*tensor.Tensor {
	return func(dev tensor.Device) []*tensor.Tensor {
		return []*tensor.Tensor{randFloat64(dev, 1, -1, 1, shape...)}
	}
}

// catAll joins the flattened pieces, weighting each differently so the
// check sees which piece a gradient came from.
func catAll(ps []*tensor.Tensor) *tensor.Tensor {
	flat := make([]*tensor.Tensor, len(ps))
	for i, p := range ps {
		flat[i] = p.Flatten(0, -1).MulScalar(float64(i + 1))
	}
	return tensor.Cat(flat, 0)
}

func TestLayoutOpsGradients(t *testing.T) {
	cases := []gradCase{
		{"flatten view", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Flatten(1, 2) }, rnd1(2, 3, 4)},
		{"flatten of permuted copies", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Permute(2, 0, 1).Flatten(1, 2) }, rnd1(3, 4, 2)},
		{"flatten of sliced view", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Narrow(0, 1, 2).Flatten(0, 1) }, rnd1(4, 3, 2)},
		{"unflatten", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Unflatten(0, 2, 3).Tanh() }, rnd1(4, 6)},
		{"repeat more dims", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Repeat(2, 1, 3) }, rnd1(2, 3)},
		{"repeat transposed", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Repeat(2, 2) }, rnd1(2, 3)},
		{"repeat of expanded", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Expand(3, 2).Repeat(1, 2) }, rnd1(1, 2)},
		{"repeat zero count", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Repeat(0, 2) }, rnd1(2, 3)},
		{"repeat 0-d", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Repeat(3) }, rnd1()},
		{"flatten 0-d", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Flatten(0, -1) }, rnd1()},
		{"flip", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Flip(0, 2) }, rnd1(2, 3, 4)},
		{"flip then tanh", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Flip(1).Tanh() }, rnd1(3, 4)},
		{"flip then matmul", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Flip(0).Matmul(in[1].Flip(1)) },
			func(d tensor.Device) []*tensor.Tensor {
				return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 3, 4), randFloat64(d, 2, -1, 1, 4, 2)}
			}},
		{"roll", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Roll(-5, 1) }, rnd1(3, 4)},
		{"roll transposed", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Roll(2, 0) }, rnd1(3, 4)},
		{"narrow", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Narrow(1, 1, 3) }, rnd1(4, 5)},
		{"narrow of transposed", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Narrow(0, -2, 2) }, rnd1(4, 5)},
		{"slice step", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Slice(0, 1, 9, 3) }, rnd1(10, 2)},
		{"slice negative step", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Slice(1, 4, math.MinInt, -2) }, rnd1(3, 6)},
		{"slice of slice", func(in []*tensor.Tensor) *tensor.Tensor {
			return in[0].Slice(0, math.MaxInt, math.MinInt, -1).Slice(0, 1, math.MaxInt, 2)
		}, rnd1(7)},
		{"slice empty", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Slice(0, 7, 3, 1) }, rnd1(10)},
		{"select", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Select(1, -1) }, rnd1(3, 4)},
		{"select of transposed", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Select(0, 2) }, rnd1(3, 4)},
		{"unbind", func(in []*tensor.Tensor) *tensor.Tensor { return catAll(in[0].Unbind(1)) }, rnd1(3, 4)},
		{"chunk", func(in []*tensor.Tensor) *tensor.Tensor { return catAll(in[0].Chunk(3, 0)) }, rnd1(5, 2)},
		{"split sizes", func(in []*tensor.Tensor) *tensor.Tensor { return catAll(in[0].T().Split([]int{1, 2, 3}, 0)) }, rnd1(3, 6)},
		{"split every, pieces used twice", func(in []*tensor.Tensor) *tensor.Tensor {
			ps := in[0].SplitEvery(3, 0)
			return catAll([]*tensor.Tensor{ps[2], ps[0], ps[0].Mul(ps[1])})
		}, rnd1(7, 2)},
		{"cat three with transposed", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.Cat([]*tensor.Tensor{in[0].T(), in[1], in[2]}, 1)
		}, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 3, 2), randFloat64(d, 2, -1, 1, 2, 2), randFloat64(d, 3, -1, 1, 2, 1)}
		}},
		{"cat expanded, same input twice", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.Cat([]*tensor.Tensor{in[0].Expand(2, 3), in[1], in[1]}, 0)
		}, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 1, 3), randFloat64(d, 2, -1, 1, 1, 3)}
		}},
		{"stack", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.Stack([]*tensor.Tensor{in[0], in[1].T(), in[0]}, -1)
		}, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 2, 3), randFloat64(d, 2, -1, 1, 3, 2)}
		}},
		{"pad constant", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Pad([]int{1, 2}, "constant", 0.5) }, rnd1(2, 3)},
		{"pad constant crop", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Pad([]int{-1, 2, 0, -2}, "constant", 1) }, rnd1(2, 3, 4)},
		{"pad reflect", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Pad([]int{2, 3}, "reflect", 0) }, rnd1(1, 2, 4)},
		{"pad reflect crop", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Pad([]int{-1, 2}, "reflect", 0) }, rnd1(2, 4)},
		{"pad reflect 2d transposed", func(in []*tensor.Tensor) *tensor.Tensor {
			return in[0].Transpose(-1, -2).Pad([]int{1, 2, 3, 1}, "reflect", 0)
		}, rnd1(1, 5, 4)},
		{"pad replicate", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Pad([]int{2, 3}, "replicate", 0) }, rnd1(2, 3)},
		{"pad edge 2d", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Pad([]int{1, 2, 2, 1}, "edge", 0) }, rnd1(3, 4)},
		{"pad circular", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Pad([]int{1, 3}, "circular", 0) }, rnd1(2, 4)},
	}
	runGradCases(t, cases)
}

// TestLayoutViewsShareStorage checks that the view ops allocate nothing.
func TestLayoutViewsShareStorage(t *testing.T) {
	views := map[string]func(x *tensor.Tensor) []*tensor.Tensor{
		"Flatten":          func(x *tensor.Tensor) []*tensor.Tensor { return one(x.Flatten(0, 1)) },
		"Flatten of slice": func(x *tensor.Tensor) []*tensor.Tensor { return one(x.Narrow(0, 1, 2).Flatten(0, 1)) },
		"Unflatten":        func(x *tensor.Tensor) []*tensor.Tensor { return one(x.Unflatten(2, 2, 2)) },
		"Flip":             func(x *tensor.Tensor) []*tensor.Tensor { return one(x.Flip(0, 2)) },
		"Narrow":           func(x *tensor.Tensor) []*tensor.Tensor { return one(x.Narrow(1, 1, 2)) },
		"Slice":            func(x *tensor.Tensor) []*tensor.Tensor { return one(x.Slice(2, 3, math.MinInt, -2)) },
		"Select":           func(x *tensor.Tensor) []*tensor.Tensor { return one(x.Select(0, -1)) },
		"Unbind":           func(x *tensor.Tensor) []*tensor.Tensor { return x.Unbind(1) },
		"Chunk":            func(x *tensor.Tensor) []*tensor.Tensor { return x.Chunk(2, 2) },
		"Split":            func(x *tensor.Tensor) []*tensor.Tensor { return x.Split([]int{1, 2}, 0) },
		"SplitEvery":       func(x *tensor.Tensor) []*tensor.Tensor { return x.SplitEvery(2, 1) },
	}
	for name, f := range views {
		t.Run(name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				x := randFloat64(dev, 1, -1, 1, 3, 3, 4)
				before := dev.MemoryStats().LiveTensors
				outs := f(x)
				if after := dev.MemoryStats().LiveTensors; after != before {
					t.Errorf("%d storages allocated, want none", after-before)
				}
				for _, o := range outs {
					o.Float64s() // reading a view is fine on every backend
				}
			})
		})
	}
}

// TestNegativeStrideViewsInKernels feeds flipped views (negative strides)
// to the kernels every backend must run on any view, and compares with
// the same computation on a contiguous copy.
func TestNegativeStrideViewsInKernels(t *testing.T) {
	ops := map[string]func(x *tensor.Tensor) *tensor.Tensor{
		"copy":    func(x *tensor.Tensor) *tensor.Tensor { return x.Contiguous() },
		"reshape": func(x *tensor.Tensor) *tensor.Tensor { return x.Reshape(-1) },
		"unary":   func(x *tensor.Tensor) *tensor.Tensor { return x.Exp() },
		"binary":  func(x *tensor.Tensor) *tensor.Tensor { return x.Add(x.Select(0, 0)) },
		"sum":     func(x *tensor.Tensor) *tensor.Tensor { return x.Sum(1) },
		"matmul":  func(x *tensor.Tensor) *tensor.Tensor { return x.Matmul(x.T()) },
		"cast":    func(x *tensor.Tensor) *tensor.Tensor { return x.To(tensor.Float32) },
		"gather": func(x *tensor.Tensor) *tensor.Tensor {
			return x.IndexSelect(1, tensor.FromInt64s(x.Device(), []int64{2, 0}))
		},
		"pad":       func(x *tensor.Tensor) *tensor.Tensor { return x.Pad([]int{1, 1}, "reflect", 0) },
		"cat":       func(x *tensor.Tensor) *tensor.Tensor { return tensor.Cat([]*tensor.Tensor{x, x}, 1) },
		"roll":      func(x *tensor.Tensor) *tensor.Tensor { return x.Roll(1, 1) },
		"repeat":    func(x *tensor.Tensor) *tensor.Tensor { return x.Repeat(2, 1) },
		"narrowing": func(x *tensor.Tensor) *tensor.Tensor { return x.Narrow(1, 1, 2).Contiguous() },
	}
	for name, f := range ops {
		t.Run(name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				x := randFloat64(dev, 3, -1, 1, 3, 4)
				flipped := x.Flip(0, 1)
				want := f(flipped.Contiguous()).Float64s()
				got := f(flipped)
				assertValues(t, name, got, got.Shape(), want, 1e-12, 1e-12)
			})
		})
	}
	t.Run("where", func(t *testing.T) {
		forEachDevice(t, func(t *testing.T, dev tensor.Device) {
			x := randFloat64(dev, 3, -1, 1, 3, 4)
			mask := tensor.FromBools(dev, []bool{true, false, false, true}, 4).Flip()
			want := x.Flip(0).Contiguous().MaskedFill(mask.Contiguous(), 9).Float64s()
			got := x.Flip(0).MaskedFill(mask, 9)
			assertValues(t, "where", got, got.Shape(), want, 0, 0)
		})
	})
}

// errCase is one call that must panic with a *tensor.Error of kind.
type errCase struct {
	name string
	kind error
	op   string // the op the message must name, e.g. "tensor.Cat"
	call func(dev tensor.Device)
}

func runErrCases(t *testing.T, cases []errCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				err := tensor.Try(func() { c.call(dev) })
				if err == nil {
					t.Fatalf("no error, want %v", c.kind)
				}
				if !errors.Is(err, c.kind) {
					t.Errorf("error %q is not %v", err, c.kind)
				}
				if !strings.HasPrefix(err.Error(), c.op+":") {
					t.Errorf("error %q does not name %s", err, c.op)
				}
			})
		})
	}
}

func TestLayoutOpsBadInput(t *testing.T) {
	x := func(dev tensor.Device) *tensor.Tensor { return tensor.Zeros(dev, 2, 3) }
	cases := []errCase{
		{"flatten start after end", tensor.ErrArgument, "tensor.Flatten", func(d tensor.Device) { x(d).Flatten(1, 0) }},
		{"flatten dim out of range", tensor.ErrArgument, "tensor.Flatten", func(d tensor.Device) { x(d).Flatten(0, 2) }},
		{"unflatten wrong sizes", tensor.ErrShape, "tensor.Unflatten", func(d tensor.Device) { x(d).Unflatten(1, 2, 2) }},
		{"repeat too few counts", tensor.ErrArgument, "tensor.Repeat", func(d tensor.Device) { x(d).Repeat(2) }},
		{"repeat negative count", tensor.ErrArgument, "tensor.Repeat", func(d tensor.Device) { x(d).Repeat(2, -1) }},
		{"flip repeated dim", tensor.ErrArgument, "tensor.Flip", func(d tensor.Device) { x(d).Flip(1, -1) }},
		{"flip dim out of range", tensor.ErrArgument, "tensor.Flip", func(d tensor.Device) { x(d).Flip(2) }},
		{"roll dim out of range", tensor.ErrArgument, "tensor.Roll", func(d tensor.Device) { x(d).Roll(1, -3) }},
		{"narrow past the end", tensor.ErrArgument, "tensor.Narrow", func(d tensor.Device) { x(d).Narrow(1, 2, 2) }},
		{"narrow negative length", tensor.ErrArgument, "tensor.Narrow", func(d tensor.Device) { x(d).Narrow(1, 0, -1) }},
		{"narrow start before the beginning", tensor.ErrArgument, "tensor.Narrow", func(d tensor.Device) { x(d).Narrow(1, -4, 1) }},
		{"slice zero step", tensor.ErrArgument, "tensor.Slice", func(d tensor.Device) { x(d).Slice(0, 0, 2, 0) }},
		{"slice dim out of range", tensor.ErrArgument, "tensor.Slice", func(d tensor.Device) { x(d).Slice(2, 0, 2, 1) }},
		{"select index out of range", tensor.ErrArgument, "tensor.Select", func(d tensor.Device) { x(d).Select(1, 3) }},
		{"select negative index out of range", tensor.ErrArgument, "tensor.Select", func(d tensor.Device) { x(d).Select(0, -3) }},
		{"chunk zero pieces", tensor.ErrArgument, "tensor.Chunk", func(d tensor.Device) { x(d).Chunk(0, 0) }},
		{"split sizes wrong total", tensor.ErrShape, "tensor.Split", func(d tensor.Device) { x(d).Split([]int{1, 1}, 1) }},
		{"split negative size", tensor.ErrArgument, "tensor.Split", func(d tensor.Device) { x(d).Split([]int{4, -1}, 1) }},
		{"split every zero", tensor.ErrArgument, "tensor.SplitEvery", func(d tensor.Device) { x(d).SplitEvery(0, 1) }},
		{"cat nothing", tensor.ErrArgument, "tensor.Cat", func(d tensor.Device) { tensor.Cat(nil, 0) }},
		{"cat mismatched shapes", tensor.ErrShape, "tensor.Cat", func(d tensor.Device) {
			tensor.Cat([]*tensor.Tensor{x(d), tensor.Zeros(d, 3, 3)}, 1)
		}},
		{"cat mismatched ranks", tensor.ErrShape, "tensor.Cat", func(d tensor.Device) {
			tensor.Cat([]*tensor.Tensor{x(d), tensor.Zeros(d, 2, 3, 1)}, 0)
		}},
		{"cat dim out of range", tensor.ErrArgument, "tensor.Cat", func(d tensor.Device) { tensor.Cat([]*tensor.Tensor{x(d), x(d)}, 2) }},
		{"cat 0-d", tensor.ErrShape, "tensor.Cat", func(d tensor.Device) {
			tensor.Cat([]*tensor.Tensor{tensor.Scalar(d, 1), tensor.Scalar(d, 2)}, 0)
		}},
		{"cat across devices", tensor.ErrDevice, "tensor.Cat", func(d tensor.Device) {
			other := tensor.MustDevice("strict")
			if d.Kind() == "strict" {
				other = tensor.CPU()
			}
			tensor.Cat([]*tensor.Tensor{x(d), x(other)}, 0)
		}},
		{"cat released input", tensor.ErrReleased, "tensor.Cat", func(d tensor.Device) {
			r := x(d)
			r.Release()
			tensor.Cat([]*tensor.Tensor{x(d), r}, 0)
		}},
		{"stack nothing", tensor.ErrArgument, "tensor.Stack", func(d tensor.Device) { tensor.Stack(nil, 0) }},
		{"stack mismatched shapes", tensor.ErrShape, "tensor.Stack", func(d tensor.Device) {
			tensor.Stack([]*tensor.Tensor{x(d), tensor.Zeros(d, 3, 2)}, 0)
		}},
		{"stack dim out of range", tensor.ErrArgument, "tensor.Stack", func(d tensor.Device) { tensor.Stack([]*tensor.Tensor{x(d)}, 3) }},
		{"pad odd count", tensor.ErrArgument, "tensor.Pad", func(d tensor.Device) {
			//lint:ignore SA5012 an odd pad count is the bad input under test
			x(d).Pad([]int{1, 2, 3}, "constant", 0)
		}},
		{"pad too many dims", tensor.ErrArgument, "tensor.Pad", func(d tensor.Device) { x(d).Pad([]int{1, 1, 1, 1, 1, 1}, "constant", 0) }},
		{"pad unknown mode", tensor.ErrArgument, "tensor.Pad", func(d tensor.Device) { x(d).Pad([]int{1, 1}, "mirror", 0) }},
		{"pad reflect as wide as dim", tensor.ErrArgument, "tensor.Pad", func(d tensor.Device) { x(d).Pad([]int{3, 0}, "reflect", 0) }},
		{"pad circular wider than dim", tensor.ErrArgument, "tensor.Pad", func(d tensor.Device) { x(d).Pad([]int{0, 4}, "circular", 0) }},
		{"pad replicate empty dim", tensor.ErrArgument, "tensor.Pad", func(d tensor.Device) {
			tensor.Zeros(d, 2, 0).Pad([]int{1, 1}, "replicate", 0)
		}},
		{"pad crops below zero", tensor.ErrShape, "tensor.Pad", func(d tensor.Device) { x(d).Pad([]int{-2, -2}, "constant", 0) }},
	}
	runErrCases(t, cases)
}
