//go:build !purego

package cpu

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
