package tensor_test

import (
	"errors"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/tensor"
)

// block is a small layer, x·w then tanh, times x: a function whose
// backward needs its intermediates.
func block(x, w *tensor.Tensor) *tensor.Tensor {
	return x.Matmul(w).Tanh().Mul(x)
}

func TestCheckpointGradients(t *testing.T) {
	runGradCases(t, []gradCase{
		{"input and param", func(in []*tensor.Tensor) *tensor.Tensor {
			w := in[1]
			return tensor.Checkpoint(func(xs, _ []*tensor.Tensor) *tensor.Tensor { return block(xs[0], w) },
				[]*tensor.Tensor{in[0]}, []*tensor.Tensor{w})
		}, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 3, 4), randFloat64(d, 2, -1, 1, 4, 4)}
		}},
		{"transposed input view, param as given", func(in []*tensor.Tensor) *tensor.Tensor {
			w := in[1]
			return tensor.Checkpoint(func(xs, ps []*tensor.Tensor) *tensor.Tensor { return block(xs[0], ps[0]) },
				[]*tensor.Tensor{in[0].T()}, []*tensor.Tensor{w})
		}, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 3, -1, 1, 4, 3), randFloat64(d, 4, -1, 1, 4, 4)}
		}},
		{"computed param", func(in []*tensor.Tensor) *tensor.Tensor {
			w := in[1].MulScalar(2).Add(in[2]) // not a leaf: the pass must go on through it
			return tensor.Checkpoint(func(xs, ps []*tensor.Tensor) *tensor.Tensor { return block(xs[0], ps[0]) },
				[]*tensor.Tensor{in[0]}, []*tensor.Tensor{w})
		}, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 11, -1, 1, 3, 4), randFloat64(d, 12, -1, 1, 4, 4), randFloat64(d, 13, -1, 1, 4)}
		}},
		{"two inputs broadcast", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.Checkpoint(func(xs, _ []*tensor.Tensor) *tensor.Tensor { return xs[0].Mul(xs[1]).Exp().Sum(-1) },
				[]*tensor.Tensor{in[0], in[1]}, nil)
		}, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 5, -1, 1, 2, 3), randFloat64(d, 6, -1, 1, 3)}
		}},
		{"nested checkpoints", func(in []*tensor.Tensor) *tensor.Tensor {
			w := in[1]
			inner := func(xs, _ []*tensor.Tensor) *tensor.Tensor { return block(xs[0], w) }
			outer := func(xs, _ []*tensor.Tensor) *tensor.Tensor {
				h := tensor.Checkpoint(inner, xs, []*tensor.Tensor{w})
				return tensor.Checkpoint(inner, []*tensor.Tensor{h}, []*tensor.Tensor{w})
			}
			return tensor.Checkpoint(outer, []*tensor.Tensor{in[0]}, []*tensor.Tensor{w})
		}, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 7, -1, 1, 3, 4), randFloat64(d, 8, -1, 1, 4, 4)}
		}},
		{"identity", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.Checkpoint(func(xs, _ []*tensor.Tensor) *tensor.Tensor { return xs[0] }, in, nil).MulScalar(2)
		}, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 9, -1, 1, 3)}
		}},
		{"empty input", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.Checkpoint(func(xs, _ []*tensor.Tensor) *tensor.Tensor { return xs[0].Exp() }, in, nil)
		}, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 10, -1, 1, 0, 3)}
		}},
	})
}

// TestCheckpointMatchesPlain runs a dropout-carrying chain with and without
// checkpoints from the same random state and requires the same output and
// bit-identical gradients: the recomputation replays the dropout masks.
func TestCheckpointMatchesPlain(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		t.Run(dt.String(), func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				ad := dev.Autodiff()
				layer := func(x, w *tensor.Tensor) *tensor.Tensor {
					h := x.Matmul(w).Relu()
					keep := tensor.Bernoulli(x.Device().Inner(), 0.7, h.Shape()...).To(h.DType())
					return h.Mul(keep).MulScalar(1 / 0.7).Add(x)
				}
				run := func(checkpoint bool) (out []float64, gx, gw []float64, pos uint64) {
					x := randFloat64(ad, 1, -1, 1, 6, 5).To(dt).RequireGrad()
					w := randFloat64(ad, 2, -1, 1, 5, 5).To(dt).RequireGrad()
					ad.Seed(42)
					h := x
					for range 3 {
						if checkpoint {
							h = tensor.Checkpoint(func(in, _ []*tensor.Tensor) *tensor.Tensor { return layer(in[0], w) },
								[]*tensor.Tensor{h}, []*tensor.Tensor{w})
						} else {
							h = layer(h, w)
						}
					}
					out = h.Float64s()
					_, before := ad.RNGState()
					g := h.Square().Sum().Backward()
					_, pos = ad.RNGState()
					if pos != before {
						t.Errorf("backward moved the random stream from %d to %d", before, pos)
					}
					return out, g.Get(x).Float64s(), g.Get(w).Float64s(), pos
				}
				o1, gx1, gw1, p1 := run(false)
				o2, gx2, gw2, p2 := run(true)
				if p1 != p2 {
					t.Errorf("random stream at %d with checkpoints, %d without", p2, p1)
				}
				for name, pair := range map[string][2][]float64{"output": {o1, o2}, "grad x": {gx1, gx2}, "grad w": {gw1, gw2}} {
					for i := range pair[0] {
						if pair[0][i] != pair[1][i] {
							t.Fatalf("%s[%d]: %v with checkpoints, %v without", name, i, pair[1][i], pair[0][i])
						}
					}
				}
			})
		})
	}
}

// TestCheckpointFreesActivations measures the peak memory of a chain of
// eight blocks on a device of its own: with each block checkpointed, the
// forward pass keeps one activation per block instead of four.
func TestCheckpointFreesActivations(t *testing.T) {
	peak := func(checkpoint bool) int64 {
		dev := testutil.FreshDevices(t)[0]
		ad := dev.Autodiff()
		var p int64
		tensor.Scope(func() {
			w := tensor.Randn(ad, 256, 256).MulScalar(0.05).Detach().RequireGrad()
			x := tensor.Randn(ad, 256, 256).RequireGrad()
			f := func(in, ps []*tensor.Tensor) *tensor.Tensor {
				return in[0].Matmul(ps[0]).Tanh().Exp().Sin().Add(in[0])
			}
			h := x
			for range 8 {
				if checkpoint {
					h = tensor.Checkpoint(f, []*tensor.Tensor{h}, []*tensor.Tensor{w})
				} else {
					h = f([]*tensor.Tensor{h}, []*tensor.Tensor{w})
				}
			}
			h.Sum().Backward()
			p = dev.MemoryStats().PeakBytes
		})
		return p
	}
	plain, ckpt := peak(false), peak(true)
	t.Logf("peak bytes: %d plain, %d checkpointed (%.0f%%)", plain, ckpt, 100*float64(ckpt)/float64(plain))
	if ckpt*2 > plain {
		t.Errorf("checkpointed chain peaked at %d bytes, the plain one at %d: want at most half", ckpt, plain)
	}
}

func TestCheckpointWithoutGradientsJustRuns(t *testing.T) {
	dev := tensor.CPU()
	x := tensor.Arange(dev, 0, 4, 1).To(tensor.Float32)
	calls := 0
	y := tensor.Checkpoint(func(in, _ []*tensor.Tensor) *tensor.Tensor { calls++; return in[0].MulScalar(2) },
		[]*tensor.Tensor{x}, nil)
	if calls != 1 || y.RequiresGrad() || y.Sum().Item() != 12 {
		t.Fatalf("calls %d, requires grad %v, sum %v", calls, y.RequiresGrad(), y.Sum().Item())
	}
}

func TestCheckpointBadInput(t *testing.T) {
	ad := tensor.CPU().Autodiff()
	x := tensor.Randn(ad, 2, 2).RequireGrad()
	id := func(in, _ []*tensor.Tensor) *tensor.Tensor { return in[0] }
	released := tensor.Randn(ad, 2)
	released.Release()
	cases := []struct {
		name string
		run  func()
		want error
	}{
		{"nil function", func() { tensor.Checkpoint(nil, []*tensor.Tensor{x}, nil) }, tensor.ErrArgument},
		{"no inputs", func() { tensor.Checkpoint(id, nil, nil) }, tensor.ErrArgument},
		{"nil input", func() { tensor.Checkpoint(id, []*tensor.Tensor{x, nil}, nil) }, tensor.ErrArgument},
		{"nil param", func() { tensor.Checkpoint(id, []*tensor.Tensor{x}, []*tensor.Tensor{nil}) }, tensor.ErrArgument},
		{"released input", func() { tensor.Checkpoint(id, []*tensor.Tensor{released}, nil) }, tensor.ErrReleased},
		{"nil result", func() {
			tensor.Checkpoint(func(_, _ []*tensor.Tensor) *tensor.Tensor { return nil }, []*tensor.Tensor{x}, nil)
		}, tensor.ErrArgument},
		{"unlisted parameter", func() {
			w := tensor.Randn(ad, 2, 2).RequireGrad()
			y := tensor.Checkpoint(func(in, _ []*tensor.Tensor) *tensor.Tensor { return in[0].Matmul(w) }, []*tensor.Tensor{x}, nil)
			y.Sum().Backward()
		}, tensor.ErrArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := tensor.Try(c.run)
			var te *tensor.Error
			if !errors.Is(err, c.want) || !errors.As(err, &te) || te.Op != "tensor.Checkpoint" {
				t.Fatalf("got %v, want a tensor.Checkpoint error wrapping %v", err, c.want)
			}
		})
	}
}

func TestCheckpointRecordsOneNode(t *testing.T) {
	ad := tensor.CPU().Autodiff()
	x := tensor.Randn(ad, 3, 4).RequireGrad()
	w := tensor.Randn(ad, 4, 4).RequireGrad()
	y := tensor.Checkpoint(func(in, _ []*tensor.Tensor) *tensor.Tensor { return block(in[0], w) },
		[]*tensor.Tensor{x}, []*tensor.Tensor{w})
	want := block(x.Detach(), w.Detach()).Float64s()
	for i, v := range y.Float64s() {
		if math.Abs(v-want[i]) > 0 {
			t.Fatalf("output %d: %v, want %v", i, v, want[i])
		}
	}
	if n := y.Node(); n == nil || n.Op != "checkpoint" || len(n.Inputs) != 2 {
		t.Fatalf("node %+v, want one checkpoint node over x and w", n)
	}
}
