package tensor_test

import (
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends/strict"
	"github.com/kiln-ml/kiln/tensor"
)

// vol is a host [N, C, D, H, W] array for the naive 3-D references.
type vol struct {
	shape [5]int
	data  []float64
}

func newVol(shape [5]int) vol {
	return vol{shape, make([]float64, shape[0]*shape[1]*shape[2]*shape[3]*shape[4])}
}

func hostVol(t *tensor.Tensor) vol {
	s := t.Shape()
	return vol{[5]int{s[0], s[1], s[2], s[3], s[4]}, t.Float64s()}
}

func (v vol) idx(n, c, d, h, w int) int {
	s := v.shape
	return (((n*s[1]+c)*s[2]+d)*s[3]+h)*s[4] + w
}

func (v vol) dims() []int { return v.shape[:] }

// naiveConv3d is the definition of a 3-D cross-correlation with
// symmetric padding p, stride s, dilation dl and g groups.
func naiveConv3d(x, w vol, bias []float64, s, p, dl [3]int, g int) vol {
	o, cg := w.shape[0], w.shape[1]
	var out [3]int
	for i := range 3 {
		out[i] = (x.shape[2+i]+2*p[i]-dl[i]*(w.shape[2+i]-1)-1)/s[i] + 1
	}
	y := newVol([5]int{x.shape[0], o, out[0], out[1], out[2]})
	og := o / g
	for n := range x.shape[0] {
		for oc := range o {
			for od := range out[0] {
				for oh := range out[1] {
					for ow := range out[2] {
						sum := 0.0
						if bias != nil {
							sum = bias[oc]
						}
						for ci := range cg {
							c := oc/og*cg + ci
							for kd := range w.shape[2] {
								for kh := range w.shape[3] {
									for kw := range w.shape[4] {
										d := od*s[0] - p[0] + kd*dl[0]
										h := oh*s[1] - p[1] + kh*dl[1]
										ww := ow*s[2] - p[2] + kw*dl[2]
										if d < 0 || h < 0 || ww < 0 || d >= x.shape[2] || h >= x.shape[3] || ww >= x.shape[4] {
											continue
										}
										sum += x.data[x.idx(n, c, d, h, ww)] * w.data[w.idx(oc, ci, kd, kh, kw)]
									}
								}
							}
						}
						y.data[y.idx(n, oc, od, oh, ow)] = sum
					}
				}
			}
		}
	}
	return y
}

// naiveConvTranspose3d scatters every input element through the kernel.
func naiveConvTranspose3d(x, w vol, bias []float64, s, p, op, dl [3]int, g int) vol {
	cin, cog := x.shape[1], w.shape[1]
	var out [3]int
	for i := range 3 {
		out[i] = (x.shape[2+i]-1)*s[i] - 2*p[i] + dl[i]*(w.shape[2+i]-1) + op[i] + 1
	}
	y := newVol([5]int{x.shape[0], cog * g, out[0], out[1], out[2]})
	cig := cin / g
	for n := range x.shape[0] {
		for ci := range cin {
			for d := range x.shape[2] {
				for h := range x.shape[3] {
					for ww := range x.shape[4] {
						xv := x.data[x.idx(n, ci, d, h, ww)]
						for co := range cog {
							oc := ci/cig*cog + co
							for kd := range w.shape[2] {
								for kh := range w.shape[3] {
									for kw := range w.shape[4] {
										od, oh, ow := d*s[0]-p[0]+kd*dl[0], h*s[1]-p[1]+kh*dl[1], ww*s[2]-p[2]+kw*dl[2]
										if od < 0 || oh < 0 || ow < 0 || od >= out[0] || oh >= out[1] || ow >= out[2] {
											continue
										}
										y.data[y.idx(n, oc, od, oh, ow)] += xv * w.data[w.idx(ci, co, kd, kh, kw)]
									}
								}
							}
						}
					}
				}
			}
		}
	}
	if bias != nil {
		for i := range y.data {
			y.data[i] += bias[i/(out[0]*out[1]*out[2])%(cog*g)]
		}
	}
	return y
}

func triple(v []int, def int) [3]int {
	switch len(v) {
	case 0:
		return [3]int{def, def, def}
	case 1:
		return [3]int{v[0], v[0], v[0]}
	}
	return [3]int{v[0], v[1], v[2]}
}

func TestConv3dMatchesNaive(t *testing.T) {
	cases := []struct {
		name      string
		x, w      []int
		bias      bool
		cfg       tensor.ConvConfig
		unbatched bool
	}{
		{"basic with bias", []int{2, 2, 4, 5, 3}, []int{3, 2, 2, 2, 2}, true, tensor.ConvConfig{}, false},
		{"stride padding dilation odd sizes", []int{1, 3, 7, 5, 6}, []int{2, 3, 3, 2, 3}, true,
			tensor.ConvConfig{Stride: []int{2, 1, 3}, Padding: []int{1, 0, 2}, Dilation: []int{2, 1, 1}}, false},
		{"groups", []int{2, 4, 3, 4, 4}, []int{6, 2, 2, 3, 1}, false, tensor.ConvConfig{Groups: 2, Padding: []int{1}}, false},
		{"depthwise", []int{1, 3, 5, 3, 3}, []int{3, 1, 3, 1, 2}, true, tensor.ConvConfig{Groups: 3, Stride: []int{2}}, false},
		{"kernel depth one", []int{1, 2, 3, 4, 4}, []int{2, 2, 1, 3, 3}, false, tensor.ConvConfig{Padding: []int{0, 1, 1}}, false},
		{"unbatched", []int{1, 2, 3, 3, 4}, []int{2, 2, 2, 2, 2}, true, tensor.ConvConfig{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dev := tensor.CPU()
			x := randFloat64(dev, 1, -1, 1, c.x...)
			w := randFloat64(dev, 2, -1, 1, c.w...)
			var b *tensor.Tensor
			var bv []float64
			if c.bias {
				b = randFloat64(dev, 3, -1, 1, c.w[0])
				bv = b.Float64s()
			}
			in := x
			if c.unbatched {
				in = x.Squeeze(0)
			}
			got := tensor.Conv3d(in, w, b, c.cfg)
			want := naiveConv3d(hostVol(x), hostVol(w), bv, triple(c.cfg.Stride, 1), triple(c.cfg.Padding, 0),
				triple(c.cfg.Dilation, 1), max(c.cfg.Groups, 1))
			shape := want.dims()
			if c.unbatched {
				shape = shape[1:]
			}
			assertValues(t, "Conv3d", got, shape, want.data, 1e-10, 1e-10)
		})
	}
}

func TestConv3dSamePadding(t *testing.T) {
	dev := tensor.CPU()
	x := randFloat64(dev, 1, -1, 1, 1, 2, 4, 5, 3)
	w := randFloat64(dev, 2, -1, 1, 2, 2, 2, 3, 2)
	got := tensor.Conv3d(x, w, nil, tensor.ConvConfig{PaddingMode: "same"})
	// PyTorch pads the extra row of an even kernel at the end.
	xp := x.Pad([]int{0, 1, 1, 1, 0, 1}, "constant", 0)
	want := tensor.Conv3d(xp, w, nil, tensor.ConvConfig{})
	assertValues(t, "Conv3d same", got, want.Shape(), want.Float64s(), 1e-12, 1e-12)
}

func TestConvTranspose3dMatchesNaive(t *testing.T) {
	cases := []struct {
		name string
		x, w []int
		bias bool
		cfg  tensor.ConvTransposeConfig
	}{
		{"basic with bias", []int{2, 2, 3, 2, 3}, []int{2, 3, 2, 2, 2}, true, tensor.ConvTransposeConfig{}},
		{"stride padding output padding", []int{1, 2, 3, 3, 2}, []int{2, 2, 3, 2, 3}, true,
			tensor.ConvTransposeConfig{Stride: []int{2, 3, 2}, Padding: []int{1, 0, 1}, OutputPadding: []int{1, 2, 0}}},
		{"groups dilation", []int{1, 4, 2, 3, 3}, []int{4, 1, 2, 2, 2}, false,
			tensor.ConvTransposeConfig{Groups: 2, Dilation: []int{2, 1, 2}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dev := tensor.CPU()
			x := randFloat64(dev, 1, -1, 1, c.x...)
			w := randFloat64(dev, 2, -1, 1, c.w...)
			var b *tensor.Tensor
			var bv []float64
			g := max(c.cfg.Groups, 1)
			if c.bias {
				b = randFloat64(dev, 3, -1, 1, c.w[1]*g)
				bv = b.Float64s()
			}
			got := tensor.ConvTranspose3d(x, w, b, c.cfg)
			want := naiveConvTranspose3d(hostVol(x), hostVol(w), bv, triple(c.cfg.Stride, 1), triple(c.cfg.Padding, 0),
				triple(c.cfg.OutputPadding, 0), triple(c.cfg.Dilation, 1), g)
			assertValues(t, "ConvTranspose3d", got, want.dims(), want.data, 1e-10, 1e-10)
		})
	}
}

// naivePool3d pools each window; avg divides by the count of the window
// clipped to the padded input (or to the input when exclude is set).
func naivePool3d(x vol, k, s, p [3]int, dl [3]int, ceil, avg, exclude bool) (vol, []int64) {
	var out [3]int
	for i := range 3 {
		in := x.shape[2+i]
		num := in + 2*p[i] - dl[i]*(k[i]-1) - 1
		if ceil {
			num += s[i] - 1
		}
		out[i] = num/s[i] + 1
		if ceil && (out[i]-1)*s[i] >= in+p[i] {
			out[i]--
		}
	}
	y := newVol([5]int{x.shape[0], x.shape[1], out[0], out[1], out[2]})
	idx := make([]int64, len(y.data))
	for n := range x.shape[0] {
		for c := range x.shape[1] {
			for od := range out[0] {
				for oh := range out[1] {
					for ow := range out[2] {
						best, arg, sum, count := math.Inf(-1), -1, 0.0, 1
						start := [3]int{od*s[0] - p[0], oh*s[1] - p[1], ow*s[2] - p[2]}
						for i := range 3 {
							end := min(start[i]+k[i], x.shape[2+i]+p[i])
							if exclude {
								count *= min(end, x.shape[2+i]) - max(start[i], 0)
							} else {
								count *= end - start[i]
							}
						}
						for kd := range k[0] {
							for kh := range k[1] {
								for kw := range k[2] {
									d, h, w := start[0]+kd*dl[0], start[1]+kh*dl[1], start[2]+kw*dl[2]
									if d < 0 || h < 0 || w < 0 || d >= x.shape[2] || h >= x.shape[3] || w >= x.shape[4] {
										continue
									}
									v := x.data[x.idx(n, c, d, h, w)]
									sum += v
									if v > best {
										best, arg = v, (d*x.shape[3]+h)*x.shape[4]+w
									}
								}
							}
						}
						i := y.idx(n, c, od, oh, ow)
						if avg {
							y.data[i] = sum / float64(count)
						} else {
							y.data[i], idx[i] = best, int64(arg)
						}
					}
				}
			}
		}
	}
	return y, idx
}

func TestPool3dMatchesNaive(t *testing.T) {
	cases := []struct {
		name    string
		x       []int
		k, s, p []int
		dil     []int
		ceil    bool
		exclude bool
	}{
		{"cube kernel", []int{2, 2, 4, 4, 4}, []int{2}, nil, nil, nil, false, false},
		{"odd sizes stride padding", []int{1, 3, 5, 7, 6}, []int{3, 3, 2}, []int{2, 2, 1}, []int{1, 1, 0}, nil, false, false},
		{"ceil mode", []int{1, 2, 5, 6, 7}, []int{2, 3, 3}, []int{2}, []int{1, 0, 1}, nil, true, false},
		{"ceil mode excludes pad", []int{1, 2, 5, 6, 7}, []int{3}, []int{2}, []int{1}, nil, true, true},
		{"dilation", []int{1, 2, 6, 5, 5}, []int{2}, []int{1}, nil, []int{2, 1, 2}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dev := tensor.CPU()
			x := nnDistinct(3, c.x...)(dev)
			s := triple(c.s, 0)
			if len(c.s) == 0 {
				s = triple(c.k, 1)
			}
			k, p, dl := triple(c.k, 1), triple(c.p, 0), triple(c.dil, 1)
			v, idx := tensor.MaxPool3d(x, tensor.PoolConfig{Kernel: c.k, Stride: c.s, Padding: c.p, Dilation: c.dil, CeilMode: c.ceil})
			want, wantIdx := naivePool3d(hostVol(x), k, s, p, dl, c.ceil, false, false)
			assertValues(t, "MaxPool3d", v, want.dims(), want.data, 0, 0)
			wi := make([]float64, len(wantIdx))
			for i, j := range wantIdx {
				wi[i] = float64(j)
			}
			assertValues(t, "MaxPool3d indices", idx.To(tensor.Float64), want.dims(), wi, 0, 0)
			if c.dil != nil {
				return
			}
			a := tensor.AvgPool3d(x, tensor.AvgPoolConfig{Kernel: c.k, Stride: c.s, Padding: c.p, CeilMode: c.ceil, ExcludePad: c.exclude})
			want, _ = naivePool3d(hostVol(x), k, s, p, dl, c.ceil, true, c.exclude)
			assertValues(t, "AvgPool3d", a, want.dims(), want.data, 1e-12, 1e-12)
		})
	}
}

func TestAvgPool3dDivisorOverride(t *testing.T) {
	dev := tensor.CPU()
	x := randFloat64(dev, 1, -1, 1, 1, 2, 4, 4, 5)
	got := tensor.AvgPool3d(x, tensor.AvgPoolConfig{Kernel: []int{2}, DivisorOverride: 3})
	want, _ := naivePool3d(hostVol(x), [3]int{2, 2, 2}, [3]int{2, 2, 2}, [3]int{}, [3]int{1, 1, 1}, false, true, false)
	for i := range want.data {
		want.data[i] *= 8.0 / 3
	}
	assertValues(t, "AvgPool3d override", got, want.dims(), want.data, 1e-12, 1e-12)
}

func TestNN3dGradients(t *testing.T) {
	if raceEnabled {
		t.Skip("finite differences: the plain run checks them (see race_test.go)")
	}
	conv := func(cfg tensor.ConvConfig) func(in []*tensor.Tensor) *tensor.Tensor {
		return func(in []*tensor.Tensor) *tensor.Tensor {
			var b *tensor.Tensor
			if len(in) > 2 {
				b = in[2]
			}
			return tensor.Conv3d(in[0], in[1], b, cfg)
		}
	}
	convT := func(cfg tensor.ConvTransposeConfig) func(in []*tensor.Tensor) *tensor.Tensor {
		return func(in []*tensor.Tensor) *tensor.Tensor {
			var b *tensor.Tensor
			if len(in) > 2 {
				b = in[2]
			}
			return tensor.ConvTranspose3d(in[0], in[1], b, cfg)
		}
	}
	nnRunGradChecks(t, []nnGradCase{
		{"conv3d bias stride padding", conv(tensor.ConvConfig{Stride: []int{2, 1, 1}, Padding: []int{1, 0, 1}}),
			nnInputs(nnRand(1, 1, 2, 5, 3, 3), nnRand(2, 2, 2, 2, 2, 2), nnRand(3, 2))},
		{"conv3d groups dilation", conv(tensor.ConvConfig{Groups: 2, Dilation: []int{2, 1, 1}}),
			nnInputs(nnRand(1, 1, 4, 4, 3, 3), nnRand(2, 2, 2, 2, 2, 1))},
		{"conv3d same unbatched", conv(tensor.ConvConfig{PaddingMode: "same"}),
			nnInputs(nnRand(1, 2, 3, 3, 3), nnRand(2, 1, 2, 2, 3, 2))},
		{"conv_transpose3d", convT(tensor.ConvTransposeConfig{Stride: []int{2, 1, 2}, Padding: []int{1, 0, 0}, OutputPadding: []int{1, 0, 1}}),
			nnInputs(nnRand(1, 1, 2, 3, 2, 2), nnRand(2, 2, 2, 3, 2, 2), nnRand(3, 2))},
		{"max_pool3d", func(in []*tensor.Tensor) *tensor.Tensor {
			v, _ := tensor.MaxPool3d(in[0], tensor.PoolConfig{Kernel: []int{2, 3, 2}, Stride: []int{1, 2, 2}, Padding: []int{1}, CeilMode: true})
			return v
		}, nnInputs(nnDistinct(4, 1, 2, 3, 5, 4))},
		{"avg_pool3d excludes pad", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.AvgPool3d(in[0], tensor.AvgPoolConfig{Kernel: []int{3, 2, 2}, Stride: []int{2}, Padding: []int{1}, ExcludePad: true})
		}, nnInputs(nnRand(5, 1, 2, 5, 4, 3))},
	})
}

func TestNN3dBadInputs(t *testing.T) {
	nnRunBadInputs(t, []nnBadCase{
		{"conv3d rank", func(dev tensor.Device) {
			tensor.Conv3d(tensor.Zeros(dev, 2, 3, 3), tensor.Zeros(dev, 1, 1, 1, 1, 1), nil, tensor.ConvConfig{})
		}, tensor.ErrShape, "[N, C, D, H, W]"},
		{"conv3d two strides", func(dev tensor.Device) {
			tensor.Conv3d(tensor.Zeros(dev, 1, 1, 3, 3, 3), tensor.Zeros(dev, 1, 1, 1, 1, 1), nil, tensor.ConvConfig{Stride: []int{1, 2}})
		}, tensor.ErrArgument, "want 1 or 3 values"},
		{"conv3d too small in depth", func(dev tensor.Device) {
			tensor.Conv3d(tensor.Zeros(dev, 1, 1, 1, 3, 3), tensor.Zeros(dev, 1, 1, 2, 1, 1), nil, tensor.ConvConfig{})
		}, tensor.ErrShape, "too small in depth"},
		{"max_pool3d padding over half", func(dev tensor.Device) {
			tensor.MaxPool3d(tensor.Zeros(dev, 1, 1, 3, 3, 3), tensor.PoolConfig{Kernel: []int{2}, Padding: []int{2}})
		}, tensor.ErrArgument, "at most half"},
		{"avg_pool3d too small", func(dev tensor.Device) {
			tensor.AvgPool3d(tensor.Zeros(dev, 1, 1, 1, 3, 3), tensor.AvgPoolConfig{Kernel: []int{2}})
		}, tensor.ErrShape, "too small"},
		{"conv_transpose3d output padding", func(dev tensor.Device) {
			tensor.ConvTranspose3d(tensor.Zeros(dev, 1, 1, 2, 2, 2), tensor.Zeros(dev, 1, 1, 1, 1, 1), nil,
				tensor.ConvTransposeConfig{OutputPadding: []int{1}})
		}, tensor.ErrArgument, "OutputPadding"},
	})
}

// TestNN3dReleasesTemporaries checks on the strict device that the
// composed 3-D ops leave no buffer behind once the caller releases their
// results, without a graph and through a backward pass.
func TestNN3dReleasesTemporaries(t *testing.T) {
	dev := tensor.MustDevice("strict")
	sb := strict.Default()
	r := func(seed uint64, shape ...int) *tensor.Tensor { return randFloat64(dev, seed, -1, 1, shape...) }
	ops := []struct {
		name   string
		inputs func() []*tensor.Tensor
		f      func(in []*tensor.Tensor) []*tensor.Tensor
	}{
		{"conv3d", func() []*tensor.Tensor { return []*tensor.Tensor{r(1, 2, 4, 5, 4, 3), r(2, 6, 2, 3, 2, 2), r(3, 6)} },
			func(in []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{tensor.Conv3d(in[0], in[1], in[2], tensor.ConvConfig{Groups: 2, Padding: []int{1}})}
			}},
		{"conv3d unbatched same", func() []*tensor.Tensor { return []*tensor.Tensor{r(1, 2, 4, 3, 3), r(2, 3, 2, 2, 2, 2)} },
			func(in []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{tensor.Conv3d(in[0], in[1], nil, tensor.ConvConfig{PaddingMode: "same"})}
			}},
		{"conv_transpose3d", func() []*tensor.Tensor { return []*tensor.Tensor{r(1, 1, 4, 2, 3, 2), r(2, 4, 1, 2, 2, 2), r(3, 2)} },
			func(in []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{tensor.ConvTranspose3d(in[0], in[1], in[2], tensor.ConvTransposeConfig{Stride: []int{2}, Groups: 2})}
			}},
		{"max_pool3d", func() []*tensor.Tensor { return []*tensor.Tensor{r(1, 2, 3, 5, 5, 4)} },
			func(in []*tensor.Tensor) []*tensor.Tensor {
				v, i := tensor.MaxPool3d(in[0], tensor.PoolConfig{Kernel: []int{2}, CeilMode: true})
				return []*tensor.Tensor{v, i}
			}},
		{"avg_pool3d", func() []*tensor.Tensor { return []*tensor.Tensor{r(1, 2, 3, 5, 5, 4)} },
			func(in []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{tensor.AvgPool3d(in[0], tensor.AvgPoolConfig{Kernel: []int{3}, Padding: []int{1}})}
			}},
	}
	release := func(ts ...*tensor.Tensor) {
		for _, x := range ts {
			x.Release()
		}
	}
	leaks := func(what string, mark uint64) {
		if err := dev.Sync(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for _, l := range sb.LiveSince(mark) {
			t.Errorf("%s: leaked %s", what, l)
		}
	}
	for _, o := range ops {
		in := o.inputs()
		mark := sb.Mark()
		release(o.f(in)...)
		leaks(o.name+" forward", mark)

		ad := make([]*tensor.Tensor, len(in))
		for i, x := range in {
			ad[i] = x.ToDevice(dev.Autodiff()).RequireGrad()
		}
		outs := o.f(ad)
		seed := tensor.OnesLike(outs[0])
		mark = sb.Mark()
		grads := outs[0].BackwardWith(seed)
		grads.Release()
		leaks(o.name+" backward", mark)
		release(seed)
		release(outs...)
		release(ad...)
		release(in...)
	}
}

// BenchmarkConv3dForwardBackward measures the composed 3-D convolution
// (a 16³ volume, 3×3×3 kernel) next to the 2-D one it runs on.
func BenchmarkConv3dForwardBackward(b *testing.B) {
	dev := tensor.CPU().Autodiff()
	const n, c, o, d, h, w = 2, 16, 16, 16, 16, 16
	x := tensor.Randn(dev, n, c, d, h, w).RequireGrad()
	k := tensor.Randn(dev, o, c, 3, 3, 3).RequireGrad()
	b.ResetTimer()
	for range b.N {
		tensor.Scope(func() {
			y := tensor.Conv3d(x, k, nil, tensor.ConvConfig{Padding: []int{1}})
			y.Backward()
		})
	}
	flops := 3 * 2 * float64(n*o*c*27*d*h*w)
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
