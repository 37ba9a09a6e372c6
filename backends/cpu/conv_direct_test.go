package cpu

import (
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// withConvDirect runs f with the direct convolution path off, chosen where
// it pays (as by default on AVX2 machines), or forced wherever this build
// has its kernels (AVX-512 machines included).
func withConvDirect(t testing.TB, mode string, f func()) {
	t.Helper()
	kernels, force := convDirectKernels, convDirectForce
	defer func() { convDirectKernels, convDirectForce = kernels, force }()
	switch mode {
	case "off":
		convDirectKernels, convDirectForce = false, false
	case "auto":
		convDirectKernels, convDirectForce = true, false
	case "force":
		convDirectKernels, convDirectForce = true, true
	default:
		t.Fatalf("withConvDirect: mode %q", mode)
	}
	f()
}

// The direct path's float32 output and gradients match the definition
// (float64) to within float32 rounding of sums of |terms|, for padded,
// unpadded, dilated, asymmetric and odd-sized stride-1 convolutions, with
// output and input channel counts around its 6- and 4-channel tiles and
// 4-row dot tiles, and with batches that leave a short last chunk.
func TestConvDirectMatchesDefinition(t *testing.T) {
	if !convDirectUsable {
		t.Skip("no direct convolution kernels in this build or on this CPU")
	}
	cases := []struct {
		name string
		g    backends.ConvGeometry
		o    int
	}{
		{"mnist conv2, valid", backends.ConvGeometry{N: 20, C: 16, H: 13, W: 13, KH: 3, KW: 3, OutH: 11, OutW: 11}, 32},
		{"same 3x3, odd channels", backends.ConvGeometry{N: 11, C: 5, H: 8, W: 7, KH: 3, KW: 3, PadTop: 1, PadLeft: 1, OutH: 8, OutW: 7}, 7},
		{"deep layer 2x2 same", backends.ConvGeometry{N: 17, C: 9, H: 2, W: 2, KH: 3, KW: 3, PadTop: 1, PadLeft: 1, OutH: 2, OutW: 2}, 13},
		{"1x1 input, 3x3 window", backends.ConvGeometry{N: 3, C: 4, H: 1, W: 1, KH: 3, KW: 3, PadTop: 1, PadLeft: 1, OutH: 1, OutW: 1}, 5},
		{"pointwise", backends.ConvGeometry{N: 9, C: 6, H: 5, W: 6, KH: 1, KW: 1, OutH: 5, OutW: 6}, 2},
		{"dilated, asymmetric padding", backends.ConvGeometry{N: 4, C: 3, H: 9, W: 10, KH: 3, KW: 2, PadTop: 2, PadLeft: 0, DilationH: 2, DilationW: 3, OutH: 9, OutW: 7}, 4},
		{"padding wider than the window's reach", backends.ConvGeometry{N: 2, C: 2, H: 4, W: 3, KH: 2, KW: 2, PadTop: 2, PadLeft: 3, OutH: 7, OutW: 8}, 3},
		{"7x7 window, long rows", backends.ConvGeometry{N: 2, C: 3, H: 20, W: 37, KH: 7, KW: 7, PadTop: 3, PadLeft: 3, OutH: 20, OutW: 37}, 8},
		{"many summed rows (K blocks), 6-row tiles", backends.ConvGeometry{N: 3, C: 40, H: 5, W: 5, KH: 3, KW: 3, PadTop: 1, PadLeft: 1, OutH: 5, OutW: 5}, 6},
		// one-dimensional (Conv1d): a sample's positions rounded up to
		// whole tiles reach past the next sample, so the last chunks must
		// not read the input in place (they read past its end once)
		{"one-dimensional, short rows", backends.ConvGeometry{N: 2, C: 2, H: 1, W: 8, KH: 1, KW: 3, OutH: 1, OutW: 6}, 4},
		{"one-dimensional, more samples", backends.ConvGeometry{N: 5, C: 3, H: 1, W: 9, KH: 1, KW: 3, OutH: 1, OutW: 7}, 6},
		{"many summed rows (K blocks), 4-row tiles", backends.ConvGeometry{N: 3, C: 40, H: 5, W: 5, KH: 3, KW: 3, PadTop: 1, PadLeft: 1, OutH: 5, OutW: 5}, 8},
		// channel tiles: rows of 14 positions (two runs of 7), 20 input
		// channels (two panels of 16 lanes, the second partly filled), an
		// even number of taps (the scatter's pairs only)
		{"valid, 14-wide rows, 20 channels", backends.ConvGeometry{N: 3, C: 20, H: 16, W: 16, KH: 3, KW: 3, OutH: 14, OutW: 14}, 33},
		{"valid 2x2 window", backends.ConvGeometry{N: 4, C: 16, H: 7, W: 9, KH: 2, KW: 2, OutH: 6, OutW: 8}, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.g
			g.StrideH, g.StrideW = 1, 1
			g.DilationH, g.DilationW = max(g.DilationH, 1), max(g.DilationW, 1)
			withConvDirect(t, "force", func() {
				if !useConvDirect(g, tc.o, g.OutH, g.OutW, false) || !useConvDirect(g, g.C, g.H, g.W, false) {
					t.Fatal("the direct path does not take it")
				}
				// the input gradient framed and in row passes, the forward
				// pass and the weight gradient in position or channel tiles
				for _, rows := range []string{"off", "force"} {
					withMode(&convChannelsMode, map[string]string{"off": "force", "force": "off"}[rows], func() {
						withConvRows(t, rows, func() { checkConvFloat32(t, g, tc.o) })
					})
				}
			})
		})
	}
}

// withChannels returns f run with convChannelsMode set to mode.
func withChannels(mode string, f func()) func() {
	return func() { withMode(&convChannelsMode, mode, f) }
}

// withConvRows runs f with convRowsMode set to mode.
func withConvRows(t testing.TB, mode string, f func()) { withMode(&convRowsMode, mode, f) }

// The direct input gradient takes the row passes where they cost less:
// the MNIST CNN's second layer (three passes of 6 tiles of 96 terms
// instead of 9 tiles of 288), not ResNet-18's 16×16 layers (34 tiles of
// 192 terms instead of 12 of 576, measured slower).
func TestConvRowsCost(t *testing.T) {
	mnist := backends.ConvGeometry{N: 128, C: 16, H: 13, W: 13, KH: 3, KW: 3, StrideH: 1, StrideW: 1,
		DilationH: 1, DilationW: 1, OutH: 11, OutW: 11}
	if rows, framed := convRowsCost(mnist, 32); rows != 3*6*(96+8) || framed != 9*(288+16) {
		t.Errorf("MNIST conv2: cost %d in row passes, %d framed; want %d, %d", rows, framed, 3*6*(96+8), 9*(288+16))
	}
	if !useConvRows(mnist, 32) {
		t.Error("MNIST conv2: the row passes are not taken")
	}
	same := backends.ConvGeometry{N: 32, C: 64, H: 16, W: 16, KH: 3, KW: 3, StrideH: 1, StrideW: 1,
		PadTop: 1, PadLeft: 1, DilationH: 1, DilationW: 1, OutH: 16, OutW: 16}
	if useConvRows(same, 64) {
		t.Error("ResNet-18's 16×16 layer: the row passes are taken")
	}
}

// On an AVX2 machine the GEMM path computes the float32 weight gradient
// as dw (not dwᵀ) where O ≤ C·KH·KW; both orientations, and the convolutions
// the direct path leaves to the GEMM path, match the definition.
func TestConvGEMMPathFloat32MatchesDefinition(t *testing.T) {
	cases := []struct {
		name string
		g    backends.ConvGeometry
		o    int
	}{
		{"strided, fewer outputs than rows", backends.ConvGeometry{N: 5, C: 3, H: 9, W: 9, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadTop: 1, PadLeft: 1, OutH: 5, OutW: 5}, 8},
		{"strided pointwise, more outputs than rows", backends.ConvGeometry{N: 7, C: 4, H: 6, W: 6, KH: 1, KW: 1, StrideH: 2, StrideW: 2, OutH: 3, OutW: 3}, 9},
		{"deep same layer", backends.ConvGeometry{N: 16, C: 8, H: 4, W: 4, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadTop: 1, PadLeft: 1, OutH: 4, OutW: 4}, 12},
		{"dilated same layer", backends.ConvGeometry{N: 3, C: 3, H: 9, W: 6, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadTop: 2, PadLeft: 2, DilationH: 2, DilationW: 2, OutH: 9, OutW: 6}, 5},
	}
	for _, tc := range cases {
		for _, mode := range []string{"off", "auto"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				g := tc.g
				g.DilationH, g.DilationW = max(g.DilationH, 1), max(g.DilationW, 1)
				withConvDirect(t, mode, func() {
					if useConvDirect(g, tc.o, g.OutH, g.OutW, false) || useConvDirect(g, g.C, g.H, g.W, false) {
						t.Fatal("the direct path takes it")
					}
					checkConvFloat32(t, g, tc.o)
				})
			})
		}
	}
}

// checkConvFloat32 runs convolution g's three passes in float32 on two
// workers and compares them with the definition in float64: each element
// within 1e-6 of 1 + the sum of its terms' magnitudes.
func checkConvFloat32(t *testing.T, g backends.ConvGeometry, o int) {
	t.Helper()
	checkConvPasses(t, New(2), g, o, f32to64, func(be *Backend, out, dx, dw, x, w, dy backends.View) {
		be.Conv2d(out, x, w, g)
		be.Conv2dInputGrad(dx, dy, w, g)
		be.Conv2dWeightGrad(dw, dy, x, g)
	})
}

// checkConvPasses runs the three passes of convolution g with o output
// channels through run on be, over operands seeded 1 (x), 2 (w) and 3
// (dy), every element of the results first set to a value they must
// overwrite, and compares each element with the definition in float64
// applied to the operands as round widens them (exactly, or rounded to
// bfloat16 first): within 1e-6 of 1 + the sum of its terms' magnitudes.
// It returns x, w and the results (output, input and weight gradients).
func checkConvPasses(t *testing.T, be *Backend, g backends.ConvGeometry, o int, round func([]float32) []float64,
	run func(be *Backend, out, dx, dw, x, w, dy backends.View)) (x, w backends.View, got [][]float32) {
	t.Helper()
	x = randView(be, backends.Float32, 1, g.N, g.C, g.H, g.W)
	w = randView(be, backends.Float32, 2, o, g.C, g.KH, g.KW)
	dy := randView(be, backends.Float32, 3, g.N, o, g.OutH, g.OutW)
	out := allocView(be, backends.Float32, g.N, o, g.OutH, g.OutW)
	dx := allocView(be, backends.Float32, g.N, g.C, g.H, g.W)
	dw := allocView(be, backends.Float32, o, g.C, g.KH, g.KW)
	got = [][]float32{buf(out).f32(), buf(dx).f32(), buf(dw).f32()}
	for i, v := range got {
		for j := range v {
			v[j] = float32(i + 7) // every element must be overwritten
		}
	}
	run(be, out, dx, dw, x, w, dy)
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
	x64, w64, dy64 := round(buf(x).f32()), round(buf(w).f32()), round(buf(dy).f32())
	ax, aw, ady := absAll(x64), absAll(w64), absAll(dy64)
	wantDx, wantDw := naiveConvGrads(x64, w64, dy64, g, o)
	scaleDx, scaleDw := naiveConvGrads(ax, aw, ady, g, o)
	for r, c := range []struct {
		what             string
		want, magnitudes []float64
	}{
		{"output", naiveConv(x64, w64, g, o), naiveConv(ax, aw, g, o)},
		{"input gradient", wantDx, scaleDx},
		{"weight gradient", wantDw, scaleDw},
	} {
		for i, v := range got[r] {
			if d := math.Abs(float64(v) - c.want[i]); d > 1e-6*(1+c.magnitudes[i]) {
				t.Fatalf("%d workers: %s element %d = %v, want %v", be.workers, c.what, i, v, c.want[i])
			}
		}
	}
	return x, w, got
}

// The direct path's gradients sum over the batch chunk by chunk, chunks
// fixed by the shapes: any number of workers gives the same bits.
func TestConvDirectIndependentOfWorkers(t *testing.T) {
	if !convDirectUsable {
		t.Skip("no direct convolution kernels in this build or on this CPU")
	}
	g := backends.ConvGeometry{N: 37, C: 6, H: 9, W: 9, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadTop: 1, PadLeft: 1,
		DilationH: 1, DilationW: 1, OutH: 9, OutW: 9}
	o := 10
	withConvDirect(t, "force", func() {
		run := func(workers int) [][]float32 {
			be := New(workers)
			x := randView(be, backends.Float32, 1, g.N, g.C, g.H, g.W)
			w := randView(be, backends.Float32, 2, o, g.C, g.KH, g.KW)
			dy := randView(be, backends.Float32, 3, g.N, o, g.OutH, g.OutW)
			out := allocView(be, backends.Float32, g.N, o, g.OutH, g.OutW)
			dx := allocView(be, backends.Float32, g.N, g.C, g.H, g.W)
			dw := allocView(be, backends.Float32, o, g.C, g.KH, g.KW)
			be.Conv2d(out, x, w, g)
			be.Conv2dInputGrad(dx, dy, w, g)
			be.Conv2dWeightGrad(dw, dy, x, g)
			return [][]float32{buf(out).f32(), buf(dx).f32(), buf(dw).f32()}
		}
		for _, rows := range []string{"off", "force"} { // the input gradient framed and in row passes
			withConvRows(t, rows, func() {
				one := run(1)
				for _, workers := range []int{2, 3} {
					got := run(workers)
					for r, name := range []string{"output", "input gradient", "weight gradient"} {
						for i := range got[r] {
							if math.Float32bits(got[r][i]) != math.Float32bits(one[r][i]) {
								t.Fatalf("rows %s, %d workers: %s element %d = %v, %v with one", rows, workers, name, i, got[r][i], one[r][i])
							}
						}
					}
				}
			})
		}
	})
}

func f32to64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func absAll(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = math.Abs(x)
	}
	return out
}

// copyRows copies exactly the rows' elements, for rows shorter than,
// as long as and longer than its 8-element moves, and leaves the gaps
// between the destination rows alone.
func TestCopyRows(t *testing.T) {
	for _, n := range []int{1, 7, 8, 11, 16, 17, 37, 70} {
		for _, rows := range []int{1, 3} {
			srcStride, dstStride := n+5, n+3
			src := make([]float32, (rows-1)*srcStride+n)
			for i := range src {
				src[i] = float32(i + 1)
			}
			dst := make([]float32, (rows-1)*dstStride+n+4)
			copyRows(dst, src, rows, n, dstStride, srcStride)
			for i, v := range dst {
				r, c := i/dstStride, i%dstStride
				want := float32(0)
				if r < rows && c < n {
					want = src[r*srcStride+c]
				}
				if v != want {
					t.Fatalf("n %d, %d rows: dst[%d] = %v, want %v", n, rows, i, v, want)
				}
			}
		}
	}
}

// The direct path reads a strided convolution's input as phase planes:
// its output and weight gradient match the definition for ResNet-18's
// stem (7×7, stride 2), a strided 3×3 layer, uneven strides and dilation,
// and a batch that leaves a short last chunk.
func TestConvDirectStridedMatchesDefinition(t *testing.T) {
	if !convDirectUsable {
		t.Skip("no direct convolution kernels in this build or on this CPU")
	}
	cases := []struct {
		name string
		g    backends.ConvGeometry
		o    int
	}{
		{"stem 7x7 stride 2", backends.ConvGeometry{N: 3, C: 3, H: 20, W: 18, KH: 7, KW: 7, StrideH: 2, StrideW: 2,
			PadTop: 3, PadLeft: 3, OutH: 10, OutW: 9}, 8},
		{"3x3 stride 2, odd channels", backends.ConvGeometry{N: 11, C: 5, H: 16, W: 16, KH: 3, KW: 3, StrideH: 2, StrideW: 2,
			PadTop: 1, PadLeft: 1, OutH: 8, OutW: 8}, 7},
		{"strides 3 and 2, dilated", backends.ConvGeometry{N: 4, C: 2, H: 17, W: 13, KH: 2, KW: 3, StrideH: 3, StrideW: 2,
			DilationH: 2, PadTop: 2, PadLeft: 0, OutH: 6, OutW: 6}, 6},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.g
			g.DilationH, g.DilationW = max(g.DilationH, 1), max(g.DilationW, 1)
			withConvDirect(t, "force", func() {
				if !useConvDirect(g, tc.o, g.OutH, g.OutW, false) {
					t.Fatal("the direct path does not take it")
				}
				checkConvFloat32(t, g, tc.o)
			})
		})
	}
}

// The direct forward pass makes the GEMM path's sums in its order (one
// chain of fused multiply-adds over (c, ki, kj) per element), bit for bit,
// strided or not, read in place or padded: tensor's fused convolution must
// equal the composed one (Im2Col and a matrix product) exactly. That holds
// where the direct path is chosen, CPUs with AVX2 and no AVX-512, whose
// GEMM runs the AVX2 micro-kernel; forced on an AVX-512 machine, whose
// GEMM and dot-tile paths have their own kernels, the two agree within
// rounding.
func TestConvDirectForwardMatchesGEMMPath(t *testing.T) {
	if !convDirectUsable {
		t.Skip("no direct convolution kernels in this build or on this CPU")
	}
	exact := convDirectKernels
	for _, g := range []backends.ConvGeometry{
		{N: 9, C: 16, H: 13, W: 13, KH: 3, KW: 3, OutH: 11, OutW: 11},
		{N: 5, C: 40, H: 6, W: 7, KH: 3, KW: 3, PadTop: 1, PadLeft: 1, OutH: 6, OutW: 7},
		{N: 3, C: 3, H: 20, W: 18, KH: 7, KW: 7, StrideH: 2, StrideW: 2, PadTop: 3, PadLeft: 3, OutH: 10, OutW: 9},
		{N: 4, C: 33, H: 16, W: 16, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadTop: 1, PadLeft: 1, OutH: 8, OutW: 8},
	} {
		g.StrideH, g.StrideW = max(g.StrideH, 1), max(g.StrideW, 1)
		g.DilationH, g.DilationW = 1, 1
		o := 10
		be := New(2)
		x := randView(be, backends.Float32, 1, g.N, g.C, g.H, g.W)
		w := randView(be, backends.Float32, 2, o, g.C, g.KH, g.KW)
		var outs [2][]float32
		for i, mode := range []string{"off", "force"} {
			withConvDirect(t, mode, func() {
				withConvTaps(t, "off", func() {
					out := allocView(be, backends.Float32, g.N, o, g.OutH, g.OutW)
					be.Conv2d(out, x, w, g)
					outs[i] = buf(out).f32()
				})
			})
		}
		for i := range outs[0] {
			a, b := outs[0][i], outs[1][i]
			same := math.Float32bits(a) == math.Float32bits(b)
			if !exact {
				same = math.Abs(float64(a-b)) <= 1e-4*max(1, math.Abs(float64(a)))
			}
			if !same {
				t.Fatalf("%+v: element %d = %v on the direct path, %v on the GEMM path (bit for bit: %v)", g, i, b, a, exact)
			}
		}
	}
}

// The direct path takes ResNet-18's stem (7×7, stride 2 on 64×64 maps)
// forward and backward, and a strided 16×16 → 8×8 layer's forward pass
// but not its weight gradient, whose dot products span too few positions.
func TestConvDirectStridedChoice(t *testing.T) {
	if !convDirectUsable {
		t.Skip("no direct convolution kernels in this build or on this CPU")
	}
	stem := backends.ConvGeometry{N: 32, C: 3, H: 64, W: 64, KH: 7, KW: 7, StrideH: 2, StrideW: 2, PadTop: 3, PadLeft: 3,
		DilationH: 1, DilationW: 1, OutH: 32, OutW: 32}
	l2 := backends.ConvGeometry{N: 32, C: 64, H: 16, W: 16, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadTop: 1, PadLeft: 1,
		DilationH: 1, DilationW: 1, OutH: 8, OutW: 8}
	withConvDirect(t, "auto", func() {
		for _, c := range []struct {
			name string
			g    backends.ConvGeometry
			o    int
			dots bool
			want bool
		}{
			{"stem forward", stem, 64, false, true},
			{"stem weight gradient", stem, 64, true, true},
			{"16×16 → 8×8 forward", l2, 128, false, true},
			{"16×16 → 8×8 weight gradient", l2, 128, true, false},
		} {
			if got := useConvDirect(c.g, c.o, c.g.OutH, c.g.OutW, c.dots); got != c.want {
				t.Errorf("%s: useConvDirect = %v, want %v", c.name, got, c.want)
			}
		}
	})
}

// The direct weight gradient's two shapes of dot tiles (3 gradient rows ×
// 4 unfolded rows, or 4 × 3) give the same bits, with channel and row
// counts that leave partial tiles either way; the choice takes 4 × 3 on
// the MNIST CNN's second layer (32 channels, 144 rows), which it fills.
func TestConvDotOrientations(t *testing.T) {
	if !convDirectUsable {
		t.Skip("no direct convolution kernels in this build or on this CPU")
	}
	if convDotByRows(32, 144) || !convDotByRows(33, 144) {
		t.Errorf("convDotByRows(32, 144) = %v, (33, 144) = %v; want false, true", convDotByRows(32, 144), convDotByRows(33, 144))
	}
	for _, c := range []struct {
		g backends.ConvGeometry
		o int
	}{
		{backends.ConvGeometry{N: 20, C: 16, H: 13, W: 13, KH: 3, KW: 3, OutH: 11, OutW: 11}, 32},
		{backends.ConvGeometry{N: 7, C: 5, H: 8, W: 7, KH: 3, KW: 3, PadTop: 1, PadLeft: 1, OutH: 8, OutW: 7}, 7},
		{backends.ConvGeometry{N: 9, C: 2, H: 6, W: 9, KH: 1, KW: 2, OutH: 6, OutW: 8}, 5},
	} {
		g := c.g
		g.StrideH, g.StrideW, g.DilationH, g.DilationW = 1, 1, 1, 1
		be := New(2)
		x := randView(be, backends.Float32, 1, g.N, g.C, g.H, g.W)
		dy := randView(be, backends.Float32, 2, g.N, c.o, g.OutH, g.OutW)
		var dws [2][]float32
		for i, mode := range []string{"3x4", "4x3"} {
			withConvDirect(t, "force", func() {
				withMode(&convDotRows, mode, withChannels("off", func() {
					dw := allocView(be, backends.Float32, c.o, g.C, g.KH, g.KW)
					be.Conv2dWeightGrad(dw, dy, x, g)
					dws[i] = buf(dw).f32()
				}))
			})
		}
		if err := be.Sync(); err != nil {
			t.Fatal(err)
		}
		for i := range dws[0] {
			if math.Float32bits(dws[0][i]) != math.Float32bits(dws[1][i]) {
				t.Fatalf("%+v, %d channels: weight %d = %v with 3×4 tiles, %v with 4×3", g, c.o, i, dws[0][i], dws[1][i])
			}
		}
	}
}
