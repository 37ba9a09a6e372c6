// Portable Go micro-kernels for gemm.go, unrolled mechanically: MR×NR
// accumulators in locals, k unrolled U times. The only bounds checks are the
// ones at entry (go build -gcflags=-d=ssa/check_bce shows none in the loops).

package cpu

import "unsafe"

// microF32x2x4 is the portable 2×4 float32 micro-kernel, unrolled 4× over k.
func microF32x2x4(kc int, a, b, c []float32) {
	c = c[:8]
	if kc <= 0 {
		clear(c)
		return
	}
	_ = a[kc*2-1]
	_ = b[kc*4-1]
	pa, pb := unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0])
	var c00, c01, c02, c03 float32
	var c10, c11, c12, c13 float32
	var a0, a1, b0, b1, b2, b3 float32
	// pointers advance only while another step follows, so they never
	// leave the panels
	for n := kc / 4; n > 0; {
		av := (*[8]float32)(pa)
		bv := (*[16]float32)(pb)
		a0 = av[0]
		a1 = av[1]
		b0 = bv[0]
		c00 += a0 * b0
		c10 += a1 * b0
		b1 = bv[1]
		c01 += a0 * b1
		c11 += a1 * b1
		b2 = bv[2]
		c02 += a0 * b2
		c12 += a1 * b2
		b3 = bv[3]
		c03 += a0 * b3
		c13 += a1 * b3
		a0 = av[2]
		a1 = av[3]
		b0 = bv[4]
		c00 += a0 * b0
		c10 += a1 * b0
		b1 = bv[5]
		c01 += a0 * b1
		c11 += a1 * b1
		b2 = bv[6]
		c02 += a0 * b2
		c12 += a1 * b2
		b3 = bv[7]
		c03 += a0 * b3
		c13 += a1 * b3
		a0 = av[4]
		a1 = av[5]
		b0 = bv[8]
		c00 += a0 * b0
		c10 += a1 * b0
		b1 = bv[9]
		c01 += a0 * b1
		c11 += a1 * b1
		b2 = bv[10]
		c02 += a0 * b2
		c12 += a1 * b2
		b3 = bv[11]
		c03 += a0 * b3
		c13 += a1 * b3
		a0 = av[6]
		a1 = av[7]
		b0 = bv[12]
		c00 += a0 * b0
		c10 += a1 * b0
		b1 = bv[13]
		c01 += a0 * b1
		c11 += a1 * b1
		b2 = bv[14]
		c02 += a0 * b2
		c12 += a1 * b2
		b3 = bv[15]
		c03 += a0 * b3
		c13 += a1 * b3
		n--
		if n == 0 && kc%4 == 0 {
			break
		}
		pa = unsafe.Add(pa, 32)
		pb = unsafe.Add(pb, 64)
	}
	for r := kc % 4; r > 0; {
		av := (*[2]float32)(pa)
		bv := (*[4]float32)(pb)
		a0 = av[0]
		a1 = av[1]
		b0 = bv[0]
		c00 += a0 * b0
		c10 += a1 * b0
		b1 = bv[1]
		c01 += a0 * b1
		c11 += a1 * b1
		b2 = bv[2]
		c02 += a0 * b2
		c12 += a1 * b2
		b3 = bv[3]
		c03 += a0 * b3
		c13 += a1 * b3
		r--
		if r == 0 {
			break
		}
		pa = unsafe.Add(pa, 8)
		pb = unsafe.Add(pb, 16)
	}
	c[0] = c00
	c[1] = c01
	c[2] = c02
	c[3] = c03
	c[4] = c10
	c[5] = c11
	c[6] = c12
	c[7] = c13
}

// microF32x4x2 is the portable 4×2 float32 micro-kernel, unrolled 4× over k.
func microF32x4x2(kc int, a, b, c []float32) {
	c = c[:8]
	if kc <= 0 {
		clear(c)
		return
	}
	_ = a[kc*4-1]
	_ = b[kc*2-1]
	pa, pb := unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0])
	var c00, c01 float32
	var c10, c11 float32
	var c20, c21 float32
	var c30, c31 float32
	var a0, a1, a2, a3, b0, b1 float32
	// pointers advance only while another step follows, so they never
	// leave the panels
	for n := kc / 4; n > 0; {
		av := (*[16]float32)(pa)
		bv := (*[8]float32)(pb)
		a0 = av[0]
		a1 = av[1]
		a2 = av[2]
		a3 = av[3]
		b0 = bv[0]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		c30 += a3 * b0
		b1 = bv[1]
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		c31 += a3 * b1
		a0 = av[4]
		a1 = av[5]
		a2 = av[6]
		a3 = av[7]
		b0 = bv[2]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		c30 += a3 * b0
		b1 = bv[3]
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		c31 += a3 * b1
		a0 = av[8]
		a1 = av[9]
		a2 = av[10]
		a3 = av[11]
		b0 = bv[4]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		c30 += a3 * b0
		b1 = bv[5]
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		c31 += a3 * b1
		a0 = av[12]
		a1 = av[13]
		a2 = av[14]
		a3 = av[15]
		b0 = bv[6]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		c30 += a3 * b0
		b1 = bv[7]
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		c31 += a3 * b1
		n--
		if n == 0 && kc%4 == 0 {
			break
		}
		pa = unsafe.Add(pa, 64)
		pb = unsafe.Add(pb, 32)
	}
	for r := kc % 4; r > 0; {
		av := (*[4]float32)(pa)
		bv := (*[2]float32)(pb)
		a0 = av[0]
		a1 = av[1]
		a2 = av[2]
		a3 = av[3]
		b0 = bv[0]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		c30 += a3 * b0
		b1 = bv[1]
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		c31 += a3 * b1
		r--
		if r == 0 {
			break
		}
		pa = unsafe.Add(pa, 16)
		pb = unsafe.Add(pb, 8)
	}
	c[0] = c00
	c[1] = c01
	c[2] = c10
	c[3] = c11
	c[4] = c20
	c[5] = c21
	c[6] = c30
	c[7] = c31
}

// microF32x2x6 is the portable 2×6 float32 micro-kernel, unrolled 4× over k.
func microF32x2x6(kc int, a, b, c []float32) {
	c = c[:12]
	if kc <= 0 {
		clear(c)
		return
	}
	_ = a[kc*2-1]
	_ = b[kc*6-1]
	pa, pb := unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0])
	var c00, c01, c02, c03, c04, c05 float32
	var c10, c11, c12, c13, c14, c15 float32
	var a0, a1, b0, b1, b2, b3, b4, b5 float32
	// pointers advance only while another step follows, so they never
	// leave the panels
	for n := kc / 4; n > 0; {
		av := (*[8]float32)(pa)
		bv := (*[24]float32)(pb)
		a0 = av[0]
		a1 = av[1]
		b0 = bv[0]
		c00 += a0 * b0
		c10 += a1 * b0
		b1 = bv[1]
		c01 += a0 * b1
		c11 += a1 * b1
		b2 = bv[2]
		c02 += a0 * b2
		c12 += a1 * b2
		b3 = bv[3]
		c03 += a0 * b3
		c13 += a1 * b3
		b4 = bv[4]
		c04 += a0 * b4
		c14 += a1 * b4
		b5 = bv[5]
		c05 += a0 * b5
		c15 += a1 * b5
		a0 = av[2]
		a1 = av[3]
		b0 = bv[6]
		c00 += a0 * b0
		c10 += a1 * b0
		b1 = bv[7]
		c01 += a0 * b1
		c11 += a1 * b1
		b2 = bv[8]
		c02 += a0 * b2
		c12 += a1 * b2
		b3 = bv[9]
		c03 += a0 * b3
		c13 += a1 * b3
		b4 = bv[10]
		c04 += a0 * b4
		c14 += a1 * b4
		b5 = bv[11]
		c05 += a0 * b5
		c15 += a1 * b5
		a0 = av[4]
		a1 = av[5]
		b0 = bv[12]
		c00 += a0 * b0
		c10 += a1 * b0
		b1 = bv[13]
		c01 += a0 * b1
		c11 += a1 * b1
		b2 = bv[14]
		c02 += a0 * b2
		c12 += a1 * b2
		b3 = bv[15]
		c03 += a0 * b3
		c13 += a1 * b3
		b4 = bv[16]
		c04 += a0 * b4
		c14 += a1 * b4
		b5 = bv[17]
		c05 += a0 * b5
		c15 += a1 * b5
		a0 = av[6]
		a1 = av[7]
		b0 = bv[18]
		c00 += a0 * b0
		c10 += a1 * b0
		b1 = bv[19]
		c01 += a0 * b1
		c11 += a1 * b1
		b2 = bv[20]
		c02 += a0 * b2
		c12 += a1 * b2
		b3 = bv[21]
		c03 += a0 * b3
		c13 += a1 * b3
		b4 = bv[22]
		c04 += a0 * b4
		c14 += a1 * b4
		b5 = bv[23]
		c05 += a0 * b5
		c15 += a1 * b5
		n--
		if n == 0 && kc%4 == 0 {
			break
		}
		pa = unsafe.Add(pa, 32)
		pb = unsafe.Add(pb, 96)
	}
	for r := kc % 4; r > 0; {
		av := (*[2]float32)(pa)
		bv := (*[6]float32)(pb)
		a0 = av[0]
		a1 = av[1]
		b0 = bv[0]
		c00 += a0 * b0
		c10 += a1 * b0
		b1 = bv[1]
		c01 += a0 * b1
		c11 += a1 * b1
		b2 = bv[2]
		c02 += a0 * b2
		c12 += a1 * b2
		b3 = bv[3]
		c03 += a0 * b3
		c13 += a1 * b3
		b4 = bv[4]
		c04 += a0 * b4
		c14 += a1 * b4
		b5 = bv[5]
		c05 += a0 * b5
		c15 += a1 * b5
		r--
		if r == 0 {
			break
		}
		pa = unsafe.Add(pa, 8)
		pb = unsafe.Add(pb, 24)
	}
	c[0] = c00
	c[1] = c01
	c[2] = c02
	c[3] = c03
	c[4] = c04
	c[5] = c05
	c[6] = c10
	c[7] = c11
	c[8] = c12
	c[9] = c13
	c[10] = c14
	c[11] = c15
}

// microF32x3x2 is the portable 3×2 float32 micro-kernel, unrolled 2× over k.
func microF32x3x2(kc int, a, b, c []float32) {
	c = c[:6]
	if kc <= 0 {
		clear(c)
		return
	}
	_ = a[kc*3-1]
	_ = b[kc*2-1]
	pa, pb := unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0])
	var c00, c01 float32
	var c10, c11 float32
	var c20, c21 float32
	var a0, a1, a2, b0, b1 float32
	// pointers advance only while another step follows, so they never
	// leave the panels
	for n := kc / 2; n > 0; {
		av := (*[6]float32)(pa)
		bv := (*[4]float32)(pb)
		a0 = av[0]
		a1 = av[1]
		a2 = av[2]
		b0 = bv[0]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		b1 = bv[1]
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		a0 = av[3]
		a1 = av[4]
		a2 = av[5]
		b0 = bv[2]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		b1 = bv[3]
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		n--
		if n == 0 && kc%2 == 0 {
			break
		}
		pa = unsafe.Add(pa, 24)
		pb = unsafe.Add(pb, 16)
	}
	for r := kc % 2; r > 0; {
		av := (*[3]float32)(pa)
		bv := (*[2]float32)(pb)
		a0 = av[0]
		a1 = av[1]
		a2 = av[2]
		b0 = bv[0]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		b1 = bv[1]
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		r--
		if r == 0 {
			break
		}
		pa = unsafe.Add(pa, 12)
		pb = unsafe.Add(pb, 8)
	}
	c[0] = c00
	c[1] = c01
	c[2] = c10
	c[3] = c11
	c[4] = c20
	c[5] = c21
}

// microF32x3x3 is the portable 3×3 float32 micro-kernel, unrolled 4× over k.
func microF32x3x3(kc int, a, b, c []float32) {
	c = c[:9]
	if kc <= 0 {
		clear(c)
		return
	}
	_ = a[kc*3-1]
	_ = b[kc*3-1]
	pa, pb := unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0])
	var c00, c01, c02 float32
	var c10, c11, c12 float32
	var c20, c21, c22 float32
	var a0, a1, a2, b0, b1, b2 float32
	// pointers advance only while another step follows, so they never
	// leave the panels
	for n := kc / 4; n > 0; {
		av := (*[12]float32)(pa)
		bv := (*[12]float32)(pb)
		a0 = av[0]
		a1 = av[1]
		a2 = av[2]
		b0 = bv[0]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		b1 = bv[1]
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		b2 = bv[2]
		c02 += a0 * b2
		c12 += a1 * b2
		c22 += a2 * b2
		a0 = av[3]
		a1 = av[4]
		a2 = av[5]
		b0 = bv[3]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		b1 = bv[4]
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		b2 = bv[5]
		c02 += a0 * b2
		c12 += a1 * b2
		c22 += a2 * b2
		a0 = av[6]
		a1 = av[7]
		a2 = av[8]
		b0 = bv[6]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		b1 = bv[7]
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		b2 = bv[8]
		c02 += a0 * b2
		c12 += a1 * b2
		c22 += a2 * b2
		a0 = av[9]
		a1 = av[10]
		a2 = av[11]
		b0 = bv[9]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		b1 = bv[10]
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		b2 = bv[11]
		c02 += a0 * b2
		c12 += a1 * b2
		c22 += a2 * b2
		n--
		if n == 0 && kc%4 == 0 {
			break
		}
		pa = unsafe.Add(pa, 48)
		pb = unsafe.Add(pb, 48)
	}
	for r := kc % 4; r > 0; {
		av := (*[3]float32)(pa)
		bv := (*[3]float32)(pb)
		a0 = av[0]
		a1 = av[1]
		a2 = av[2]
		b0 = bv[0]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		b1 = bv[1]
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		b2 = bv[2]
		c02 += a0 * b2
		c12 += a1 * b2
		c22 += a2 * b2
		r--
		if r == 0 {
			break
		}
		pa = unsafe.Add(pa, 12)
		pb = unsafe.Add(pb, 12)
	}
	c[0] = c00
	c[1] = c01
	c[2] = c02
	c[3] = c10
	c[4] = c11
	c[5] = c12
	c[6] = c20
	c[7] = c21
	c[8] = c22
}

// microF64x2x4 is the portable 2×4 float64 micro-kernel, unrolled 4× over k.
func microF64x2x4(kc int, a, b, c []float64) {
	c = c[:8]
	if kc <= 0 {
		clear(c)
		return
	}
	_ = a[kc*2-1]
	_ = b[kc*4-1]
	pa, pb := unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0])
	var c00, c01, c02, c03 float64
	var c10, c11, c12, c13 float64
	var a0, a1, b0, b1, b2, b3 float64
	// pointers advance only while another step follows, so they never
	// leave the panels
	for n := kc / 4; n > 0; {
		av := (*[8]float64)(pa)
		bv := (*[16]float64)(pb)
		a0 = av[0]
		a1 = av[1]
		b0 = bv[0]
		c00 += a0 * b0
		c10 += a1 * b0
		b1 = bv[1]
		c01 += a0 * b1
		c11 += a1 * b1
		b2 = bv[2]
		c02 += a0 * b2
		c12 += a1 * b2
		b3 = bv[3]
		c03 += a0 * b3
		c13 += a1 * b3
		a0 = av[2]
		a1 = av[3]
		b0 = bv[4]
		c00 += a0 * b0
		c10 += a1 * b0
		b1 = bv[5]
		c01 += a0 * b1
		c11 += a1 * b1
		b2 = bv[6]
		c02 += a0 * b2
		c12 += a1 * b2
		b3 = bv[7]
		c03 += a0 * b3
		c13 += a1 * b3
		a0 = av[4]
		a1 = av[5]
		b0 = bv[8]
		c00 += a0 * b0
		c10 += a1 * b0
		b1 = bv[9]
		c01 += a0 * b1
		c11 += a1 * b1
		b2 = bv[10]
		c02 += a0 * b2
		c12 += a1 * b2
		b3 = bv[11]
		c03 += a0 * b3
		c13 += a1 * b3
		a0 = av[6]
		a1 = av[7]
		b0 = bv[12]
		c00 += a0 * b0
		c10 += a1 * b0
		b1 = bv[13]
		c01 += a0 * b1
		c11 += a1 * b1
		b2 = bv[14]
		c02 += a0 * b2
		c12 += a1 * b2
		b3 = bv[15]
		c03 += a0 * b3
		c13 += a1 * b3
		n--
		if n == 0 && kc%4 == 0 {
			break
		}
		pa = unsafe.Add(pa, 64)
		pb = unsafe.Add(pb, 128)
	}
	for r := kc % 4; r > 0; {
		av := (*[2]float64)(pa)
		bv := (*[4]float64)(pb)
		a0 = av[0]
		a1 = av[1]
		b0 = bv[0]
		c00 += a0 * b0
		c10 += a1 * b0
		b1 = bv[1]
		c01 += a0 * b1
		c11 += a1 * b1
		b2 = bv[2]
		c02 += a0 * b2
		c12 += a1 * b2
		b3 = bv[3]
		c03 += a0 * b3
		c13 += a1 * b3
		r--
		if r == 0 {
			break
		}
		pa = unsafe.Add(pa, 16)
		pb = unsafe.Add(pb, 32)
	}
	c[0] = c00
	c[1] = c01
	c[2] = c02
	c[3] = c03
	c[4] = c10
	c[5] = c11
	c[6] = c12
	c[7] = c13
}

// microF64x4x2 is the portable 4×2 float64 micro-kernel, unrolled 4× over k.
func microF64x4x2(kc int, a, b, c []float64) {
	c = c[:8]
	if kc <= 0 {
		clear(c)
		return
	}
	_ = a[kc*4-1]
	_ = b[kc*2-1]
	pa, pb := unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0])
	var c00, c01 float64
	var c10, c11 float64
	var c20, c21 float64
	var c30, c31 float64
	var a0, a1, a2, a3, b0, b1 float64
	// pointers advance only while another step follows, so they never
	// leave the panels
	for n := kc / 4; n > 0; {
		av := (*[16]float64)(pa)
		bv := (*[8]float64)(pb)
		a0 = av[0]
		a1 = av[1]
		a2 = av[2]
		a3 = av[3]
		b0 = bv[0]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		c30 += a3 * b0
		b1 = bv[1]
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		c31 += a3 * b1
		a0 = av[4]
		a1 = av[5]
		a2 = av[6]
		a3 = av[7]
		b0 = bv[2]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		c30 += a3 * b0
		b1 = bv[3]
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		c31 += a3 * b1
		a0 = av[8]
		a1 = av[9]
		a2 = av[10]
		a3 = av[11]
		b0 = bv[4]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		c30 += a3 * b0
		b1 = bv[5]
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		c31 += a3 * b1
		a0 = av[12]
		a1 = av[13]
		a2 = av[14]
		a3 = av[15]
		b0 = bv[6]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		c30 += a3 * b0
		b1 = bv[7]
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		c31 += a3 * b1
		n--
		if n == 0 && kc%4 == 0 {
			break
		}
		pa = unsafe.Add(pa, 128)
		pb = unsafe.Add(pb, 64)
	}
	for r := kc % 4; r > 0; {
		av := (*[4]float64)(pa)
		bv := (*[2]float64)(pb)
		a0 = av[0]
		a1 = av[1]
		a2 = av[2]
		a3 = av[3]
		b0 = bv[0]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		c30 += a3 * b0
		b1 = bv[1]
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		c31 += a3 * b1
		r--
		if r == 0 {
			break
		}
		pa = unsafe.Add(pa, 32)
		pb = unsafe.Add(pb, 16)
	}
	c[0] = c00
	c[1] = c01
	c[2] = c10
	c[3] = c11
	c[4] = c20
	c[5] = c21
	c[6] = c30
	c[7] = c31
}

// microF64x3x2 is the portable 3×2 float64 micro-kernel, unrolled 2× over k.
func microF64x3x2(kc int, a, b, c []float64) {
	c = c[:6]
	if kc <= 0 {
		clear(c)
		return
	}
	_ = a[kc*3-1]
	_ = b[kc*2-1]
	pa, pb := unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0])
	var c00, c01 float64
	var c10, c11 float64
	var c20, c21 float64
	var a0, a1, a2, b0, b1 float64
	// pointers advance only while another step follows, so they never
	// leave the panels
	for n := kc / 2; n > 0; {
		av := (*[6]float64)(pa)
		bv := (*[4]float64)(pb)
		a0 = av[0]
		a1 = av[1]
		a2 = av[2]
		b0 = bv[0]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		b1 = bv[1]
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		a0 = av[3]
		a1 = av[4]
		a2 = av[5]
		b0 = bv[2]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		b1 = bv[3]
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		n--
		if n == 0 && kc%2 == 0 {
			break
		}
		pa = unsafe.Add(pa, 48)
		pb = unsafe.Add(pb, 32)
	}
	for r := kc % 2; r > 0; {
		av := (*[3]float64)(pa)
		bv := (*[2]float64)(pb)
		a0 = av[0]
		a1 = av[1]
		a2 = av[2]
		b0 = bv[0]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		b1 = bv[1]
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		r--
		if r == 0 {
			break
		}
		pa = unsafe.Add(pa, 24)
		pb = unsafe.Add(pb, 16)
	}
	c[0] = c00
	c[1] = c01
	c[2] = c10
	c[3] = c11
	c[4] = c20
	c[5] = c21
}
