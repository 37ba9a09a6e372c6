package cpu

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// The forward pass in channel tiles gives the position tiles' bits, with
// and without a bias and an activation (Conv2d, Conv2dBias, Conv2dBiasAct),
// on 1 and 2 workers: the MNIST CNN's second layer (read in place, one
// 11-position tile a row), padded layers (copied into padded chunks),
// rows split into several tiles (26 = 9 + 9 + 8 positions) and rows
// longer than the scratch holds twice (one row a group), output channels
// that are not a multiple of 32, a strided and a dilated layer, and
// sums of several K blocks (more than gemmKC terms).
func TestConvChannelsMatchPositionTiles(t *testing.T) {
	if !convChannelKernels {
		t.Skip("no channel tiles in this build or on this CPU")
	}
	cases := []struct {
		name string
		g    backends.ConvGeometry
		o    int
	}{
		{"mnist conv2", backends.ConvGeometry{N: 20, C: 16, H: 13, W: 13, KH: 3, KW: 3, OutH: 11, OutW: 11}, 32},
		{"padded, 7 channels", backends.ConvGeometry{N: 6, C: 5, H: 10, W: 10, KH: 3, KW: 3, PadTop: 1, PadLeft: 1, OutH: 10, OutW: 10}, 7},
		{"26-wide rows, 40 channels", backends.ConvGeometry{N: 3, C: 2, H: 28, W: 28, KH: 3, KW: 3, OutH: 26, OutW: 26}, 40},
		{"200-wide rows", backends.ConvGeometry{N: 2, C: 3, H: 4, W: 202, KH: 3, KW: 3, OutH: 2, OutW: 200}, 33},
		{"strided", backends.ConvGeometry{N: 5, C: 3, H: 9, W: 9, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadTop: 1, PadLeft: 1, OutH: 5, OutW: 5}, 9},
		{"dilated, asymmetric", backends.ConvGeometry{N: 4, C: 3, H: 9, W: 10, KH: 3, KW: 2, PadTop: 2, DilationH: 2, DilationW: 3, OutH: 9, OutW: 7}, 64},
		{"K blocks", backends.ConvGeometry{N: 3, C: 40, H: 7, W: 7, KH: 3, KW: 3, PadTop: 1, PadLeft: 1, OutH: 7, OutW: 7}, 32},
	}
	for _, c := range cases {
		for _, workers := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/workers=%d", c.name, workers), func(t *testing.T) {
				g := c.g
				g.StrideH, g.StrideW = max(g.StrideH, 1), max(g.StrideW, 1)
				g.DilationH, g.DilationW = max(g.DilationH, 1), max(g.DilationW, 1)
				be := New(workers)
				f32 := backends.Float32
				x := randView(be, f32, 1, g.N, g.C, g.H, g.W)
				w := randView(be, f32, 2, c.o, g.C, g.KH, g.KW)
				bias := randView(be, f32, 3, c.o)
				out := func() backends.View { return allocView(be, f32, g.N, c.o, g.OutH, g.OutW) }
				run := func(mode string) (conv, fused, pre, act backends.View) {
					conv, fused, pre, act = out(), out(), out(), out()
					withConvDirect(t, "force", func() {
						withMode(&convChannelsMode, mode, func() {
							d := newConvDirectStrided(g.N, g.C, c.o, g.KH, g.KW, g.DilationH, g.DilationW, g.OutH, g.OutW, g.StrideH, g.StrideW)
							if useConvChannels(d) != (mode == "force") {
								t.Fatalf("mode %s: useConvChannels is %v", mode, !(mode == "force"))
							}
							be.Conv2d(conv, x, w, g)
							be.Conv2dBias(fused, x, w, bias, g)
							be.Conv2dBiasAct(act, pre, x, w, bias, g, backends.Gelu)
						})
					})
					if err := be.Sync(); err != nil {
						t.Fatal(err)
					}
					return
				}
				c0, f0, p0, a0 := run("off")
				c1, f1, p1, a1 := run("force")
				for _, v := range []struct {
					name       string
					tiles, pos backends.View
				}{{"Conv2d", c1, c0}, {"Conv2dBias", f1, f0}, {"Conv2dBiasAct's pre", p1, p0}, {"Conv2dBiasAct's out", a1, a0}} {
					got, want := buf(v.tiles).f32(), buf(v.pos).f32()
					if !bytes.Equal(rawSnapshot(v.tiles), rawSnapshot(v.pos)) {
						for i := range want {
							if got[i] != want[i] {
								t.Fatalf("%s: element %d is %v in channel tiles, %v in position tiles", v.name, i, got[i], want[i])
							}
						}
					}
				}
			})
		}
	}
}
