package tensor_test

import (
	"errors"
	"testing"

	"github.com/kiln-ml/kiln/backends/strict"
	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/tensor"
)

// indexingFixtureOps are the indexing cases of gen_index.py, by case name.
var indexingFixtureOps = map[string]fixtureOp{
	"gather_1":           func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Gather(1, in["index"])) },
	"gather_0":           func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Gather(0, in["index"])) },
	"gather_neg_smaller": func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Gather(-1, in["index"])) },
	"gather_3d":          func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Gather(1, in["index"])) },
	"gather_transposed":  func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].T().Gather(1, in["index"])) },
	"gather_empty":       func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Gather(1, in["index"])) },

	"scatter_0": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(in["x"].Scatter(0, in["index"], in["src"]))
	},
	"scatter_1": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(in["x"].Scatter(1, in["index"], in["src"]))
	},
	"scatter_value": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(in["x"].ScatterValue(-1, in["index"], 7.5))
	},
	"scatter_add_dups": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(in["x"].ScatterAdd(0, in["index"], in["src"]))
	},
	"scatter_add_1": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(in["x"].ScatterAdd(1, in["index"], in["src"]))
	},

	"index_select_0":     func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].IndexSelect(0, in["index"])) },
	"index_select_1":     func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].IndexSelect(1, in["index"])) },
	"index_select_empty": func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].IndexSelect(0, in["index"])) },
	"index_select_transposed": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(in["x"].T().IndexSelect(1, in["index"]))
	},
	"index_select_scalar_index": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(in["x"].IndexSelect(1, in["index"]))
	},
	"index_select_int": func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].IndexSelect(0, in["index"])) },

	"masked_fill_broadcast": func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].MaskedFill(in["mask"], -2.5)) },
	"masked_fill_full":      func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].MaskedFill(in["mask"], 1e9)) },
	"masked_fill_grows":     func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].MaskedFill(in["mask"], 0)) },
	"where_broadcast_promote": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(tensor.Where(in["cond"], in["a"], in["b"]))
	},
	"where_int_float": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
		return one(tensor.Where(in["cond"], in["a"], in["b"]))
	},

	"nonzero_2d":    func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Nonzero()) },
	"nonzero_bool":  func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Nonzero()) },
	"nonzero_none":  func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].Nonzero()) },
	"one_hot_5":     func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].OneHot(5)) },
	"one_hot_infer": func(in map[string]*tensor.Tensor) []*tensor.Tensor { return one(in["x"].OneHot(-1)) },
}

func TestIndexingOpsMatchPyTorch(t *testing.T) { runFixtureOps(t, indexingFixtureOps) }

// ints returns an Int64 tensor of shape holding vals.
func ints(dev tensor.Device, vals []int64, shape ...int) *tensor.Tensor {
	return tensor.FromInt64s(dev, vals, shape...).Reshape(shape...)
}

func TestIndexingOpsGradients(t *testing.T) {
	withIndex := func(shape []int, idx []int64, idxShape ...int) func(dev tensor.Device) []*tensor.Tensor {
		return func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -1, 1, shape...), ints(d, idx, idxShape...)}
		}
	}
	withIndexSrc := func(shape []int, idx []int64, idxShape []int, srcShape ...int) func(dev tensor.Device) []*tensor.Tensor {
		return func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -1, 1, shape...), ints(d, idx, idxShape...), randFloat64(d, 2, -1, 1, srcShape...)}
		}
	}
	cases := []gradCase{
		{"gather", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Gather(1, in[1]) },
			withIndex([]int{3, 4}, []int64{0, 3, 1, 1, 2, 0}, 3, 2)},
		{"gather repeats accumulate", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Gather(0, in[1]) },
			withIndex([]int{3, 2}, []int64{2, 0, 2, 0, 2, 2, 1, 0}, 4, 2)},
		{"gather smaller index, negative dim", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Gather(-1, in[1]) },
			withIndex([]int{3, 4}, []int64{3, 0, 2, 2}, 2, 2)},
		{"gather transposed", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Gather(1, in[1]) },
			withIndex([]int{3, 4}, []int64{0, 2, 1, 0}, 4, 1)},
		{"gather int32 index", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Gather(1, in[1].To(tensor.Int32)) },
			withIndex([]int{2, 3}, []int64{2, 0, 1, 1}, 2, 2)},
		{"scatter", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Scatter(0, in[1], in[2]) },
			withIndexSrc([]int{3, 5}, []int64{0, 1, 2, 0, 2, 0, 0, 1}, []int{2, 4}, 2, 5)},
		{"scatter transposed input and src", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Scatter(1, in[1], in[2].T()) },
			withIndexSrc([]int{3, 4}, []int64{2, 0, 1, 2}, []int{4, 1}, 2, 4)},
		{"scatter value", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].ScatterValue(1, in[1], 3) },
			withIndex([]int{3, 4}, []int64{1, 3, 0, 0, 2, 1}, 3, 2)},
		{"scatter add repeats", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].ScatterAdd(0, in[1], in[2]) },
			withIndexSrc([]int{3, 5}, []int64{0, 1, 0, 0, 2, 0, 1, 1, 2, 2}, []int{2, 5}, 2, 5)},
		{"scatter add smaller index", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].ScatterAdd(1, in[1], in[2]) },
			withIndexSrc([]int{3, 5}, []int64{1, 1, 0, 4}, []int{2, 2}, 3, 4)},
		{"index select repeats", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].IndexSelect(0, in[1]) },
			withIndex([]int{4, 3}, []int64{3, 0, 0, 2, 3}, 5)},
		{"index select transposed", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().IndexSelect(1, in[1]) },
			withIndex([]int{4, 3}, []int64{1, 3, 1}, 3)},
		{"index select strided index", func(in []*tensor.Tensor) *tensor.Tensor {
			return in[0].IndexSelect(1, in[1].Slice(0, 3, -10, -1))
		}, withIndex([]int{2, 3}, []int64{0, 2, 1, 2}, 4)},
		{"masked fill broadcast mask", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].MaskedFill(in[1], -2) },
			func(d tensor.Device) []*tensor.Tensor {
				return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 3, 4), tensor.FromBools(d, []bool{true, false, true}, 3, 1)}
			}},
		{"masked fill broadcast input", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().MaskedFill(in[1], 0) },
			func(d tensor.Device) []*tensor.Tensor {
				return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 4, 1), tensor.FromBools(d, []bool{true, false, true, true, false, false, false, true}, 2, 4)}
			}},
		{"where broadcast", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.Where(in[0], in[1], in[2]) },
			func(d tensor.Device) []*tensor.Tensor {
				return []*tensor.Tensor{tensor.FromBools(d, []bool{true, false, true}, 3, 1),
					randFloat64(d, 1, -1, 1, 1, 4), randFloat64(d, 2, -1, 1, 3, 4)}
			}},
		{"where same input, transposed", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.Where(in[0], in[1].T(), in[1].T().Neg())
		}, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{tensor.FromBools(d, []bool{true, false, false, true, true, false}, 3, 2),
				randFloat64(d, 1, -1, 1, 2, 3)}
		}},
	}
	runGradCases(t, cases)
}

func TestIndexingOpsBadInput(t *testing.T) {
	x := func(dev tensor.Device) *tensor.Tensor { return tensor.Zeros(dev, 2, 3) }
	idx := func(dev tensor.Device, shape ...int) *tensor.Tensor {
		return tensor.ZerosOf(dev, tensor.Int64, shape...)
	}
	cases := []errCase{
		{"gather float index", tensor.ErrDType, "tensor.Gather", func(d tensor.Device) { x(d).Gather(1, tensor.Zeros(d, 2, 1)) }},
		{"gather bool index", tensor.ErrDType, "tensor.Gather", func(d tensor.Device) { x(d).Gather(1, tensor.ZerosOf(d, tensor.Bool, 2, 1)) }},
		{"gather index of other rank", tensor.ErrShape, "tensor.Gather", func(d tensor.Device) { x(d).Gather(1, idx(d, 2)) }},
		{"gather index larger off dim", tensor.ErrShape, "tensor.Gather", func(d tensor.Device) { x(d).Gather(1, idx(d, 3, 1)) }},
		{"gather dim out of range", tensor.ErrArgument, "tensor.Gather", func(d tensor.Device) { x(d).Gather(2, idx(d, 2, 1)) }},
		{"gather 0-d input", tensor.ErrShape, "tensor.Gather", func(d tensor.Device) { tensor.Scalar(d, 1).Gather(0, idx(d)) }},
		{"gather across devices", tensor.ErrDevice, "tensor.Gather", func(d tensor.Device) {
			other := tensor.MustDevice("strict")
			if d.Kind() == "strict" {
				other = tensor.CPU()
			}
			x(d).Gather(1, idx(other, 2, 1))
		}},
		{"scatter src of other dtype", tensor.ErrDType, "tensor.Scatter", func(d tensor.Device) {
			x(d).Scatter(1, idx(d, 2, 1), tensor.ZerosOf(d, tensor.Float64, 2, 1))
		}},
		{"scatter index larger than src", tensor.ErrShape, "tensor.Scatter", func(d tensor.Device) {
			x(d).Scatter(1, idx(d, 2, 2), tensor.Zeros(d, 2, 1))
		}},
		{"scatter src of other rank", tensor.ErrShape, "tensor.Scatter", func(d tensor.Device) {
			x(d).Scatter(1, idx(d, 2, 1), tensor.Zeros(d, 2))
		}},
		{"scatter float index", tensor.ErrDType, "tensor.Scatter", func(d tensor.Device) {
			x(d).Scatter(1, tensor.Zeros(d, 2, 1), tensor.Zeros(d, 2, 1))
		}},
		{"scatter add index larger off dim", tensor.ErrShape, "tensor.ScatterAdd", func(d tensor.Device) {
			x(d).ScatterAdd(0, idx(d, 1, 4), tensor.Zeros(d, 2, 4))
		}},
		{"scatter value dim out of range", tensor.ErrArgument, "tensor.ScatterValue", func(d tensor.Device) {
			x(d).ScatterValue(-3, idx(d, 1, 1), 1)
		}},
		{"index select 2-d index", tensor.ErrShape, "tensor.IndexSelect", func(d tensor.Device) { x(d).IndexSelect(0, idx(d, 1, 1)) }},
		{"index select float index", tensor.ErrDType, "tensor.IndexSelect", func(d tensor.Device) { x(d).IndexSelect(0, tensor.Zeros(d, 1)) }},
		{"index select dim out of range", tensor.ErrArgument, "tensor.IndexSelect", func(d tensor.Device) { x(d).IndexSelect(2, idx(d, 1)) }},
		{"where float condition", tensor.ErrDType, "tensor.Where", func(d tensor.Device) { tensor.Where(x(d), x(d), x(d)) }},
		{"where shapes do not broadcast", tensor.ErrShape, "tensor.Where", func(d tensor.Device) {
			tensor.Where(tensor.ZerosOf(d, tensor.Bool, 2, 3), x(d), tensor.Zeros(d, 2))
		}},
		{"masked fill int mask", tensor.ErrDType, "tensor.MaskedFill", func(d tensor.Device) { x(d).MaskedFill(idx(d, 2, 3), 1) }},
		{"masked fill mask does not broadcast", tensor.ErrShape, "tensor.MaskedFill", func(d tensor.Device) {
			x(d).MaskedFill(tensor.ZerosOf(d, tensor.Bool, 2), 1)
		}},
		{"one hot of floats", tensor.ErrDType, "tensor.OneHot", func(d tensor.Device) { x(d).OneHot(3) }},
		{"one hot infer from empty", tensor.ErrArgument, "tensor.OneHot", func(d tensor.Device) { idx(d, 0).OneHot(-1) }},
		{"one hot infer with negative class", tensor.ErrArgument, "tensor.OneHot", func(d tensor.Device) {
			tensor.FromInt64s(d, []int64{1, -1}).OneHot(-1)
		}},
		{"one hot bad class count", tensor.ErrArgument, "tensor.OneHot", func(d tensor.Device) { idx(d, 2).OneHot(-2) }},
		{"nonzero released", tensor.ErrReleased, "tensor.Nonzero", func(d tensor.Device) {
			r := x(d)
			r.Release()
			r.Nonzero()
		}},
	}
	runErrCases(t, cases)
}

// TestIndexOutOfRangeIsDeviceError checks that an index outside its
// dimension is reported as a device failure at the next sync and at host
// reads, as an error rather than a crash.
func TestIndexOutOfRangeIsDeviceError(t *testing.T) {
	cases := []struct {
		name string
		f    func(dev tensor.Device) *tensor.Tensor
	}{
		{"gather index too large", func(d tensor.Device) *tensor.Tensor {
			return tensor.Zeros(d, 2, 3).Gather(1, ints(d, []int64{0, 3}, 2, 1))
		}},
		{"gather index too negative", func(d tensor.Device) *tensor.Tensor {
			return tensor.Zeros(d, 2, 3).Gather(1, ints(d, []int64{-4, 0}, 2, 1))
		}},
		{"scatter index too large", func(d tensor.Device) *tensor.Tensor {
			return tensor.Zeros(d, 2, 3).Scatter(0, ints(d, []int64{2}, 1, 1), tensor.Ones(d, 1, 1))
		}},
		{"scatter add index too large", func(d tensor.Device) *tensor.Tensor {
			return tensor.Zeros(d, 2, 3).ScatterAdd(1, ints(d, []int64{5}, 1, 1), tensor.Ones(d, 1, 1))
		}},
		{"index select index too large", func(d tensor.Device) *tensor.Tensor {
			return tensor.Zeros(d, 4, 3).IndexSelect(0, tensor.FromInt64s(d, []int64{1, 4}))
		}},
		{"one hot class too large", func(d tensor.Device) *tensor.Tensor {
			return tensor.FromInt64s(d, []int64{0, 3}).OneHot(3)
		}},
		{"one hot negative class", func(d tensor.Device) *tensor.Tensor {
			return tensor.FromInt64s(d, []int64{0, -1}).OneHot(3)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, dev := range testutil.FreshDevices(t) {
				var out *tensor.Tensor
				if err := tensor.Try(func() { out = c.f(dev) }); err != nil {
					t.Fatalf("%s: the call failed at once (%v); want a device failure at sync", dev.Info().Name, err)
				}
				err := dev.Sync()
				if !errors.Is(err, tensor.ErrDeviceFailed) {
					t.Errorf("%s: Sync returned %v, want ErrDeviceFailed", dev.Info().Name, err)
				}
				if err := dev.Sync(); err != nil {
					t.Errorf("%s: a failure must be reported once, but the next Sync returned %v", dev.Info().Name, err)
				}
				// Without a Sync in between, the host read is the sync point.
				out = c.f(dev)
				err = tensor.Try(func() { out.Float64s() })
				if !errors.Is(err, tensor.ErrDeviceFailed) {
					t.Errorf("%s: reading the result returned %v, want ErrDeviceFailed", dev.Info().Name, err)
				}
			}
		})
	}
}

// TestIndexSelectDoesNotCopyIndex checks that IndexSelect allocates only
// its output: the index reaches the backend's Gather as a stride-0 view.
func TestIndexSelectDoesNotCopyIndex(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := randFloat64(dev, 1, -1, 1, 5, 8)
		index := tensor.FromInt64s(dev, []int64{4, 0, 4})
		before := dev.MemoryStats().LiveTensors
		out := x.IndexSelect(0, index)
		if n := dev.MemoryStats().LiveTensors - before; n != 1 {
			t.Errorf("%d storages allocated, want 1 (the output)", n)
		}
		assertValues(t, "rows", out.Select(1, 2), []int{3}, []float64{x.Float64s()[4*8+2], x.Float64s()[2], x.Float64s()[4*8+2]}, 0, 0)
	})
}

// TestScatterLeavesInputAlone checks that Scatter and ScatterAdd return new
// tensors and do not modify their input.
func TestScatterLeavesInputAlone(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := tensor.Zeros(dev, 2, 3)
		index := ints(dev, []int64{1, 0}, 1, 2)
		src := tensor.Ones(dev, 1, 2)
		a := x.Scatter(1, index, src)
		b := x.ScatterAdd(1, index, src)
		c := x.ScatterValue(1, index, 5)
		assertValues(t, "input", x, []int{2, 3}, make([]float64, 6), 0, 0)
		assertValues(t, "scatter", a, []int{2, 3}, []float64{1, 1, 0, 0, 0, 0}, 0, 0)
		assertValues(t, "scatter add", b, []int{2, 3}, []float64{1, 1, 0, 0, 0, 0}, 0, 0)
		assertValues(t, "scatter value", c, []int{2, 3}, []float64{5, 5, 0, 0, 0, 0}, 0, 0)
	})
}

// TestNonzeroScalar checks torch.nonzero's shapes for 0-d inputs.
func TestNonzeroScalar(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		assertValues(t, "non-zero scalar", tensor.Scalar(dev, 2).Nonzero(), []int{1, 0}, nil, 0, 0)
		assertValues(t, "zero scalar", tensor.Scalar(dev, 0).Nonzero(), []int{0, 0}, nil, 0, 0)
		if d := tensor.Scalar(dev, 2).Nonzero().DType(); d != tensor.Int64 {
			t.Errorf("dtype %s, want int64", d)
		}
	})
}

// TestIndexingRecordsNoGradForIndices checks that integer and bool inputs
// get no gradient while float inputs do, and that no graph is recorded
// when nothing requires gradients.
func TestIndexingRecordsNoGradForIndices(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		x := randFloat64(ad, 1, -1, 1, 3, 2).RequireGrad()
		index := tensor.FromInt64s(ad, []int64{2, 2})
		out := x.IndexSelect(0, index).Sum()
		grads := out.Backward()
		if grads.Get(index) != nil {
			t.Error("index received a gradient")
		}
		assertValues(t, "grad", grads.Get(x), []int{3, 2}, []float64{0, 0, 0, 0, 2, 2}, 0, 0)
		plain := randFloat64(ad, 1, -1, 1, 3, 2).IndexSelect(0, index)
		if plain.RequiresGrad() || plain.Node() != nil {
			t.Error("a graph was recorded for inputs that need no gradient")
		}
	})
}

// TestIndexOpsFreeTheirTemporaries runs each op outside any Scope on the
// strict device, releases its inputs and outputs explicitly, and checks
// that no buffer it allocated is left: temporaries (converted indices,
// pad indices, broadcast scalars) must be released by the op itself.
func TestIndexOpsFreeTheirTemporaries(t *testing.T) {
	dev := tensor.MustDevice("strict")
	ops := map[string]func(x, i2, i1, m *tensor.Tensor) []*tensor.Tensor{
		"Gather int32": func(x, i2, i1, m *tensor.Tensor) []*tensor.Tensor { return one(x.Gather(1, i2)) },
		"Scatter":      func(x, i2, i1, m *tensor.Tensor) []*tensor.Tensor { return one(x.Scatter(1, i2, x)) },
		"ScatterAdd":   func(x, i2, i1, m *tensor.Tensor) []*tensor.Tensor { return one(x.ScatterAdd(1, i2, x)) },
		"ScatterValue": func(x, i2, i1, m *tensor.Tensor) []*tensor.Tensor { return one(x.ScatterValue(1, i2, 2)) },
		"IndexSelect":  func(x, i2, i1, m *tensor.Tensor) []*tensor.Tensor { return one(x.IndexSelect(1, i1)) },
		"MaskedFill":   func(x, i2, i1, m *tensor.Tensor) []*tensor.Tensor { return one(x.MaskedFill(m, 1)) },
		"OneHot": func(x, i2, i1, m *tensor.Tensor) []*tensor.Tensor {
			c := i1.To(tensor.Int64)
			defer c.Release()
			return one(c.OneHot(4))
		},
		"Nonzero":      func(x, i2, i1, m *tensor.Tensor) []*tensor.Tensor { return one(x.Nonzero()) },
		"Pad reflect":  func(x, i2, i1, m *tensor.Tensor) []*tensor.Tensor { return one(x.Pad([]int{1, 1, 1, 1}, "reflect", 0)) },
		"Pad constant": func(x, i2, i1, m *tensor.Tensor) []*tensor.Tensor { return one(x.Pad([]int{1, -1}, "constant", 0)) },
		"Roll":         func(x, i2, i1, m *tensor.Tensor) []*tensor.Tensor { return one(x.Roll(1, 1)) },
		"Repeat":       func(x, i2, i1, m *tensor.Tensor) []*tensor.Tensor { return one(x.Repeat(2, 1)) },
		"Cat":          func(x, i2, i1, m *tensor.Tensor) []*tensor.Tensor { return one(tensor.Cat([]*tensor.Tensor{x, x}, 0)) },
		"Stack": func(x, i2, i1, m *tensor.Tensor) []*tensor.Tensor {
			return one(tensor.Stack([]*tensor.Tensor{x, x}, 0))
		},
		"Split": func(x, i2, i1, m *tensor.Tensor) []*tensor.Tensor { return x.Split([]int{1, 2}, 1) },
		"Flatten copy": func(x, i2, i1, m *tensor.Tensor) []*tensor.Tensor {
			v := x.T()
			defer v.Release()
			return one(v.Flatten(0, 1))
		},
	}
	for name, f := range ops {
		t.Run(name, func(t *testing.T) {
			mark := strict.Default().Mark()
			x := tensor.FromFloat32s(dev, []float32{1, 0, 3, 0, 5, 6}, 2, 3)
			i2 := tensor.FromInt32s(dev, []int32{2, 0}, 2, 1)
			i1 := tensor.FromInt32s(dev, []int32{1, 2, 1})
			m := tensor.FromBools(dev, []bool{true, false, true}, 3)
			outs := f(x, i2, i1, m)
			for _, o := range outs {
				o.Float64s()
				o.Release()
			}
			x.Release()
			i2.Release()
			i1.Release()
			m.Release()
			if err := dev.Sync(); err != nil {
				t.Fatal(err)
			}
			for _, l := range strict.Default().LiveSince(mark) {
				t.Errorf("left allocated: %s", l)
			}
		})
	}
}

// TestIndexOpsBackwardFreesTemporaries runs each op's backward outside any
// Scope on the strict device and checks that, once the caller releases what
// it holds (inputs, output, seed, gradients), nothing is left allocated.
func TestIndexOpsBackwardFreesTemporaries(t *testing.T) {
	dev := tensor.MustDevice("strict").Autodiff()
	ops := map[string]func(x, i *tensor.Tensor) *tensor.Tensor{
		"Gather":       func(x, i *tensor.Tensor) *tensor.Tensor { return x.Gather(1, i) },
		"Scatter":      func(x, i *tensor.Tensor) *tensor.Tensor { return x.Scatter(1, i, x) },
		"ScatterAdd":   func(x, i *tensor.Tensor) *tensor.Tensor { return x.ScatterAdd(1, i, x) },
		"ScatterValue": func(x, i *tensor.Tensor) *tensor.Tensor { return x.ScatterValue(1, i, 3) },
		"Pad reflect":  func(x, i *tensor.Tensor) *tensor.Tensor { return x.Pad([]int{1, 1, 1, 0}, "reflect", 0) },
		"Pad constant": func(x, i *tensor.Tensor) *tensor.Tensor { return x.Pad([]int{1, -1}, "constant", 0) },
		"Repeat":       func(x, i *tensor.Tensor) *tensor.Tensor { return x.Repeat(2, 1) },
		"Roll":         func(x, i *tensor.Tensor) *tensor.Tensor { return x.Roll(1, 1) },
		"Slice":        func(x, i *tensor.Tensor) *tensor.Tensor { return x.Slice(1, 2, 0, -1) },
		"Cat":          func(x, i *tensor.Tensor) *tensor.Tensor { return tensor.Cat([]*tensor.Tensor{x, x}, 1) },
		"Stack":        func(x, i *tensor.Tensor) *tensor.Tensor { return tensor.Stack([]*tensor.Tensor{x, x}, 1) },
	}
	for name, f := range ops {
		t.Run(name, func(t *testing.T) {
			mark := strict.Default().Mark()
			x := tensor.FromFloat64s(dev, []float64{1, 2, 3, 4, 5, 6}, 2, 3).RequireGrad()
			i := tensor.FromInt32s(dev, []int32{2, 0}, 2, 1)
			out := f(x, i)
			seed := tensor.OnesLike(out)
			grads := out.BackwardWith(seed)
			if g := grads.Get(x); g == nil {
				t.Error("no gradient")
			}
			grads.Release()
			for _, r := range []*tensor.Tensor{seed, out, x, i} {
				r.Release()
			}
			if err := dev.Sync(); err != nil {
				t.Fatal(err)
			}
			for _, l := range strict.Default().LiveSince(mark) {
				t.Errorf("left allocated: %s", l)
			}
		})
	}
}

// TestNegativeIndicesCountFromEnd pins Kiln's extension of PyTorch: an
// index in [-n, 0) counts from the end of its dimension.
func TestNegativeIndicesCountFromEnd(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := tensor.FromFloat64s(dev, []float64{0, 1, 2, 3, 4, 5}, 2, 3)
		assertValues(t, "Gather", x.Gather(1, ints(dev, []int64{-1, -3}, 2, 1)), []int{2, 1}, []float64{2, 3}, 0, 0)
		assertValues(t, "IndexSelect", x.IndexSelect(0, tensor.FromInt64s(dev, []int64{-1})), []int{1, 3}, []float64{3, 4, 5}, 0, 0)
		assertValues(t, "ScatterAdd", x.ScatterAdd(1, ints(dev, []int64{-2}, 1, 1), tensor.FromFloat64s(dev, []float64{10}, 1, 1)),
			[]int{2, 3}, []float64{0, 11, 2, 3, 4, 5}, 0, 0)
	})
}
