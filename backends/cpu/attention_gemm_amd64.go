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

// The in-place kernels read the panels of the AVX2 6×16 kernel: they are
// set up wherever it runs (AVX-512 CPUs included, for the tests), and
// newAttnRun uses them where it is the GEMM kernel.
func init() {
	if !hasAVX2 {
		return
	}
	for _, k := range asmKernelsF32 {
		if k.asm != nil && k.mr == attnDirectMR && k.nr == 16 && usable(k.name) && k.name[:4] == "avx2" {
			attnDirectKernelF32, attnDirectF32 = k, attnMulDirectAVX2
		}
	}
}

// attnMulDirectAVX2 is the float32 attnRun.direct on AVX2: C (mc×nb; or
// C + it, with acc) = A·B, leaving out what trim allows. It gives the bits
// of packing A and B and attnRun.mul with the 6×16 kernel: the same sums
// in the same order.
func attnMulDirectAVX2(a attnA[float32], b attnB[float32], mc, nb, k int, C matDst[float32], acc bool, trim attnTrim) {
	const mr, nr = attnDirectMR, 16
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
		if byCols {
			attnGemmColsAVX2(kb, ap, lda, panel, ldb, c, ldc, mv, accum)
		} else {
			attnGemmRowsAVX2(kb, ap, lda, panel, ldb, c, ldc, mv, accum)
		}
	}
	var tile [mr * nr]float32 // an edge panel's product (the kernels store whole rows)
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
