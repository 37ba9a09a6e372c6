//go:build !purego

package cpu

// attnGemmRowsAVX2 is sgemm6x16AVX2 with A read in place by rows: element
// (i, p) of A at a[i·lda+p] for i < 6 (rows i ≥ mv are read, not
// stored), and row p of B (16 elements) at b[p·ldb] (ldb 16 for a packed
// panel). It stores all 16 columns of rows i < mv of C (row stride ldc),
// replacing them or, with accum, adding to them (attention_gemm_amd64.s).
//
//go:noescape
func attnGemmRowsAVX2(kc int, a *float32, lda int, b *float32, ldb int, c *float32, ldc, mv int, accum bool)

// attnGemmColsAVX2 is attnGemmRowsAVX2 with A read by columns: element
// (i, p) at a[p·lda+i].
//
//go:noescape
func attnGemmColsAVX2(kc int, a *float32, lda int, b *float32, ldb int, c *float32, ldc, mv int, accum bool)

// attnDirectVariant is one set of in-place tile kernels: the GEMM kernel
// whose panels they read (and whose bits they give) and the tile product
// built on them.
type attnDirectVariant struct {
	kern kernel[float32]
	mul  func(a attnA[float32], b attnB[float32], mc, nb, k int, C matDst[float32], acc bool, trim attnTrim)
}

// attnDirectVariants are the in-place kernels this CPU runs, the one
// newAttnRun uses first: AVX-512 8×32, then AVX2 6×16 (which the tests
// also run on AVX-512 CPUs).
var attnDirectVariants []attnDirectVariant

func init() {
	for _, k := range asmKernelsF32 {
		switch {
		case k.name == "avx512-8x32" && usable(k.name):
			attnDirectVariants = append(attnDirectVariants, attnDirectVariant{k, attnMulDirectAVX512})
		case k.name == "avx2-6x16" && usable(k.name):
			attnDirectVariants = append(attnDirectVariants, attnDirectVariant{k, attnMulDirectAVX2})
		}
	}
	if len(attnDirectVariants) > 0 {
		v := attnDirectVariants[0]
		attnDirectKernelF32, attnDirectF32, attnDirectMR = v.kern, v.mul, v.kern.mr
	}
}

// attnMulDirectAVX512 is the float32 attnRun.direct on AVX-512: C (mc×nb;
// or C + it, with acc) = A·B, leaving out what trim allows, with the 8×32
// kernels (kernels_amd64.s). It gives the bits of packing A and B and
// attnRun.mul with sgemm8x32AVX512.
func attnMulDirectAVX512(a attnA[float32], b attnB[float32], mc, nb, k int, C matDst[float32], acc bool, trim attnTrim) {
	attnMulDirect(true, a, b, mc, nb, k, C, acc, trim)
}

// attnMulDirectAVX2 is the float32 attnRun.direct on AVX2: C (mc×nb; or
// C + it, with acc) = A·B, leaving out what trim allows, with the 6×16
// kernels (attention_gemm_amd64.s). It gives the bits of packing A and B
// and attnRun.mul with sgemm6x16AVX2.
func attnMulDirectAVX2(a attnA[float32], b attnB[float32], mc, nb, k int, C matDst[float32], acc bool, trim attnTrim) {
	attnMulDirect(false, a, b, mc, nb, k, C, acc, trim)
}

// attnMulDirect is attnMulDirectAVX512 (wide) or attnMulDirectAVX2.
func attnMulDirect(wide bool, a attnA[float32], b attnB[float32], mc, nb, k int, C matDst[float32], acc bool, trim attnTrim) {
	mr, nr := attnMRAVX2, 16
	if wide {
		mr, nr = attnMRAVX512, 32
	}
	if nb == 0 || mc == 0 {
		return
	}
	if k == 0 {
		if !acc {
			for i := range mc {
				clear(C.s[C.off+i*C.rs:][:nb])
			}
		}
		return
	}
	byCols, lda := a.packed || a.cs != 1, a.rs
	switch {
	case a.packed:
		lda = mr
		_ = a.s[roundUp(mc, mr)*k-1]
	case byCols && a.rs != 1:
		panic("cpu: attention: a tile with neither unit stride")
	case byCols:
		lda = a.cs
		fallthrough
	default:
		_ = a.s[(roundUp(mc, mr)-1)*a.rs+(k-1)*a.cs] // the last element the kernels read
	}
	ldb := b.rs
	if ldb == 0 { // packed panels
		ldb = nr
		_ = b.s[roundUp(nb, nr)*k-1]
	} else if nb%nr != 0 {
		panic("cpu: attention: a B read in place with a partial panel")
	} else {
		_ = b.s[(k-1)*b.rs+nb-1]
	}
	_ = C.s[C.off+(mc-1)*C.rs+nb-1]
	// called directly, not through a func value, so that tile stays on
	// the stack
	kern := func(kb int, ap, panel, c *float32, ldc, mv int, accum bool) {
		switch {
		case wide && byCols:
			attnGemmColsAVX512(kb, ap, lda, panel, ldb, c, ldc, mv, accum)
		case wide:
			attnGemmRowsAVX512(kb, ap, lda, panel, ldb, c, ldc, mv, accum)
		case byCols:
			attnGemmColsAVX2(kb, ap, lda, panel, ldb, c, ldc, mv, accum)
		default:
			attnGemmRowsAVX2(kb, ap, lda, panel, ldb, c, ldc, mv, accum)
		}
	}
	var tile [attnMRAVX512 * 32]float32 // an edge panel's product (the kernels store whole rows)
	kc := min(gemmKC, k)
	for pc := 0; pc < k; pc += kc {
		kb := min(kc, k-pc)
		bpc := b.s[roundUp(nb, nr)*pc:] // packed B's block
		for jr := 0; jr < nb; jr += nr {
			nv := min(nr, nb-jr)
			for ir := 0; ir < mc; ir += mr {
				n1, k0, k1 := trim.span(ir, mr, nb, k)
				if jr >= n1 {
					continue
				}
				mv := min(mr, mc-ir)
				base := C.off + ir*C.rs + jr
				p0, p1 := max(k0, pc), min(k1, pc+kb) // this block's part of the sum
				if p0 >= p1 {
					if !acc && k0 >= k1 && pc == 0 { // nothing to sum: C = 0
						for i := range mv {
							clear(C.s[base+i*C.rs:][:nv])
						}
					}
					continue
				}
				first := !acc && p0 == k0 // the first block that sums sets C
				var ap *float32
				if a.packed {
					ap = &a.s[roundUp(mc, mr)*pc+ir*kb+(p0-pc)*mr]
				} else {
					ap = &a.s[ir*a.rs+p0*a.cs]
				}
				var panel *float32
				if b.rs == 0 {
					panel = &bpc[(jr/nr)*nr*kb+(p0-pc)*nr]
				} else {
					panel = &b.s[p0*b.rs+jr]
				}
				if nv == nr {
					kern(p1-p0, ap, panel, &C.s[base], C.rs, mv, !first)
					continue
				}
				kern(p1-p0, ap, panel, &tile[0], nr, mv, false)
				for i := range mv {
					row, src := C.s[base+i*C.rs:][:nv], tile[i*nr:][:nv]
					if first {
						copy(row, src)
						continue
					}
					for j, v := range src {
						row[j] += v
					}
				}
			}
		}
	}
}
