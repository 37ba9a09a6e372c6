//go:build !purego

package cpu

import "github.com/kiln-ml/kiln/backends"

// maxPool2x2BlocksAVX2 pools blocks·8 outputs of one output row of a 2×2,
// stride 2, unpadded max pooling (fused_pool_amd64.s): output j takes the
// greatest of r0[2j], r0[2j+1], r1[2j], r1[2j+1] as maxPool2x2 does (the
// first NaN, else the earliest of equal values, ±0 equal), and its
// position pos[j%4] + 2·(j − j%4) + (0, 1, w or w+1 for the corner).
//
//go:noescape
func maxPool2x2BlocksAVX2(dst *float32, di *int64, r0, r1 *float32, blocks, w int, pos *[4]int64)

// vecMaxPool2x2AVX2 is maxPool2x2 for float32 with AVX2, reporting false
// where the CPU has no AVX2. Row tails shorter than a block are pooled
// from zero-padded copies.
func vecMaxPool2x2AVX2(dst []float32, di []int64, src []float32, w, oh, ow int) bool {
	if !hasAVX2 {
		return false
	}
	if oh == 0 || ow == 0 {
		return true
	}
	_, _ = dst[oh*ow-1], di[oh*ow-1]
	_ = src[(2*oh-1)*w+2*ow-1]
	blocks := ow / 8
	tail := ow - 8*blocks
	for i := range oh {
		r0, r1 := src[2*i*w:][:2*ow], src[(2*i+1)*w:][:2*ow]
		d, dIdx := dst[i*ow:][:ow], di[i*ow:][:ow]
		base := int64(2 * i * w)
		pos := [4]int64{base, base + 2, base + 4, base + 6}
		if blocks > 0 {
			maxPool2x2BlocksAVX2(&d[0], &dIdx[0], &r0[0], &r1[0], blocks, w, &pos)
		}
		if tail == 0 {
			continue
		}
		var t0, t1 [16]float32
		var td [8]float32
		var ti [8]int64
		c := 16 * blocks
		copy(t0[:], r0[c:])
		copy(t1[:], r1[c:])
		at := base + int64(c)
		pos = [4]int64{at, at + 2, at + 4, at + 6}
		maxPool2x2BlocksAVX2(&td[0], &ti[0], &t0[0], &t1[0], 1, w, &pos)
		copy(d[8*blocks:], td[:tail])
		copy(dIdx[8*blocks:], ti[:tail])
	}
	return true
}

// maxPool3x3s2BlocksAVX2 pools blocks·8 consecutive outputs of one output
// row of a 3×3, stride-2 max pooling whose windows lie inside the plane
// (fused_pool_amd64.s): r0, r1 and r2 point at the first window's top-left
// tap and the two below it, a row apart, and output j of block b takes the
// greatest of columns 16b + 2j + (0, 1, 2) of r0, r1 and r2, in that scan
// order, as maxPoolRowF32 does (the first NaN, else the earliest of equal
// values, ±0 equal); its position is base + 16b + at[3·ky + kx][l], l being
// output j's lane in the order 0 1 4 5 2 3 6 7 (poolLanes). It reads 17
// floats of each row a block.
//
//go:noescape
func maxPool3x3s2BlocksAVX2(dst *float32, di *int64, r0, r1, r2 *float32, blocks int, at *[9][8]int32, base int64)

// poolLanes is the output of each lane of maxPool3x3s2BlocksAVX2's
// registers until their last permutation.
var poolLanes = [8]int{0, 1, 4, 5, 2, 3, 6, 7}

// vecMaxPool3x3s2 pools one plane of 3×3 windows at stride 2 with AVX2,
// results as maxPoolPlaneF32's: the windows wholly inside the plane eight
// at a time by maxPool3x3s2BlocksAVX2 (a row's last block overlapping the
// one before it where the row is not a whole number of blocks), the rest
// by maxPoolRowF32; a window whose top or bottom row is in the padding
// reads another of its rows twice. It reports false, doing nothing, where the geometry is
// another, the CPU has no AVX2, or a row has fewer than eight such windows.
// ResNet's 32×32 planes (padding 1) pool 15 of a row's 16 outputs here.
func vecMaxPool3x3s2(dst []float32, di []int64, src []float32, g backends.ConvGeometry) bool {
	if !hasAVX2 || g.KH != 3 || g.KW != 3 || g.StrideH != 2 || g.StrideW != 2 || g.DilationH != 1 || g.DilationW != 1 {
		return false
	}
	// outputs lo to hi: x0 = 2·ox − pad ≥ 0 and x0 + 2 ≤ W − 1
	lo, hi := (g.PadLeft+1)/2, 0
	if r := g.W - 3 + g.PadLeft; r >= 0 {
		hi = min(r/2+1, g.OutW)
	}
	if hi-lo < 8 {
		return false
	}
	// at[e] is the positions table of windows whose rows are all inside
	// (e = 0), whose top row is in the padding (1: the kernel reads the
	// second row twice, a copy that never wins a tie), or whose bottom row
	// is (2: the second row twice, as the third)
	var at [3][9][8]int32
	for e, rows := range [3][3]int{{0, 1, 2}, {1, 1, 2}, {0, 1, 1}} {
		for t := range 9 {
			for l, j := range poolLanes {
				at[e][t][l] = int32((rows[t/3]-rows[0])*g.W + 2*j + t%3)
			}
		}
	}
	blocks := (hi - lo) / 8
	for oy := range g.OutH {
		y0 := 2*oy - g.PadTop
		e, r0, r1, r2 := 0, y0, y0+1, y0+2
		switch {
		case y0 == -1 && g.H >= 2:
			e, r0 = 1, 0
		case y0 >= 0 && y0+2 == g.H:
			e, r2 = 2, y0+1
		case y0 < 0 || y0+2 >= g.H:
			maxPoolRowF32(dst, di, src, g, oy, 0, g.OutW)
			continue
		}
		maxPoolRowF32(dst, di, src, g, oy, 0, lo)
		run := func(ox, n int) {
			x0, o := 2*ox-g.PadLeft, oy*g.OutW+ox
			_, _, _ = src[r2*g.W+x0+16*n], dst[o+8*n-1], di[o+8*n-1] // the last float read, the last outputs
			maxPool3x3s2BlocksAVX2(&dst[o], &di[o], &src[r0*g.W+x0], &src[r1*g.W+x0], &src[r2*g.W+x0], n, &at[e],
				int64(r0*g.W+x0))
		}
		run(lo, blocks)
		if (hi-lo)%8 != 0 {
			run(hi-8, 1)
		}
		maxPoolRowF32(dst, di, src, g, oy, hi, g.OutW)
	}
	return true
}
