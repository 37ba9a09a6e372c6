package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// withConvWino runs f with convWinoMode set to mode ("", "off" or "force").
func withConvWino(t testing.TB, mode string, f func()) { withMode(&convWinoMode, mode, f) }

// winoGeometries are 3×3 stride-1 convolutions for the Winograd tests:
// same padding on even and odd planes, valid (no padding), padding 2,
// uneven padding, non-square planes, one-row and one-column outputs, a
// batch that several chunks share, a layer with as many channels as the
// path takes by default, and one it takes by default where its kernels
// run (enough tiles too).
var winoGeometries = []winoCase{
	{3, 5, 7, 8, 8, 1, 1, 8, 8},
	{2, 4, 6, 9, 7, 1, 1, 9, 7},
	{2, 3, 5, 10, 9, 0, 0, 8, 7},
	{2, 3, 4, 5, 6, 2, 2, 7, 8},
	{2, 6, 3, 7, 7, 2, 0, 6, 5},
	{1, 2, 3, 3, 3, 0, 0, 1, 1},
	{1, 3, 2, 1, 9, 1, 1, 1, 9},
	{37, 4, 5, 6, 6, 1, 1, 6, 6},
	{4, 32, 40, 4, 4, 1, 1, 4, 4},
	{4, 32, 32, 8, 8, 1, 1, 8, 8}, // the path's default choice where the kernels run
}

// winoCase is a convolution of n samples of c planes h×w into o planes
// oh×ow, padded pt rows above and pl columns left.
type winoCase struct{ n, c, o, h, w, pt, pl, oh, ow int }

// geometry returns c's 3×3 stride-1 geometry.
func (c winoCase) geometry() backends.ConvGeometry {
	return backends.ConvGeometry{N: c.n, C: c.c, H: c.h, W: c.w, KH: 3, KW: 3, StrideH: 1, StrideW: 1,
		PadTop: c.pt, PadLeft: c.pl, DilationH: 1, DilationW: 1, OutH: c.oh, OutW: c.ow}
}

// The Winograd path's forward pass and gradients match the
// definition, computed in float64, within 1e-6 of the sum of the terms'
// magnitudes, as the direct and GEMM paths are (the largest seen: 2.9e-7).
// The kernels are called directly, so that the test runs on this path
// whatever the choice; Conv2d and Conv2dInputGrad with the path forced
// must give the same bits (Conv2dWeightGrad too), and 1 and 3 workers
// too.
func TestConvWinogradMatchesDefinition(t *testing.T) {
	for _, c := range winoGeometries {
		g := c.geometry()
		t.Run(fmt.Sprintf("n%d_c%d_o%d_%dx%d_pad%d,%d", c.n, c.c, c.o, c.h, c.w, c.pt, c.pl), func(t *testing.T) {
			if !useConvWinoShape(g, c.o) {
				t.Fatalf("the Winograd path does not take %+v", g)
			}
			be := New(1)
			x := randView(be, backends.Float32, 11, g.N, g.C, g.H, g.W)
			w := randView(be, backends.Float32, 12, c.o, g.C, 3, 3)
			dy := randView(be, backends.Float32, 13, g.N, c.o, g.OutH, g.OutW)
			xs, ws, dys := buf(x).f32(), buf(w).f32(), buf(dy).f32()
			out := make([]float32, g.N*c.o*g.OutH*g.OutW)
			dx := make([]float32, g.N*g.C*g.H*g.W)
			dw := make([]float32, c.o*g.C*9)
			for _, v := range [][]float32{out, dx, dw} {
				for i := range v {
					v[i] = float32(math.NaN()) // every element must be overwritten
				}
			}
			convWinoForward(be, out, xs, ws, g, c.o, false)
			convWinoInputGrad(be, dx, dys, ws, g, c.o, false)
			convWinoWeightGrad(be, dw, dys, xs, g, c.o, false)
			x64, w64, dy64 := f32to64(xs), f32to64(ws), f32to64(dys)
			ax, aw, ady := absAll(x64), absAll(w64), absAll(dy64)
			wantDx, wantDw := naiveConvGrads(x64, w64, dy64, g, c.o)
			scaleDx, scaleDw := naiveConvGrads(ax, aw, ady, g, c.o)
			worst := 0.0
			for _, k := range []struct {
				what             string
				got              []float32
				want, magnitudes []float64
			}{
				{"output", out, naiveConv(x64, w64, g, c.o), naiveConv(ax, aw, g, c.o)},
				{"input gradient", dx, wantDx, scaleDx},
				{"weight gradient", dw, wantDw, scaleDw},
			} {
				for i, v := range k.got {
					e := math.Abs(float64(v)-k.want[i]) / (1 + k.magnitudes[i])
					if !(e <= 1e-6) {
						t.Fatalf("%s element %d = %v, want %v (magnitudes %v)", k.what, i, v, k.want[i], k.magnitudes[i])
					}
					worst = max(worst, e)
				}
			}
			t.Logf("largest error %.3g of the terms' magnitudes", worst)

			// the transforms' Go loops give the kernels' bits
			if winoKernels {
				goOut, goDx, goDw := make([]float32, len(out)), make([]float32, len(dx)), make([]float32, len(dw))
				winoGoForce = true
				convWinoForward(be, goOut, xs, ws, g, c.o, false)
				convWinoInputGrad(be, goDx, dys, ws, g, c.o, false)
				convWinoWeightGrad(be, goDw, dys, xs, g, c.o, false)
				winoGoForce = false
				if !slices.Equal(bits32(goOut), bits32(out)) || !slices.Equal(bits32(goDx), bits32(dx)) ||
					!slices.Equal(bits32(goDw), bits32(dw)) {
					t.Fatal("the transforms' Go loops and kernels give different results")
				}
			}

			// the same bits through the backend's methods, on 1 and 3 workers
			// (the chunks, and so the order of the weight gradient's sums,
			// depend only on the shapes)
			modes := []string{"force"}
			if useConvWino(g, c.o) {
				modes = append(modes, "") // chosen by default too
			}
			for _, mode := range modes {
				withConvWino(t, mode, func() {
					for _, workers := range []int{1, 3} {
						be := New(workers)
						x := randView(be, backends.Float32, 11, g.N, g.C, g.H, g.W)
						w := randView(be, backends.Float32, 12, c.o, g.C, 3, 3)
						dy := randView(be, backends.Float32, 13, g.N, c.o, g.OutH, g.OutW)
						got := backendConvs(t, be, x, w, dy, g, c.o, false)
						if !slices.Equal(bits32(got), bits32(slices.Concat(out, dx, dw))) {
							t.Fatalf("%d workers, mode %q: the backend's convolutions differ from the Winograd kernels", workers, mode)
						}
					}
				})
			}
		})
	}
}

// bits32 returns v's bit patterns (NaNs compare equal).
func bits32(v []float32) []uint32 {
	b := make([]uint32, len(v))
	for i, f := range v {
		b[i] = math.Float32bits(f)
	}
	return b
}

// useConvWinoShape reports whether the Winograd path can compute g (the
// choice with the path forced).
func useConvWinoShape(g backends.ConvGeometry, o int) (ok bool) {
	withMode(&convWinoMode, "force", func() { ok = useConvWino(g, o) })
	return ok
}

// The choice: where the kernels run, 3×3 stride-1 layers with at least
// convWinoMinChannels channels on both sides, convWinoMinTiles tiles in
// the batch and padding at most 2; never for other kernels, strides,
// dilations, or with the path off.
func TestConvWinogradChoice(t *testing.T) {
	base := backends.ConvGeometry{N: 4, C: 64, H: 8, W: 8, KH: 3, KW: 3, StrideH: 1, StrideW: 1,
		PadTop: 1, PadLeft: 1, DilationH: 1, DilationW: 1, OutH: 8, OutW: 8}
	if !winoKernels {
		if useConvWino(base, 64) {
			t.Error("taken by default without the kernels")
		}
		return
	}
	if !useConvWino(base, 64) {
		t.Error("not taken for a 64-channel 3×3 layer")
	}
	small := base
	small.N = 3 // 48 tiles
	if useConvWino(small, 64) || !useConvWinoShape(small, 64) {
		t.Error("too few tiles: taken by default, or not when forced")
	}
	if useConvWino(base, convWinoMinChannels-1) {
		t.Error("taken for too few output channels")
	}
	few := base
	few.C = convWinoMinChannels - 1
	if useConvWino(few, 64) || !useConvWinoShape(few, 64) {
		t.Error("few input channels: taken by default, or not when forced")
	}
	for _, change := range []func(g *backends.ConvGeometry){
		func(g *backends.ConvGeometry) { g.KH, g.OutH = 5, 6 },
		func(g *backends.ConvGeometry) { g.StrideH, g.OutH = 2, 4 },
		func(g *backends.ConvGeometry) { g.DilationW, g.OutW = 2, 6 },
		func(g *backends.ConvGeometry) { g.PadTop, g.OutH = 3, 10 },
	} {
		g := base
		change(&g)
		if useConvWinoShape(g, 64) {
			t.Errorf("taken for %+v", g)
		}
	}
	withConvWino(t, "off", func() {
		if useConvWino(base, 64) {
			t.Error("taken with the path off")
		}
	})
}

// Each transform's kernel gives its Go loops' bits, over lane counts
// around the vector's 16 (the masked tail), positive and negative strides
// (the flipped filters are read backwards), and values with cancelling
// sums, signed zeros and infinities.
func TestWinoTransformsMatchKernels(t *testing.T) {
	if !winoKernels {
		t.Skip("no Winograd transform kernels on this CPU or in this build")
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, x := range []*winoXform{&winoBT, &winoAT, &winoG, &winoA, &winoGT} {
		m, k := len(x.l), len(x.l[0])
		for _, n := range []int{1, 7, 15, 16, 17, 33, 64} {
			for _, neg := range []bool{false, true} {
				scs, dcs := n+1, n+2
				srs, drs := k*scs+3, m*dcs+5
				src := make([]float32, k*srs+8)
				for i := range src {
					switch r.IntN(20) {
					case 0:
						src[i] = float32(math.Copysign(0, -1))
					case 1:
						src[i] = float32(math.Inf(1 - 2*r.IntN(2)))
					default:
						src[i] = float32(r.NormFloat64() * math.Exp2(float64(r.IntN(9)-4)))
					}
				}
				s0 := 0
				if neg {
					s0, srs, scs = (k-1)*(srs+scs), -srs, -scs
				}
				got, want := make([]float32, m*drs+8), make([]float32, m*drs+8)
				x.run(got, 0, drs, dcs, src, s0, srs, scs, n)
				winoGoForce = true
				x.run(want, 0, drs, dcs, src, s0, srs, scs, n)
				winoGoForce = false
				if !slices.Equal(bits32(got), bits32(want)) {
					t.Fatalf("L = %v, n = %d, negative strides %v: the kernel differs from the Go loops", x.l, n, neg)
				}
			}
		}
	}
}

// matMul returns a·b for small dense matrices.
func matMul(a, b [][]float64) [][]float64 {
	c := make([][]float64, len(a))
	for i := range a {
		c[i] = make([]float64, len(b[0]))
		for j := range b[0] {
			for k := range b {
				c[i][j] += a[i][k] * b[k][j]
			}
		}
	}
	return c
}

// matT returns aᵀ.
func matT(a [][]float64) [][]float64 {
	t := make([][]float64, len(a[0]))
	for j := range t {
		t[j] = make([]float64, len(a))
		for i := range a {
			t[j][i] = a[i][j]
		}
	}
	return t
}

// winoMats are F(2×2, 3×3)'s Bᵀ, G and Aᵀ in float64, or with abs their
// entries' magnitudes.
func winoMats(abs bool) (bt, g, at [][]float64) {
	f := func(x *winoXform) [][]float64 {
		m := make([][]float64, len(x.l))
		for i, r := range x.l {
			m[i] = make([]float64, len(r))
			for j, v := range r {
				m[i][j] = float64(v)
				if abs {
					m[i][j] = math.Abs(m[i][j])
				}
			}
		}
		return m
	}
	return f(&winoBT), f(&winoG), f(&winoAT)
}

// winoRef64 is the Winograd forward pass in float64 over a convWino d
// (in: n samples of d.inC planes, w: [outC][inC][3][3]): with abs, on
// the magnitudes of the inputs, filters and transforms, which bounds Σ
// |M_ξ's terms| along each output's path.
func winoRef64(d convWino, n int, in, w []float64, abs bool) []float64 {
	bt, g, at := winoMats(abs)
	out := make([]float64, n*d.outC*d.outH*d.outW)
	u := make([][][][]float64, d.outC)
	for oc := range d.outC {
		u[oc] = make([][][]float64, d.inC)
		for ic := range d.inC {
			f := make([][]float64, 3)
			for r := range 3 {
				f[r] = w[(oc*d.inC+ic)*9+3*r:][:3]
			}
			u[oc][ic] = matMul(matMul(g, f), matT(g))
		}
	}
	for s := range n {
		for ty := range d.th {
			for tx := range d.tw {
				v := make([][][]float64, d.inC)
				for ic := range d.inC {
					t := make([][]float64, 4)
					for r := range 4 {
						t[r] = make([]float64, 4)
						for c := range 4 {
							ih, iw := 2*ty+r-d.top, 2*tx+c-d.left
							if ih >= 0 && ih < d.inH && iw >= 0 && iw < d.inW {
								t[r][c] = in[((s*d.inC+ic)*d.inH+ih)*d.inW+iw]
							}
						}
					}
					v[ic] = matMul(matMul(bt, t), matT(bt))
				}
				for oc := range d.outC {
					m := make([][]float64, 4)
					for i := range 4 {
						m[i] = make([]float64, 4)
						for ic := range d.inC {
							for j := range 4 {
								m[i][j] += u[oc][ic][i][j] * v[ic][i][j]
							}
						}
					}
					y := matMul(matMul(at, m), matT(at))
					for a := range 2 {
						for b := range 2 {
							oh, ow := 2*ty+a, 2*tx+b
							if oh < d.outH && ow < d.outW {
								out[((s*d.outC+oc)*d.outH+oh)*d.outW+ow] = y[a][b]
							}
						}
					}
				}
			}
		}
	}
	return out
}

// flipFilters returns w ([o][c][3][3]) as the input gradient's filters,
// [c][o][3][3] rotated by 180°.
func flipFilters(w []float64, o, c int) []float64 {
	f := make([]float64, len(w))
	for oc := range o {
		for ic := range c {
			for k := range 9 {
				f[(ic*o+oc)*9+k] = w[(oc*c+ic)*9+8-k]
			}
		}
	}
	return f
}

// The Winograd path with bfloat16 products (bfloat16 autocast): the
// forward pass and input gradient within 2^-7 of the Winograd sums'
// magnitudes of the exact results (each product's two operands rounded to
// bfloat16 errs by at most 2^-8 of it; the float32 sums and transforms
// add far less), the weight gradient within 2^-7 of the direct sums'
// magnitudes times 16 (the transformed tiles and gradients, at most 4 and
// 2.25 times their inputs, summed over 16 positions; a looser bound);
// most results differ from the float32 path's; 1 and 3 workers, and the
// BF16 methods where they choose the path, give the same bits.
func TestConvWinogradBF16(t *testing.T) {
	for _, c := range []winoCase{{3, 5, 7, 8, 8, 1, 1, 8, 8}, {2, 3, 5, 10, 9, 0, 0, 8, 7}, {4, 32, 32, 8, 8, 1, 1, 8, 8}} {
		g := c.geometry()
		be := New(1)
		x := randView(be, backends.Float32, 21, g.N, g.C, g.H, g.W)
		w := randView(be, backends.Float32, 22, c.o, g.C, 3, 3)
		dy := randView(be, backends.Float32, 23, g.N, c.o, g.OutH, g.OutW)
		xs, ws, dys := buf(x).f32(), buf(w).f32(), buf(dy).f32()
		run := func(workers int, bf16 bool) [][]float32 {
			be := New(workers)
			out := make([]float32, g.N*c.o*g.OutH*g.OutW)
			dx := make([]float32, g.N*g.C*g.H*g.W)
			dw := make([]float32, c.o*g.C*9)
			convWinoForward(be, out, xs, ws, g, c.o, bf16)
			convWinoInputGrad(be, dx, dys, ws, g, c.o, bf16)
			convWinoWeightGrad(be, dw, dys, xs, g, c.o, bf16)
			return [][]float32{out, dx, dw}
		}
		got, f32 := run(1, true), run(1, false)
		x64, w64, dy64 := f32to64(xs), f32to64(ws), f32to64(dys)
		ax, aw, ady := absAll(x64), absAll(w64), absAll(dy64)
		fwd := newConvWino(g.C, c.o, g.H, g.W, g.OutH, g.OutW, g.PadTop, g.PadLeft)
		bwd := newConvWino(c.o, g.C, g.OutH, g.OutW, g.H, g.W, 2-g.PadTop, 2-g.PadLeft)
		wantDx, wantDw := naiveConvGrads(x64, w64, dy64, g, c.o)
		_, scaleDw := naiveConvGrads(ax, aw, ady, g, c.o)
		scaleDw16 := make([]float64, len(scaleDw))
		for i, v := range scaleDw {
			scaleDw16[i] = 16 * v
		}
		for i, k := range []struct {
			what         string
			want, bounds []float64
		}{
			{"output", naiveConv(x64, w64, g, c.o), winoRef64(fwd, g.N, ax, aw, true)},
			{"input gradient", wantDx, winoRef64(bwd, g.N, ady, flipFilters(aw, c.o, g.C), true)},
			{"weight gradient", wantDw, scaleDw16},
		} {
			differ, worst := 0, 0.0
			for j, v := range got[i] {
				e := math.Abs(float64(v) - k.want[j])
				worst = max(worst, e/(0x1p-7*k.bounds[j]+1e-6))
				if !(e <= 0x1p-7*k.bounds[j]+1e-6) {
					t.Fatalf("%+v %s element %d = %v, want %v (bound %g)", c, k.what, j, v, k.want[j], 0x1p-7*k.bounds[j])
				}
				if v != f32[i][j] {
					differ++
				}
			}
			t.Logf("%+v %s: largest error %.3f of the bound", c, k.what, worst)
			if differ < len(got[i])/2 {
				t.Errorf("%+v %s: only %d of %d results differ from the float32 path's", c, k.what, differ, len(got[i]))
			}
		}
		if three := run(3, true); !slices.Equal(bits32(slices.Concat(three...)), bits32(slices.Concat(got...))) {
			t.Errorf("%+v: 3 workers give other bits than 1", c)
		}
		if !convBF16Wino(g, c.o) {
			continue
		}
		// through the BF16 methods, which choose the path here
		if !slices.Equal(bits32(backendConvs(t, be, x, w, dy, g, c.o, true)), bits32(slices.Concat(got...))) {
			t.Errorf("%+v: the BF16 methods differ from the Winograd path with bfloat16 products", c)
		}
	}
}

// backendConvs returns the output, input gradient and weight gradient of
// convolution g (o output channels) of x, w and dy through be's methods
// (the BF16 ones with bf16), one after another in one slice.
func backendConvs(t *testing.T, be *Backend, x, w, dy backends.View, g backends.ConvGeometry, o int, bf16 bool) []float32 {
	t.Helper()
	out := allocView(be, backends.Float32, g.N, o, g.OutH, g.OutW)
	dx := allocView(be, backends.Float32, g.N, g.C, g.H, g.W)
	dw := allocView(be, backends.Float32, o, g.C, 3, 3)
	if bf16 {
		be.Conv2dBF16(out, x, w, g)
		be.Conv2dInputGradBF16(dx, dy, w, g)
		be.Conv2dWeightGradBF16(dw, dy, x, g)
	} else {
		be.Conv2d(out, x, w, g)
		be.Conv2dInputGrad(dx, dy, w, g)
		be.Conv2dWeightGrad(dw, dy, x, g)
	}
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
	return slices.Concat(buf(out).f32(), buf(dx).f32(), buf(dw).f32())
}
