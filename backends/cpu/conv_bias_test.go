package cpu

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// Conv2dBias is Conv2d followed by the channel bias added once, bit for
// bit, on each of the forward paths: the direct one (which adds the bias
// as it copies each plane out), Winograd, the tap path and the GEMM paths
// on valid and on unfolded convolutions (which add it in a pass after), in
// float32 and float64, on 1 and 2 workers. Conv2dBiasAct's pre is
// Conv2dBias's result and its out Unary's ReLU or GELU of it, bit for bit.
func TestConv2dBiasMatchesConvThenAdd(t *testing.T) {
	mnist := backends.ConvGeometry{N: 20, C: 16, H: 13, W: 13, KH: 3, KW: 3, OutH: 11, OutW: 11}
	same := backends.ConvGeometry{N: 6, C: 24, H: 10, W: 10, KH: 3, KW: 3, PadTop: 1, PadLeft: 1, OutH: 10, OutW: 10}
	strided := backends.ConvGeometry{N: 5, C: 3, H: 9, W: 9, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadTop: 1, PadLeft: 1, OutH: 5, OutW: 5}
	for _, c := range []struct {
		name             string
		g                backends.ConvGeometry
		o                int
		direct, wino, tp string
	}{
		{"direct, valid (read in place)", mnist, 32, "force", "off", "off"},
		{"direct, padded, 7 channels", same, 7, "force", "off", "off"},
		{"direct, strided", strided, 9, "force", "off", "off"},
		{"GEMM path, valid", mnist, 32, "off", "off", "off"},
		{"GEMM path, unfolded", strided, 9, "off", "off", "off"},
		{"taps", same, 8, "off", "off", "force"},
		{"Winograd", same, 16, "off", "force", "off"},
	} {
		for _, dt := range []backends.DType{backends.Float32, backends.Float64} {
			for _, workers := range []int{1, 2} {
				g := c.g
				g.StrideH, g.StrideW = max(g.StrideH, 1), max(g.StrideW, 1)
				g.DilationH, g.DilationW = 1, 1
				be := New(workers)
				x := randView(be, dt, 1, g.N, g.C, g.H, g.W)
				w := randView(be, dt, 2, c.o, g.C, g.KH, g.KW)
				bias := randView(be, dt, 3, c.o)
				fused := allocView(be, dt, g.N, c.o, g.OutH, g.OutW)
				conv := allocView(be, dt, g.N, c.o, g.OutH, g.OutW)
				op := []backends.UnaryOp{backends.Relu, backends.Gelu}[workers-1]
				pre, act, want := allocView(be, dt, g.N, c.o, g.OutH, g.OutW), allocView(be, dt, g.N, c.o, g.OutH, g.OutW),
					allocView(be, dt, g.N, c.o, g.OutH, g.OutW)
				withConvDirect(t, c.direct, func() {
					withConvWino(t, c.wino, func() {
						withConvTaps(t, c.tp, func() {
							be.Conv2dBias(fused, x, w, bias, g)
							be.Conv2d(conv, x, w, g)
							be.Conv2dBiasAct(act, pre, x, w, bias, g, op)
							be.Unary(op, want, fused, 0, 0)
						})
					})
				})
				if err := be.Sync(); err != nil {
					t.Fatalf("%s, %s: %v", c.name, dt, err)
				}
				l := g.OutH * g.OutW
				for i := range g.N * c.o * l {
					oc := i / l % c.o
					var got, want uint64
					if dt == backends.Float32 {
						got = uint64(math.Float32bits(buf(fused).f32()[i]))
						want = uint64(math.Float32bits(buf(conv).f32()[i] + buf(bias).f32()[oc]))
					} else {
						got = math.Float64bits(buf(fused).f64()[i])
						want = math.Float64bits(buf(conv).f64()[i] + buf(bias).f64()[oc])
					}
					if got != want {
						t.Fatalf("%s, %s, %d workers: element %d (channel %d) has bits %x, want %x", c.name, dt, workers, i, oc, got, want)
					}
				}
				if !bytes.Equal(rawSnapshot(pre), rawSnapshot(fused)) || !bytes.Equal(rawSnapshot(act), rawSnapshot(want)) {
					t.Fatalf("%s, %s, %d workers: Conv2dBiasAct(%s) differs from Conv2dBias then Unary", c.name, dt, workers, op)
				}
			}
		}
	}
}

// Conv2dBias refuses a bias of the wrong length or dtype, and a
// non-float output, writing nothing; Conv2dBiasAct also an activation it
// does not fuse and an out that overlaps pre.
func TestConv2dBiasRefuses(t *testing.T) {
	be := New(1)
	f32 := backends.Float32
	g := backends.ConvGeometry{N: 2, C: 3, H: 6, W: 6, KH: 3, KW: 3, StrideH: 1, StrideW: 1, DilationH: 1, DilationW: 1, OutH: 4, OutW: 4}
	x, w := randView(be, f32, 1, 2, 3, 6, 6), randView(be, f32, 2, 5, 3, 3, 3)
	bias := randView(be, f32, 3, 5)
	both := allocView(be, f32, 2*5*4*4+1)
	pre := backends.View{Buf: both.Buf, DType: f32, Shape: []int{2, 5, 4, 4}, Strides: []int{80, 16, 4, 1}}
	overlap := pre
	overlap.Offset = 1
	withBias := func(b backends.View) func(out backends.View) {
		return func(out backends.View) { be.Conv2dBias(out, x, w, b, g) }
	}
	act := func(pre backends.View, op backends.UnaryOp) func(out backends.View) {
		return func(out backends.View) { be.Conv2dBiasAct(out, pre, x, w, bias, g, op) }
	}
	for _, c := range []struct {
		name, want string
		out        backends.View
		call       func(out backends.View)
	}{
		{"bias of the wrong length", "bias", allocView(be, f32, 2, 5, 4, 4), withBias(randView(be, f32, 3, 4))},
		{"bias of another dtype", "bias", allocView(be, f32, 2, 5, 4, 4), withBias(randView(be, backends.Float64, 3, 5))},
		{"out of the wrong shape", "out", allocView(be, f32, 2, 5, 4, 3), withBias(bias)},
		{"integer out", "dtype", allocView(be, backends.Int64, 2, 5, 4, 4), withBias(bias)},
		{"exp is not an activation it fuses", "activation exp", allocView(be, f32, 2, 5, 4, 4), act(allocView(be, f32, 2, 5, 4, 4), backends.Exp)},
		{"out of another shape than pre", "out", allocView(be, f32, 2, 5, 4, 3), act(allocView(be, f32, 2, 5, 4, 4), backends.Relu)},
		{"out overlapping pre", "overlap", overlap, act(pre, backends.Relu)},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := rawSnapshot(c.out)
			c.call(c.out)
			err := be.Sync()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got error %v, want one containing %q", err, c.want)
			}
			if !bytes.Equal(rawSnapshot(c.out), before) {
				t.Errorf("out was written")
			}
		})
	}
}
