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
			convWinoForward(be, out, xs, ws, g, c.o)
			convWinoInputGrad(be, dx, dys, ws, g, c.o)
			convWinoWeightGrad(be, dw, dys, xs, g, c.o)
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
				convWinoForward(be, goOut, xs, ws, g, c.o)
				convWinoInputGrad(be, goDx, dys, ws, g, c.o)
				convWinoWeightGrad(be, goDw, dys, xs, g, c.o)
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
						o := allocView(be, backends.Float32, g.N, c.o, g.OutH, g.OutW)
						d := allocView(be, backends.Float32, g.N, g.C, g.H, g.W)
						dwv := allocView(be, backends.Float32, c.o, g.C, 3, 3)
						be.Conv2d(o, x, w, g)
						be.Conv2dInputGrad(d, dy, w, g)
						be.Conv2dWeightGrad(dwv, dy, x, g)
						if err := be.Sync(); err != nil {
							t.Fatal(err)
						}
						if !slices.Equal(bits32(buf(o).f32()), bits32(out)) || !slices.Equal(bits32(buf(d).f32()), bits32(dx)) ||
							!slices.Equal(bits32(buf(dwv).f32()), bits32(dw)) {
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
