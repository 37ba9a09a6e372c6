package cpu

import (
	"sync"
)

// The GEMM driver: C = A·B for one matrix, blocked for the caches in the
// usual way (Goto & van de Geijn, "Anatomy of high-performance matrix
// multiplication", 2008):
//
//	for jc in steps of nc over N:            B block kc×nc, packed once, shared
//	  for pc in steps of kc over K:          (sequential: K is never split)
//	    pack B[pc:pc+kc, jc:jc+nc] into NR-wide panels        (parallel)
//	    for each tile (ic, jb) of mc rows × nb columns:       (parallel)
//	      pack A[ic:ic+mc, pc:pc+kc] into MR-tall panels (per task)
//	      for jr, ir: micro-kernel MR×NR over kc, then C tile = (or +=) result
//
// Every element of C is the sum over the kc-blocks, in order, of the
// micro-kernel's sum over its block, which depends only on the shapes and
// the chosen micro-kernel, so results are bit-identical whatever the number
// of workers and however tiles are distributed.

// Blocking parameters. kc·(MR+NR) floats of micro-panels stay in L1, an
// mc×kc block of A in L2, a kc×nc block of B in L2/L3. They are variables
// only so that tests can shrink them to exercise every blocking path on
// small matrices; results depend on gemmKC (the summation blocks).
var (
	gemmKC = 256
	gemmMC = 96  // rounded down to a multiple of MR
	gemmNB = 256 // columns per parallel task, rounded down to a multiple of NR
	gemmNC = 4096
)

// kernel is a register-blocked micro-kernel: fn computes the MR×NR product
// of a packed A panel (kc×MR, a[p·MR+i]) and a packed B panel (kc×NR,
// b[p·NR+j]), summing over p in order, and writes it row-major to c
// (c[i·NR+j], len MR·NR). Implementations can be swapped at init (see
// gemm_kernels.go); they must be deterministic.
type kernel[T float] struct {
	name   string
	mr, nr int
	fn     func(kc int, a, b, c []T)
}

// matSrc is a matrix operand: element (r, c) is at element offset
// off + r·rs + c·cs of a buffer. load gathers n elements starting at off
// with stride st into dst, converting to T; s is the buffer itself when it
// already holds T (then packing reads it directly).
type matSrc[T float] struct {
	s           []T
	load        func(off, st int, dst []T)
	off, rs, cs int
}

// t returns the transpose (element (r, c) is the source's (c, r)).
func (m matSrc[T]) t() matSrc[T] { m.rs, m.cs = m.cs, m.rs; return m }

// matDst is the output: element (r, c) at off + r·rs + c·cs of s.
type matDst[T float] struct {
	s           []T
	off, rs, cs int
}

// pack copies rows [r0, r0+rn) × columns [c0, c0+cn) of src into panels of
// w rows: element (r0+r, c0+c) goes to dst[(r/w)·cn·w + c·w + r%w]. Rows
// past rn in the last panel are zero. tmp holds at least cn elements.
func pack[T float](dst []T, src matSrc[T], r0, rn, c0, cn, w int, tmp []T) {
	panels := (rn + w - 1) / w
	dst = dst[:panels*cn*w]
	base := src.off + r0*src.rs + c0*src.cs
	if abs(src.rs) < abs(src.cs) {
		// the panel dimension is the contiguous one: copy w at a time
		for pn := range panels {
			d := dst[pn*cn*w : (pn+1)*cn*w]
			rows := min(w, rn-pn*w)
			off := base + pn*w*src.rs
			if src.s != nil && rows == w && src.rs == 1 {
				for c := range cn {
					copy(d[c*w:c*w+w], src.s[off+c*src.cs:])
				}
				continue
			}
			for c := range cn {
				e := d[c*w : c*w+w]
				if src.s != nil {
					for i := range rows {
						e[i] = src.s[off+c*src.cs+i*src.rs]
					}
				} else {
					src.load(off+c*src.cs, src.rs, e[:rows])
				}
				clear(e[rows:])
			}
		}
		return
	}
	// the long dimension is the contiguous one: gather each row, then
	// spread it over the panel
	for pn := range panels {
		d := dst[pn*cn*w : (pn+1)*cn*w]
		for i := range w {
			r := pn*w + i
			if r >= rn {
				for c := range cn {
					d[c*w+i] = 0
				}
				continue
			}
			off := base + r*src.rs
			var row []T
			if src.s != nil && src.cs == 1 {
				row = src.s[off : off+cn]
			} else {
				row = tmp[:cn]
				if src.s != nil {
					for c := range row {
						row[c] = src.s[off+c*src.cs]
					}
				} else {
					src.load(off, src.cs, row)
				}
			}
			for c, v := range row {
				d[c*w+i] = v
			}
		}
	}
}

// bufPool recycles packing buffers (no allocation per call once warm).
type bufPool[T float] struct{ p sync.Pool }

func (bp *bufPool[T]) get(n int) *[]T {
	if v, ok := bp.p.Get().(*[]T); ok && cap(*v) >= n {
		*v = (*v)[:n]
		return v
	}
	s := make([]T, n)
	return &s
}

func (bp *bufPool[T]) put(v *[]T) { bp.p.Put(v) }

var (
	poolF32 bufPool[float32]
	poolF64 bufPool[float64]
)

func poolFor[T float]() *bufPool[T] {
	var z T
	if _, ok := any(z).(float32); ok {
		return any(&poolF32).(*bufPool[T])
	}
	return any(&poolF64).(*bufPool[T])
}

// gemm computes C = A·B (m×k times k×n). With par false it runs on the
// calling goroutine only (the batch is parallel instead).
func gemm[T float](b *Backend, kern kernel[T], m, n, k int, A, B matSrc[T], C matDst[T], par bool) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		for i := range m {
			for j := range n {
				C.s[C.off+i*C.rs+j*C.cs] = 0
			}
		}
		return
	}
	mr, nr := kern.mr, kern.nr
	nc := min(gemmNC/nr*nr, roundUp(n, nr))
	kc := min(gemmKC, k)
	mc := max(mr, gemmMC/mr*mr)
	nb := max(nr, gemmNB/nr*nr)
	pool := poolFor[T]()
	bBuf := pool.get(kc * nc)
	defer pool.put(bBuf)
	Bt := B.t() // rows of Bt are columns of B: NR-tall panels of Bt are NR-wide panels of B
	run := func(tasks int, fn func(t int)) {
		if par {
			b.parallelTasks(tasks, fn)
			return
		}
		for t := range tasks {
			fn(t)
		}
	}
	for jc := 0; jc < n; jc += nc {
		ncur := min(nc, n-jc)
		bPanels := (ncur + nr - 1) / nr
		for pc := 0; pc < k; pc += kc {
			kcur := min(kc, k-pc)
			first := pc == 0
			packed := (*bBuf)[:bPanels*nr*kcur]
			// pack B in groups of panels (about 16K elements a task)
			group := max(1, (1<<14)/(kcur*nr))
			run((bPanels+group-1)/group, func(t int) {
				p0 := t * group
				p1 := min(bPanels, p0+group)
				tmp := pool.get(kcur)
				pack(packed[p0*nr*kcur:p1*nr*kcur], Bt, jc+p0*nr, min(ncur, p1*nr)-p0*nr, pc, kcur, nr, *tmp)
				pool.put(tmp)
			})
			mTiles := (m + mc - 1) / mc
			nTiles := (ncur + nb - 1) / nb
			run(mTiles*nTiles, func(t int) {
				ic, jb := (t/nTiles)*mc, (t%nTiles)*nb
				mcur, nbcur := min(mc, m-ic), min(nb, ncur-jb)
				aBuf := pool.get(roundUp(mcur, mr) * kcur)
				tmp := pool.get(kcur)
				pack(*aBuf, A, ic, mcur, pc, kcur, mr, *tmp)
				pool.put(tmp)
				macroTile(kern, *aBuf, packed[(jb/nr)*nr*kcur:], mcur, nbcur, kcur, C, ic, jc+jb, first)
				pool.put(aBuf)
			})
		}
	}
}

// macroTile multiplies a packed mc×kc block of A by packed kc×nb panels of
// B into C rows [i0, i0+mc) and columns [j0, j0+nb).
func macroTile[T float](kern kernel[T], a, bp []T, mc, nb, kc int, C matDst[T], i0, j0 int, first bool) {
	mr, nr := kern.mr, kern.nr
	var tile [64]T // MR·NR ≤ 64
	c := tile[:mr*nr]
	for jr := 0; jr < nb; jr += nr {
		bPanel := bp[(jr/nr)*nr*kc : (jr/nr+1)*nr*kc]
		nv := min(nr, nb-jr)
		for ir := 0; ir < mc; ir += mr {
			kern.fn(kc, a[(ir/mr)*mr*kc:(ir/mr+1)*mr*kc], bPanel, c)
			mv := min(mr, mc-ir)
			base := C.off + (i0+ir)*C.rs + (j0+jr)*C.cs
			if C.cs == 1 && nv == nr {
				for i := range mv {
					row := C.s[base+i*C.rs : base+i*C.rs+nr]
					src := c[i*nr : i*nr+nr]
					if first {
						copy(row, src)
					} else {
						for j, v := range src {
							row[j] += v
						}
					}
				}
				continue
			}
			for i := range mv {
				for j := range nv {
					p := base + i*C.rs + j*C.cs
					if first {
						C.s[p] = c[i*nr+j]
					} else {
						C.s[p] += c[i*nr+j]
					}
				}
			}
		}
	}
}

func roundUp(x, m int) int { return (x + m - 1) / m * m }

// matvec computes out[j] = Σ_p u[p]·M[p, j] for j < n, p < k: the m = 1
// (row vector × matrix) and n = 1 (matrix × column vector) products, where
// packing would cost as much as the arithmetic. u is at uOff with stride
// us; M is at mOff with strides (mrs along p, mcs along j); out at oOff
// with stride os. When M's columns are contiguous each output accumulates
// in order over p (an axpy per p over a block of outputs); otherwise each
// output is a dot product with four interleaved accumulators. Either way
// the order depends only on the layout, and blocks of outputs run in
// parallel.
func matvec[T float](b *Backend, k, n int, u []T, uOff, us int, M []T, mOff, mrs, mcs int, out []T, oOff, os int, par bool) {
	const block = 512
	run := func(fn func(lo, hi int)) {
		if par {
			b.parallel(n, max(block, grainFor(n, k)), fn)
			return
		}
		fn(0, n)
	}
	if mcs == 1 || abs(mcs) < abs(mrs) {
		run(func(lo, hi int) {
			var accBuf [block]T
			for j0 := lo; j0 < hi; j0 += block {
				acc := accBuf[:min(block, hi-j0)]
				clear(acc)
				for p := range k {
					a := u[uOff+p*us]
					base := mOff + p*mrs + j0*mcs
					if mcs == 1 {
						row := M[base : base+len(acc)]
						for j, v := range row {
							acc[j] += a * v
						}
						continue
					}
					for j := range acc {
						acc[j] += a * M[base+j*mcs]
					}
				}
				for j, v := range acc {
					out[oOff+(j0+j)*os] = v
				}
			}
		})
		return
	}
	run(func(lo, hi int) {
		for j := lo; j < hi; j++ {
			base := mOff + j*mcs
			var a0, a1, a2, a3 T
			p := 0
			if mrs == 1 && us == 1 {
				x, y := u[uOff:uOff+k], M[base:base+k]
				for ; len(x) >= 4 && len(y) >= 4; x, y = x[4:], y[4:] {
					a0 += x[0] * y[0]
					a1 += x[1] * y[1]
					a2 += x[2] * y[2]
					a3 += x[3] * y[3]
				}
				for i := range x {
					a0 += x[i] * y[i]
				}
			} else {
				for ; p+4 <= k; p += 4 {
					a0 += u[uOff+p*us] * M[base+p*mrs]
					a1 += u[uOff+(p+1)*us] * M[base+(p+1)*mrs]
					a2 += u[uOff+(p+2)*us] * M[base+(p+2)*mrs]
					a3 += u[uOff+(p+3)*us] * M[base+(p+3)*mrs]
				}
				for ; p < k; p++ {
					a0 += u[uOff+p*us] * M[base+p*mrs]
				}
			}
			out[oOff+j*os] = (a0 + a1) + (a2 + a3)
		}
	})
}
