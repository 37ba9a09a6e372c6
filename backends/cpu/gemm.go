package cpu

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"
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

// Blocking parameters, set from the detected caches (blocking.go): a
// kc×NR micro-panel of B about fills L1 while MR×kc panels of A stream from
// L2, an mc×kc block of A stays in L2, and a kc×nc block of B in L3. gemmMC
// is for float32 (float64 uses half as many rows); gemmNB is the number of
// columns a parallel task takes at most. They are variables so that tests
// can shrink them to exercise every blocking path on small matrices; results
// depend only on gemmKC (the summation blocks), never on the others or on
// the number of workers.
var gemmKC, gemmMC, gemmNB, gemmNC = blockSizes(detectCaches(), panelRowBytes())

// gemmMChunk is the most rows of A packed at once (for float32 with kc =
// 256, 2 MiB of packed panels).
var gemmMChunk = 2048

// kernel is a register-blocked micro-kernel for a packed A panel (kc×MR,
// a[p·MR+i]) and a packed B panel (kc×NR, b[p·NR+j]), summing over p in
// order. A portable kernel (fn) writes the MR×NR product row-major to c
// (c[i·NR+j], len MR·NR). An assembly kernel (asm) writes rows i < mv of it
// straight into C (row stride ldc elements), only the columns j whose bit
// is set in mask, replacing them or, with accum, adding to them; its edge
// tiles need no scalar code. The assembly kernels sum with fused
// multiply-adds in the same order, so they all give the same bits, as do
// the portable ones among themselves. Kernels can be swapped at init; they
// must be deterministic.
type kernel[T float] struct {
	name   string
	mr, nr int
	fn     func(kc int, a, b, c []T)
	asm    func(kc int, a, b, c *T, ldc, mv int, mask uint64, accum bool)
	// asmBias, when set, is asm that also adds bias[j] to column j of
	// the result before storing it (the same bits as asm then addBias):
	// the last K-block of a product with a bias (see linear.go).
	asmBias func(kc int, a, b, c *T, ldc, mv int, mask uint64, accum bool, bias *T)
	// asmRows, when set, is asm with A read in place by rows (element
	// (i, p) at a[i·lda+p]), reading all mr rows: the same bits as
	// packing A first (see macroTileRows).
	asmRows func(kc int, a *T, lda int, b, c *T, ldc, mv int, mask uint64, accum bool)
	// asmRowsBias, when set, is asmRows that also adds a bias as asmBias
	// does.
	asmRowsBias func(kc int, a *T, lda int, b, c *T, ldc, mv int, mask uint64, accum bool, bias *T)
	// asmCols, when set, is asmRows with A read in place by columns
	// (element (i, p) at a[p·lda+i]): A the transpose of a matrix stored
	// by rows, as a weight gradient's gᵀ.
	asmCols func(kc int, a *T, lda int, b, c *T, ldc, mv int, mask uint64, accum bool)
}

// aInPlace enables kernel.asmRows and asmCols; tests and benchmarks turn
// it off to compare with packing A.
var aInPlace = true

// rowsTiles counts the tiles macroTileRows multiplied, where
// countRowsTiles is set (the tests, which check that the path ran).
var (
	rowsTiles      atomic.Int64
	countRowsTiles = false
)

// biasInKernel enables kernel.asmBias and asmRowsBias; tests and
// benchmarks turn it off to compare with adding the bias in a pass over
// each finished tile.
var biasInKernel = true

// matSrc is a matrix operand: element (r, c) is at element offset
// off + r·rs + c·cs of a buffer. load gathers n elements starting at off
// with stride st into dst, converting to T; s is the buffer itself when it
// already holds T (then packing reads it directly).
//
// rowOff (or colOff), when set, gives each row's (column's) offset in
// place of r·rs (c·cs): a convolution's input read as its unfolded matrix
// without unfolding it (see convForwardImplicit). Such an operand must
// hold T (s set).
type matSrc[T float] struct {
	s              []T
	load           func(off, st int, dst []T)
	off, rs, cs    int
	rowOff, colOff []int
}

// t returns the transpose (element (r, c) is the source's (c, r)).
func (m matSrc[T]) t() matSrc[T] {
	m.rs, m.cs = m.cs, m.rs
	m.rowOff, m.colOff = m.colOff, m.rowOff
	return m
}

// at returns the offset of element (r, c).
func (m matSrc[T]) at(r, c int) int {
	o := m.off
	if m.rowOff != nil {
		o += m.rowOff[r]
	} else {
		o += r * m.rs
	}
	if m.colOff != nil {
		o += m.colOff[c]
	} else {
		o += c * m.cs
	}
	return o
}

// matDst is the output: element (r, c) at off + r·rs + c·cs of s. With
// acc the product is added to what C holds instead of replacing it (the
// first K-block adds as the later ones do). With bias, bias[bOff+c] is
// added to every element of column c once its sum is complete, while its
// tile is still in cache (see linear.go).
type matDst[T float] struct {
	s           []T
	off, rs, cs int
	acc         bool
	bias        []T
	bOff        int
	// act, when set, is applied to each block of rows once the last
	// K-block of all its tiles (and the bias) is done (MatmulBiasAct,
	// linear.go; see gemmStep.rowBlockDone); C's columns are then
	// contiguous.
	act *activation[T]
}

// pack copies rows [r0, r0+rn) × columns [c0, c0+cn) of src into panels of
// w rows: element (r0+r, c0+c) goes to dst[(r/w)·cn·w + c·w + r%w]. Rows
// past rn in the last panel are zero. tmp holds at least cn elements.
func pack[T float](dst []T, src matSrc[T], r0, rn, c0, cn, w int, tmp []T) {
	panels := (rn + w - 1) / w
	dst = dst[:panels*cn*w]
	if src.rowOff != nil || src.colOff != nil {
		packTable(dst, src, r0, rn, c0, cn, w)
		return
	}
	base := src.off + r0*src.rs + c0*src.cs
	if abs(src.rs) < abs(src.cs) {
		// the panel dimension is the contiguous one: copy w at a time (the
		// full panels of the AVX2 kernel's widths in assembly, several
		// panels per source line: packPanels)
		first := 0 // full panels packed already
		if src.s != nil && src.rs == 1 && packPanels(dst, src.s, base, src.cs, cn, w, rn/w) {
			first = rn / w
		}
		for pn := first; pn < panels; pn++ {
			d := dst[pn*cn*w : (pn+1)*cn*w]
			rows := min(w, rn-pn*w)
			off := base + pn*w*src.rs
			if src.s != nil && rows == w && src.rs == 1 {
				switch w { // the AVX-512 kernels' panels: moves, not a memmove call each
				case 8:
					for c := range cn {
						*(*[8]T)(d[c*8:]) = *(*[8]T)(src.s[off+c*src.cs:])
					}
					continue
				case 16:
					for c := range cn {
						*(*[16]T)(d[c*16:]) = *(*[16]T)(src.s[off+c*src.cs:])
					}
					continue
				case 32:
					for c := range cn {
						*(*[32]T)(d[c*32:]) = *(*[32]T)(src.s[off+c*src.cs:])
					}
					continue
				}
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
	// the long dimension is the contiguous one: transpose blocks of 16
	// columns, so the panel lines being filled stay in L1
	for pn := range panels {
		d := dst[pn*cn*w : (pn+1)*cn*w]
		rows := min(w, rn-pn*w)
		if rows < w {
			for c := range cn {
				clear(d[c*w+rows : c*w+w])
			}
		}
		if src.s == nil || src.cs != 1 {
			for i := range rows {
				off := base + (pn*w+i)*src.rs
				row := tmp[:cn]
				if src.s != nil {
					for c := range row {
						row[c] = src.s[off+c*src.cs]
					}
				} else {
					src.load(off, src.cs, row)
				}
				for c, v := range row {
					d[c*w+i] = v
				}
			}
			continue
		}
		off := base + pn*w*src.rs
		c0 := packTransposed(d, src.s, off, src.rs, rows, cn, w)
		for ; c0 < cn; c0 += 16 {
			c1 := min(c0+16, cn)
			blk := d[c0*w : c1*w]
			for i := range rows {
				off := base + (pn*w+i)*src.rs
				for c, v := range src.s[off+c0 : off+c1] {
					blk[c*w+i] = v
				}
			}
		}
	}
}

// packTable is pack for an operand with a row or column offset table:
// w contiguous elements at a time where the panel dimension is contiguous
// (an implicit convolution's positions), else element by element.
func packTable[T float](dst []T, src matSrc[T], r0, rn, c0, cn, w int) {
	for pn := range (rn + w - 1) / w {
		d := dst[pn*cn*w : (pn+1)*cn*w]
		rows := min(w, rn-pn*w)
		for c := range cn {
			e := d[c*w : c*w+w]
			start := src.at(r0+pn*w, c0+c)
			if src.rowOff == nil && src.rs == 1 {
				copy(e[:rows], src.s[start:start+rows])
			} else {
				for i := range rows {
					e[i] = src.s[src.at(r0+pn*w+i, c0+c)]
				}
			}
			clear(e[rows:])
		}
	}
}

// bufPool recycles packing buffers (no allocation per call once warm), in
// power-of-two size classes so that small and large requests do not evict
// each other.
type bufPool[T float] struct{ p [48]sync.Pool }

func (bp *bufPool[T]) get(n int) *[]T {
	c := bits.Len(uint(max(n, 1) - 1))
	if v, ok := bp.p[c].Get().(*[]T); ok {
		*v = (*v)[:n]
		return v
	}
	s := make([]T, n, 1<<c)
	return &s
}

func (bp *bufPool[T]) put(v *[]T) { bp.p[bits.Len(uint(cap(*v)))-1].Put(v) }

var (
	poolF32 bufPool[float32]
	poolF64 bufPool[float64]
	stepF32 = sync.Pool{New: func() any { return new(gemmStep[float32]) }}
	stepF64 = sync.Pool{New: func() any { return new(gemmStep[float64]) }}
)

func poolFor[T float]() *bufPool[T] {
	var z T
	if _, ok := any(z).(float32); ok {
		return any(&poolF32).(*bufPool[T])
	}
	return any(&poolF64).(*bufPool[T])
}

// typedPool returns f32 for float32 and f64 for float64: the pool of
// objects of that element type.
func typedPool[T float](f32, f64 *sync.Pool) *sync.Pool {
	var z T
	if _, ok := any(z).(float32); ok {
		return f32
	}
	return f64
}

// gemmStep is one (jc, pc, chunk of M) step of the GEMM: pack a kc×nc
// block of B (in the first chunk only) and the chunk's block of A, then
// multiply tiles of C. It runs as one parallel
// job whose first tasks pack and whose later tasks wait until every packing
// task has finished (tasks are taken in order, so those are all running;
// the wait blocks rather than spins, so a packer the OS has descheduled
// gets the core back) and then multiply one tile each. It lives in a pool, so a call allocates
// nothing once warm.
type gemmStep[T float] struct {
	kern           kernel[T]
	A, Bt          matSrc[T]
	C              matDst[T]
	aPack, bPack   []T
	m, ncur, kcur  int // m: rows of this step's chunk of A and C
	i0             int // first row of the chunk
	jc, pc         int
	first          bool
	last           bool // the last K-block: the sums are complete
	bGroup, bTasks int  // B panels per packing task, packing tasks for B
	aGroup, aTasks int
	mc, nb, mt, nt int // tile sizes and counts
	packing        sync.WaitGroup
	tmp            *bufPool[T]
	preA, preB     []T  // operands packed before the call (see prepackA, prepackB), or nil
	aRows          bool // A is multiplied where it lies (readsAInPlace), not packed
	// lazyA or lazyB, when set, packs preA or preB as the tiles need it
	// (see lazyPack)
	lazyA, lazyB *lazyPack[T]
	// rowDone counts the finished tiles of each row block on the last
	// K-block when C has an activation (rowBlockDone); kept across calls
	rowDone []atomic.Int32
}

func (g *gemmStep[T]) tasks() int { return g.bTasks + g.aTasks + g.mt*g.nt }

func (g *gemmStep[T]) runChunk(lo, hi int) {
	for t := lo; t < hi; t++ {
		g.task(t)
	}
}

func (g *gemmStep[T]) task(t int) {
	mr, nr, kc := g.kern.mr, g.kern.nr, g.kcur
	switch {
	case t < g.bTasks:
		p0 := t * g.bGroup
		p1 := min((g.ncur+nr-1)/nr, p0+g.bGroup)
		tmp := g.tmp.get(kc)
		pack(g.bPack[p0*nr*kc:p1*nr*kc], g.Bt, g.jc+p0*nr, min(g.ncur, p1*nr)-p0*nr, g.pc, kc, nr, *tmp)
		g.tmp.put(tmp)
		g.packing.Done()
		return
	case t < g.bTasks+g.aTasks:
		t -= g.bTasks
		p0 := t * g.aGroup
		p1 := min((g.m+mr-1)/mr, p0+g.aGroup)
		tmp := g.tmp.get(kc)
		pack(g.aPack[p0*mr*kc:p1*mr*kc], g.A, g.i0+p0*mr, min(g.m, p1*mr)-p0*mr, g.pc, kc, mr, *tmp)
		g.tmp.put(tmp)
		g.packing.Done()
		return
	}
	t -= g.bTasks + g.aTasks
	g.packing.Wait()
	ic, jb := (t/g.nt)*g.mc, (t%g.nt)*g.nb
	mcur, nbcur := min(g.mc, g.m-ic), min(g.nb, g.ncur-jb)
	switch {
	case g.lazyA != nil:
		g.lazyTile(g.lazyA, ic, mcur, jb, nbcur)
	case g.lazyB != nil:
		g.lazyTile(g.lazyB, ic, mcur, jb, nbcur)
	default:
		g.tileOf(ic, mcur, g.bPack[jb*kc:], jb, nbcur)
	}
	if g.last && g.C.act != nil {
		g.rowBlockDone(t/g.nt, ic, mcur)
	}
}

// rowBlockDone counts a finished tile of row block r (rows [ic, ic+mcur)
// of the chunk) on the last K-block, and the worker finishing the block's
// last tile applies C.act to the block's rows of the step's columns. A
// whole row block, not each tile, so that the activation's reads and
// writes do not evict the block of A that the block's tiles share from L2
// while they still need it (per tile, fusing GELU made Linear(256 → 1024)
// on [2048, 256] 13% slower than a pass of its own).
func (g *gemmStep[T]) rowBlockDone(r, ic, mcur int) {
	if g.nt > 1 && g.rowDone[r].Add(1) != int32(g.nt) {
		return
	}
	g.C.act.apply(g.C, g.i0+ic, mcur, g.jc, g.ncur)
}

// kernelBias returns the bias of the step's columns [jb, jb+nbcur) where
// the micro-kernels add it (the last K-block of a product with a bias,
// C's rows contiguous, and kernels with the bias variants, asmBias and
// asmRowsBias), else nil: the tile's bias is then added in a pass after
// it (addBias).
func (g *gemmStep[T]) kernelBias(jb, nbcur int) []T {
	if !g.last || g.C.bias == nil || g.C.cs != 1 || !biasInKernel || g.kern.asmBias == nil {
		return nil
	}
	if g.aRows && (g.kern.asmRowsBias == nil || g.A.cs != 1) { // by columns: no bias variant
		return nil
	}
	return g.C.bias[g.C.bOff+g.jc+jb:][:nbcur]
}

// tile multiplies the packed rows [ic, ic+mcur) of the step's chunk of A
// (a, from its first panel) by the packed columns [jb, jb+nbcur) of its
// block of B (b) into C, and adds the bias on the last K-block.
func (g *gemmStep[T]) tile(a, b []T, ic, mcur, jb, nbcur int) {
	kc := g.kcur
	a = a[:roundUp(mcur, g.kern.mr)*kc]
	b = b[:roundUp(nbcur, g.kern.nr)*kc]
	bias := g.kernelBias(jb, nbcur)
	if g.kern.asm != nil {
		macroTileAsm(g.kern, a, b, mcur, nbcur, kc, g.C, g.i0+ic, g.jc+jb, g.first, bias)
	} else {
		macroTile(g.kern, a, b, mcur, nbcur, kc, g.C, g.i0+ic, g.jc+jb, g.first)
	}
	if g.last && g.C.bias != nil && bias == nil {
		addBias(g.C, g.i0+ic, mcur, g.jc+jb, nbcur)
	}
}

// tileOf multiplies rows [ic, ic+mcur) of the step's chunk of A, packed
// (aPack) or where they lie (aRows), by b, the packed columns [jb,
// jb+nbcur) of its block of B, into C, and adds the bias on the last
// K-block.
func (g *gemmStep[T]) tileOf(ic, mcur int, b []T, jb, nbcur int) {
	if !g.aRows {
		g.tile(g.aPack[ic*g.kcur:], b, ic, mcur, jb, nbcur)
		return
	}
	bias := g.kernelBias(jb, nbcur)
	macroTileRows(g.kern, g.A, g.pc, b, mcur, nbcur, g.kcur, g.C, g.i0+ic, g.jc+jb, g.first, g.tmp, bias)
	if g.last && g.C.bias != nil && bias == nil {
		addBias(g.C, g.i0+ic, mcur, g.jc+jb, nbcur)
	}
}

// aInPlaceMaxN is the most columns of a product whose A is multiplied in
// place. A tile reads each panel of A once per 32 columns of B from L2
// whether packed or not, but 8 rows of A in place read slower than one
// packed panel: BenchmarkGEMMAInPlace on a Zen 4, in place against
// packed, one worker: +1 to +5% at N = 256 (K = 768 and 1024), even at N
// = 768, -1 to -3% at N = 1024 (K = 256), prefetching A's rows in the
// kernel no better; two workers, the strips of a wider product each
// reading A in place instead of sharing it packed: -2 to -3% at N = 768
// to 2048. At N ≤ 512 on two workers it saves the job that packs A before
// the strips: 128³ to 512³ products 5 to 13% faster.
const aInPlaceMaxN = 512

// readsAInPlace reports whether a product with kern, of n columns, may
// multiply A where it lies, a panel of rows at a time, instead of packing
// it first (macroTileRows): A holds T by rows (column stride 1, rows
// forward, no offset table) and n is at most aInPlaceMaxN, or A holds T
// by columns (row stride 1) and n is at most aColsMaxN; C's columns are
// contiguous, as kern.asm stores them, the two do not share memory (C's
// first K-block would change A before the next one reads it), and kern
// has the in-place kernel. Packing A (packRows8F32, packT8F32) was 3% of
// a GPT-style training step's time.
func readsAInPlace[T float](kern kernel[T], A matSrc[T], C matDst[T], n int) bool {
	if !aInPlace || A.s == nil || A.rowOff != nil || A.colOff != nil || C.cs != 1 || overlapping(A.s, C.s) {
		return false
	}
	byRows := A.cs == 1 && A.rs > 0 && n <= aInPlaceMaxN && kern.asmRows != nil
	byCols := A.rs == 1 && A.cs > 1 && n <= aColsMaxN && kern.asmCols != nil
	return byRows || byCols
}

// aColsMaxN is aInPlaceMaxN for an A read in place by columns, 8
// contiguous elements of each of kc rows of the matrix it transposes. On
// a Zen 4, in place against packed, alternating, best of 6 (a GPT-style
// step's weight gradients gᵀ·x, K = 2048): one worker, N = 256 (M = 256,
// 768 and 1024) 2.5 to 7% faster, N = 1024 (M = 256) even; two workers,
// N = 256 from 2% slower (M = 1024) to 13% faster (M = 256), N = 1024 4%
// faster; square products of 1024 and 2048, whose panels of A are read
// 32 to 64 times, 11 to 19% slower.
const aColsMaxN = 512

// overlapping reports whether a and b share an element.
func overlapping[T any](a, b []T) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	size := unsafe.Sizeof(a[0])
	a0, b0 := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return a0 < b0+uintptr(len(b))*size && b0 < a0+uintptr(len(a))*size
}

// lazyTile is task's tile when the strips share A (p is lazyA: the tile's
// rows [ic, ic+mcur) of the chunk) or B (lazyB: its columns [jb,
// jb+nbcur)), packed by whichever strip needs them first (see lazyPack).
// Once the tasks that nobody had started are packed, a tile whose rows
// are all packed is multiplied whole; else it is multiplied a task's rows
// at a time, those packed first, and the rows of a task that another
// worker is still packing at the end are packed here into a buffer of
// its own, so that the tile waits for nobody. Cutting a tile by rows
// (columns) changes no sum.
func (g *gemmStep[T]) lazyTile(p *lazyPack[T], ic, mcur, jb, nbcur int) {
	kc := g.kcur
	r0, rows, base := g.i0+ic, mcur, g.i0 // the shared operand's rows, and where the step's panels start
	if p == g.lazyB {
		r0, rows, base = g.jc+jb, nbcur, g.jc
	}
	first, last, all := p.claim(r0, rows, g.pc, g.tmp)
	if all && !lazyOwnTiles {
		g.tileOf(ic, mcur, g.bPack[jb*kc:], jb, nbcur)
		return
	}
	tmp := g.tmp.get(kc)
	defer g.tmp.put(tmp)
	done := func(t int) bool { return p.done(t) && !(lazyOwnTiles && t%2 == 1) }
	// segment runs the rows [s0, s1) (of the shared operand) from packed,
	// or from src packed here when packed is nil
	segment := func(s0, s1 int, packed []T) {
		if packed == nil {
			w := g.kern.mr
			src := g.A
			if p == g.lazyB {
				w, src = g.kern.nr, g.Bt
			}
			own := g.tmp.get(roundUp(s1-s0, w) * kc)
			defer g.tmp.put(own)
			pack(*own, src, s0, s1-s0, g.pc, kc, w, *tmp)
			packed = *own
		}
		if p == g.lazyB {
			g.tileOf(ic, mcur, packed, s0-base, s1-s0)
			return
		}
		g.tile(packed, g.bPack[jb*kc:], s0-base, s1-s0, jb, nbcur)
	}
	shared := g.aPack
	if p == g.lazyB {
		shared = g.bPack
	}
	// the tasks packed now first, then the others: from the shared
	// operand if their packer has finished meanwhile, else packed here
	var ran [4]uint64 // bit t-first: multiplied in the first pass
	for t := first; t <= last && t-first < 256; t++ {
		if done(t) {
			s0, s1 := p.rows(t)
			s0, s1 = max(s0, r0), min(s1, r0+rows)
			segment(s0, s1, shared[(s0-base)*kc:])
			ran[(t-first)/64] |= 1 << ((t - first) % 64)
		}
	}
	for t := first; t <= last; t++ {
		if t-first < 256 && ran[(t-first)/64]&(1<<((t-first)%64)) != 0 {
			continue
		}
		s0, s1 := p.rows(t)
		s0, s1 = max(s0, r0), min(s1, r0+rows)
		if done(t) {
			segment(s0, s1, shared[(s0-base)*kc:])
		} else {
			segment(s0, s1, nil)
		}
	}
}

// serialGEMM is the size (multiply-adds) under which a GEMM runs on the
// calling goroutine alone: about 5 µs of work at full speed, less than
// waking a helper and splitting the tiles cost.
const serialGEMM = 1 << 19

// gemm computes C = A·B (m×k times k×n). With par false it runs on the
// calling goroutine only (the batch is parallel instead).
func gemm[T float](b *Backend, kern kernel[T], m, n, k int, A, B matSrc[T], C matDst[T], par bool) {
	gemmPacked(b, kern, m, n, k, A, B, C, par, nil, nil)
}

// gemmPacked is gemm with A or B, or neither, already packed: preA as
// prepackA packs A (m×k), preB as prepackB packs B (k×n), for the same
// kernel. A strip of a parallel GEMM multiplies the operand shared by
// every strip packed once, by the strips as they need it (gemmInStrips,
// gemmLazy).
func gemmPacked[T float](b *Backend, kern kernel[T], m, n, k int, A, B matSrc[T], C matDst[T], par bool, preA, preB []T) {
	gemmLazy(b, kern, m, n, k, A, B, C, par, preA, preB, nil, nil)
}

// gemmLazy is gemmPacked where lazyA (or lazyB), when not nil, packs
// preA (preB) as the tiles need it, shared with the other strips of a
// gemmInStrips call (see lazyPack).
func gemmLazy[T float](b *Backend, kern kernel[T], m, n, k int, A, B matSrc[T], C matDst[T], par bool, preA, preB []T, lazyA, lazyB *lazyPack[T]) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		if !C.acc {
			for i := range m {
				for j := range n {
					C.s[C.off+i*C.rs+j*C.cs] = 0
				}
			}
		}
		if C.bias != nil {
			addBias(C, 0, m, 0, n)
		}
		return
	}
	if m*n*k < serialGEMM {
		par = false // the hand-off to helpers costs more than it saves
	}
	if par && b.workers > 1 && (m*n*k < stripGEMM || max(m, n)/b.workers >= stripWidth) &&
		A.rowOff == nil && B.colOff == nil { // strips move A's rows or B's columns by a stride
		gemmInStrips(b, kern, m, n, k, A, B, C)
		return
	}
	mr, nr := kern.mr, kern.nr
	nc, kc, mChunk := gemmBlocks(kern, m, n, k)
	workers := 1
	if par {
		workers = b.workers
	}
	pool := poolFor[T]()
	var aBuf, bBuf *[]T
	if preB == nil {
		bBuf = pool.get(kc * nc)
	}
	aRows := preA == nil && lazyA == nil && readsAInPlace(kern, A, C, n)
	if preA == nil && !aRows {
		aBuf = pool.get(mChunk * kc)
	}
	g := typedPool[T](&stepF32, &stepF64).Get().(*gemmStep[T])
	*g = gemmStep[T]{kern: kern, A: A, Bt: B.t(), C: C, tmp: pool, preA: preA, preB: preB, aRows: aRows, lazyA: lazyA, lazyB: lazyB, rowDone: g.rowDone}
	for jc := 0; jc < n; jc += nc {
		ncur := min(nc, n-jc)
		for pc := 0; pc < k; pc += kc {
			kcur := min(kc, k-pc)
			g.jc, g.pc, g.ncur, g.kcur, g.first = jc, pc, ncur, kcur, pc == 0 && !C.acc
			g.last = pc+kcur == k
			if preB != nil {
				g.bPack = preB[jc*k+roundUp(ncur, nr)*pc:][:roundUp(ncur, nr)*kcur]
			} else {
				g.bPack = (*bBuf)[:roundUp(ncur, nr)*kcur]
			}
			for i0 := 0; i0 < m; i0 += mChunk {
				g.i0, g.m = i0, min(mChunk, m-i0)
				g.mc, g.nb, g.mt, g.nt = tileGrid(g.m, ncur, mr, nr, int(sizeOf[T]()), workers)
				// packing tasks of about 16K elements; B in the first chunk
				g.bGroup = max(1, (1<<14)/(kcur*nr))
				g.bTasks = 0
				if i0 == 0 && preB == nil {
					g.bTasks = ((ncur+nr-1)/nr + g.bGroup - 1) / g.bGroup
				}
				g.aGroup = max(1, (1<<14)/(kcur*mr))
				switch {
				case aRows:
					g.aPack, g.aTasks = nil, 0
				case preA != nil:
					g.aPack = preA[i0*k+roundUp(g.m, mr)*pc:][:roundUp(g.m, mr)*kcur]
					g.aTasks = 0
				default:
					g.aPack = (*aBuf)[:roundUp(g.m, mr)*kcur]
					g.aTasks = ((g.m+mr-1)/mr + g.aGroup - 1) / g.aGroup
				}
				if g.last && C.act != nil {
					if len(g.rowDone) < g.mt {
						g.rowDone = make([]atomic.Int32, g.mt)
					}
					for r := range g.rowDone[:g.mt] {
						g.rowDone[r].Store(0)
					}
				}
				g.packing.Add(g.bTasks + g.aTasks)
				if par {
					b.parallelRun(g.tasks(), 1, g)
				} else {
					g.runChunk(0, g.tasks())
				}
			}
		}
	}
	*g = gemmStep[T]{rowDone: g.rowDone}
	typedPool[T](&stepF32, &stepF64).Put(g)
	if aBuf != nil {
		pool.put(aBuf)
	}
	if bBuf != nil {
		pool.put(bBuf)
	}
}

// gemmBlocks returns the blocking of an m×n×k product with kern: nc
// columns of B packed at once, kc rows of it (the summation blocks), and A
// packed in chunks of mChunk rows, so that its buffer stays within L3
// however tall A is.
func gemmBlocks[T float](kern kernel[T], m, n, k int) (nc, kc, mChunk int) {
	mr, nr := kern.mr, kern.nr
	nc = min(max(nr, gemmNC/nr*nr), roundUp(n, nr))
	kc = min(gemmKC, k)
	mChunk = min(roundUp(m, mr), max(mr, gemmMChunk/mr*mr))
	return nc, kc, mChunk
}

// prepackA packs all of A (m×k) as gemmPacked reads it as preA: for each
// chunk of mChunk rows at i0 and each K-block at pc, the chunk's MR-tall
// panels over the block at element i0·k + roundUp(rows, MR)·pc of dst,
// which holds roundUp(m, MR)·k elements.
func prepackA[T float](dst []T, kern kernel[T], m, n, k int, A matSrc[T]) {
	mr := kern.mr
	_, kc, mChunk := gemmBlocks(kern, m, n, k)
	tmp := poolFor[T]().get(kc)
	for i0 := 0; i0 < m; i0 += mChunk {
		rows := min(mChunk, m-i0)
		for pc := 0; pc < k; pc += kc {
			kcur := min(kc, k-pc)
			pack(dst[i0*k+roundUp(rows, mr)*pc:], A, i0, rows, pc, kcur, mr, *tmp)
		}
	}
	poolFor[T]().put(tmp)
}

// prepackB packs all of B (k×n) as gemmPacked reads it as preB: for each
// block of nc columns at jc and each K-block at pc, the block's NR-wide
// panels at element jc·k + roundUp(cols, NR)·pc of dst, which holds
// roundUp(n, NR)·k elements.
func prepackB[T float](dst []T, kern kernel[T], m, n, k int, B matSrc[T]) {
	nr := kern.nr
	nc, kc, _ := gemmBlocks(kern, m, n, k)
	tmp := poolFor[T]().get(kc)
	Bt := B.t()
	for jc := 0; jc < n; jc += nc {
		cols := min(nc, n-jc)
		for pc := 0; pc < k; pc += kc {
			kcur := min(kc, k-pc)
			pack(dst[jc*k+roundUp(cols, nr)*pc:], Bt, jc, cols, pc, kcur, nr, *tmp)
		}
	}
	poolFor[T]().put(tmp)
}

// A parallel GEMM is cut into strips of C, each a whole single-threaded
// GEMM (see gemmInStrips), rather than sharing packed blocks between the
// workers, when it is under stripGEMM multiply-adds or its strips would
// be at least stripWidth wide with one per worker: on two cores strips
// measured faster at every size (n = 512: 360 against 268 GFLOP/s; n =
// 1024: 386 against 336; n = 2048: 395 against 372), as no worker waits
// for another's packing, and on a shared machine the shared scheme's
// barrier after each packing step waits for any packer the operating
// system descheduled. Thin strips on many cores would each stream the
// shared operand for little work, so those share.
//
// There are about stripsPerWorker strips per worker, claimed one at a
// time, so that when the operating system takes a core from one worker
// (a busy process beside it) the others run the strips it has not
// started: a worker descheduled in its strip holds the call up for at
// most that strip. A strip is at least one micro-tile wide, and at least
// minStripWidth for products of stripGEMM multiply-adds or more, where
// each strip first streams the whole shared operand from L3 (its
// micro-kernels read it from L2 once per B panel in any case).
const (
	stripGEMM       = 1 << 25
	stripWidth      = 128
	stripsPerWorker = 4
	minStripWidth   = 64
)

// gemmStrips is one GEMM cut into strips, held in a pool so that a call
// allocates nothing.
type gemmStrips[T float] struct {
	b          *Backend
	kern       kernel[T]
	m, n, k    int
	A, B       matSrc[T]
	C          matDst[T]
	byCols     bool         // strips of columns (else of rows)
	width      int          // strip width (a multiple of the tile side)
	preA, preB []T          // the operand every strip multiplies, packed once
	lazy       *lazyPack[T] // packs preA (byCols) or preB as the strips need it; nil: packed before
}

// stripWidthFor returns the width of the strips of a side of side rows or
// columns, cut for workers into strips of whole tiles (see
// stripsPerWorker) of a product of madds multiply-adds.
func stripWidthFor(side, tile, madds, workers int) int {
	parts := stripsPerWorker * workers
	w := roundUp((side+parts-1)/parts, tile)
	if madds >= stripGEMM {
		w = max(w, roundUp(minStripWidth, tile))
	}
	return w
}

// gemmInStrips runs a parallel GEMM as strips of C (see stripGEMM): C is
// cut along its longer side, and the other operand, which every strip
// multiplies, is packed once: below prepackMinElems elements in the
// strips' job, by whichever strip needs a part of it first (lazyPack),
// else here before the strips start (prepackParallel), so that a strip
// packs only its own rows of A (or columns of B) besides, and no strip
// waits for another's packing. Strips of columns whose A is read in place
// (readsAInPlace) share nothing packed. Each element's sum is the same
// however C is cut.
func gemmInStrips[T float](b *Backend, kern kernel[T], m, n, k int, A, B matSrc[T], C matDst[T]) {
	pool := typedPool[T](&stripsF32, &stripsF64)
	g := pool.Get().(*gemmStrips[T])
	*g = gemmStrips[T]{b: b, kern: kern, m: m, n: n, k: k, A: A, B: B, C: C, byCols: n >= m}
	side, tile := m, kern.mr
	if g.byCols {
		side, tile = n, kern.nr
	}
	g.width = stripWidthFor(side, tile, m*n*k, b.workers)
	bufs := poolFor[T]()
	var pre *[]T
	var lazy *lazyPack[T]
	// strips of columns whose A is read in place share nothing
	shared := !g.byCols || !readsAInPlace(kern, A, C, n)
	if shared && packLazily && min(m, n)*k < prepackMinElems { // see lazyPack
		lazy = typedPool[T](&lazyF32, &lazyF64).Get().(*lazyPack[T])
		g.lazy = lazy
	}
	nc, kc, mChunk := gemmBlocks(kern, m, n, k)
	switch {
	case !shared: // every strip reads A in place
	case g.byCols:
		pre = bufs.get(roundUp(m, kern.mr) * k)
		if lazy != nil {
			lazy.init(*pre, A, m, k, kern.mr, mChunk, kc)
		} else {
			prepackParallel(b, *pre, kern, m, n, k, A, B, false) // prepackA, shared by the workers
		}
		g.preA = *pre
	default:
		pre = bufs.get(roundUp(n, kern.nr) * k)
		if lazy != nil {
			lazy.init(*pre, B.t(), n, k, kern.nr, nc, kc)
		} else {
			prepackParallel(b, *pre, kern, m, n, k, A, B, true) // prepackB, shared by the workers
		}
		g.preB = *pre
	}
	b.parallelRun((side+g.width-1)/g.width, 1, g)
	if pre != nil {
		bufs.put(pre)
	}
	if lazy != nil {
		lazy.dst, lazy.src = nil, matSrc[T]{}
		typedPool[T](&lazyF32, &lazyF64).Put(lazy)
	}
	*g = gemmStrips[T]{}
	pool.Put(g)
}

func (g *gemmStrips[T]) runChunk(lo, hi int) {
	for s := lo; s < hi; s++ {
		A, B, C := g.A, g.B, g.C
		if g.byCols {
			j0 := s * g.width
			B.off += j0 * B.cs
			C.off += j0 * C.cs
			C.bOff += j0
			gemmLazy(g.b, g.kern, g.m, min(g.width, g.n-j0), g.k, A, B, C, false, g.preA, nil, g.lazy, nil)
			continue
		}
		i0 := s * g.width
		A.off += i0 * A.rs
		C.off += i0 * C.rs
		gemmLazy(g.b, g.kern, min(g.width, g.m-i0), g.n, g.k, A, B, C, false, nil, g.preB, nil, g.lazy)
	}
}

// runAlone runs the whole product as one GEMM on the calling goroutine,
// as a one-worker Backend does, when the pool finds that nobody will help
// with the strips (see soloRunner): each strip is a GEMM of its own, with
// its own blocking set-up and packing of its part of the other operand,
// which beside a busy process cost a 2-worker Backend's caller, running
// every strip itself, about 5% more CPU time than a 1-worker Backend at
// n = 128 (79 against 83 GFLOP per CPU-second). The shared operand is
// used where it was packed before the strips' job; a lazily packed one is
// left unpacked, and the product packs its blocks as it goes. The sums
// are the same as the strips' (each element's is the same however C is
// cut).
func (g *gemmStrips[T]) runAlone() {
	preA, preB := g.preA, g.preB
	if g.lazy != nil {
		preA, preB = nil, nil
	}
	gemmLazy(g.b, g.kern, g.m, g.n, g.k, g.A, g.B, g.C, false, preA, preB, nil, nil)
}

var (
	stripsF32 = sync.Pool{New: func() any { return new(gemmStrips[float32]) }}
	stripsF64 = sync.Pool{New: func() any { return new(gemmStrips[float64]) }}
)

// tileGrid cuts an m×n block of C into tiles of mc×nb (multiples of MR and
// NR), at most gemmMC×gemmNB, split further while there are fewer than
// four tiles per worker, so that the workers stay balanced. Tiling never
// changes results: each element's sum is the same whatever tile holds it.
func tileGrid(m, n, mr, nr, size, workers int) (mc, nb, mt, nt int) {
	mc = min(max(mr, gemmMC*4/size/mr*mr), roundUp(m, mr))
	nb = min(max(nr, gemmNB/nr*nr), roundUp(n, nr))
	for {
		mt, nt = (m+mc-1)/mc, (n+nb-1)/nb
		if workers <= 1 || mt*nt >= 4*workers {
			return
		}
		switch {
		case nb >= mc && nb > nr:
			nb = roundUp((nb+1)/2, nr)
		case mc > mr:
			mc = roundUp((mc+1)/2, mr)
		case nb > nr:
			nb = roundUp((nb+1)/2, nr)
		default:
			return
		}
	}
}

// macroTileAsm is macroTile for an assembly kernel: it writes C directly
// when C's rows are contiguous, with masks for the partial edge tiles, and
// else through a tile buffer. bias, when not nil (nb elements; C's rows
// contiguous and kern.asmBias set), is added to each row by the kernel.
func macroTileAsm[T float](kern kernel[T], a, bp []T, mc, nb, kc int, C matDst[T], i0, j0 int, first bool, bias []T) {
	mr, nr := kern.mr, kern.nr
	var tile []T // for C with strided rows; from the pool (the kernel is called through a func value, so a local array would escape)
	if C.cs != 1 {
		tb := poolFor[T]().get(mr * nr)
		defer poolFor[T]().put(tb)
		tile = *tb
	}
	_ = a[roundUp(mc, mr)*kc-1]
	_ = bp[roundUp(nb, nr)*kc-1]
	for jr := 0; jr < nb; jr += nr {
		bPanel := &bp[(jr/nr)*nr*kc]
		nv := min(nr, nb-jr)
		mask := uint64(1)<<nv - 1
		for ir := 0; ir < mc; ir += mr {
			aPanel := &a[(ir/mr)*mr*kc]
			mv := min(mr, mc-ir)
			base := C.off + (i0+ir)*C.rs + (j0+jr)*C.cs
			if C.cs == 1 {
				if bias != nil {
					kern.asmBias(kc, aPanel, bPanel, &C.s[base], C.rs, mv, mask, !first, &bias[jr])
					continue
				}
				kern.asm(kc, aPanel, bPanel, &C.s[base], C.rs, mv, mask, !first)
				continue
			}
			kern.asm(kc, aPanel, bPanel, &tile[0], nr, mr, 1<<nr-1, false)
			for i := range mv {
				for j := range nv {
					p := base + i*C.rs + j*C.cs
					if first {
						C.s[p] = tile[i*nr+j]
					} else {
						C.s[p] += tile[i*nr+j]
					}
				}
			}
		}
	}
}

// macroTileRows is macroTileAsm for an A read in place (readsAInPlace):
// rows [i0, i0+mc) of A from column c0, kc columns of them, by packed
// kc×nb panels of B (bp) into C rows [i0, i0+mc) and columns [j0, j0+nb),
// with kern.asmRows, or kern.asmCols where A is stored by columns. Those
// kernels read all mr rows of a panel; a last panel whose reads would run
// past the end of A's buffer is packed into a buffer from pool and
// multiplied with kern.asm. The sums are the packed kernel's, in the same
// order. bias, when not nil (nb elements; A by rows, kern.asmRowsBias and
// asmBias set), is added to each row by the kernels.
func macroTileRows[T float](kern kernel[T], A matSrc[T], c0 int, bp []T, mc, nb, kc int, C matDst[T], i0, j0 int, first bool, pool *bufPool[T], bias []T) {
	if countRowsTiles {
		rowsTiles.Add(1)
	}
	mr, nr := kern.mr, kern.nr
	_ = bp[roundUp(nb, nr)*kc-1]
	// A's element (i0+i, c0+p) at base + i·step + p·lda; a panel's reads
	// end at its first element plus reach
	asm, lda, step := kern.asmRows, A.rs, A.rs
	if A.cs != 1 {
		asm, lda, step = kern.asmCols, A.cs, 1
	}
	base := A.off + i0*A.rs + c0*A.cs
	reach := (mr-1)*A.rs + (kc-1)*A.cs + 1
	var edge *[]T // the packed last panel, when it cannot be read in place
	for jr := 0; jr < nb; jr += nr {
		bPanel := &bp[(jr/nr)*nr*kc]
		nv := min(nr, nb-jr)
		mask := uint64(1)<<nv - 1
		for ir := 0; ir < mc; ir += mr {
			mv := min(mr, mc-ir)
			c := &C.s[C.off+(i0+ir)*C.rs+j0+jr]
			if off := base + ir*step; off+reach <= len(A.s) {
				if bias != nil {
					kern.asmRowsBias(kc, &A.s[off], lda, bPanel, c, C.rs, mv, mask, !first, &bias[jr])
					continue
				}
				asm(kc, &A.s[off], lda, bPanel, c, C.rs, mv, mask, !first)
				continue
			}
			if edge == nil {
				edge = pool.get(mr * kc)
				tmp := pool.get(kc)
				pack((*edge)[:mr*kc], A, i0+ir, mv, c0, kc, mr, *tmp)
				pool.put(tmp)
			}
			if bias != nil {
				kern.asmBias(kc, &(*edge)[0], bPanel, c, C.rs, mv, mask, !first, &bias[jr])
				continue
			}
			kern.asm(kc, &(*edge)[0], bPanel, c, C.rs, mv, mask, !first)
		}
	}
	if edge != nil {
		pool.put(edge)
	}
}

// macroTile multiplies a packed mc×kc block of A by packed kc×nb panels of
// B into C rows [i0, i0+mc) and columns [j0, j0+nb).
func macroTile[T float](kern kernel[T], a, bp []T, mc, nb, kc int, C matDst[T], i0, j0 int, first bool) {
	mr, nr := kern.mr, kern.nr
	tb := poolFor[T]().get(mr * nr) // a local array would escape through kern.fn
	defer poolFor[T]().put(tb)
	c := *tb
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
						if vecAxpy(acc, row, a) {
							continue
						}
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
				if d, ok := vecDot(x, y); ok {
					out[oOff+j*os] = d
					continue
				}
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
