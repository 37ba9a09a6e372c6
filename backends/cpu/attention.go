package cpu

import (
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// Fused attention (backends.AttentionFusion), FlashAttention-2 style:
//
//	forward, one task per (problem, block of attnBlockQ queries):
//	  for each block of attnBlockK keys the queries may see:
//	    S = Q·Kᵀ·scale (+ mask)          one GEMM into a tile
//	    m' = max(m, rowmax S); P = exp(S − m'); l = l·e^(m−m') + rowsum P
//	    O = O·e^(m−m') + P·V             one GEMM adding to O
//	  out = O / l, lse = m + log l
//
//	backward, Dᵢ = dOᵢ·Oᵢ first; then one task per (problem, group of key
//	blocks), and for each key block, each query block that sees it:
//	    P = exp(Q·Kᵀ·scale (+ mask) − lse)   recomputed, bit for bit as
//	                                         the forward pass had it
//	    dV += Pᵀ·dO;  dP = dO·Vᵀ;  dS = P∘(dP − D)·scale
//	    dK += dSᵀ·Q;  dQ_group += dS·K
//	  dQ = the sum of the groups' partial dQ, in group order
//
// Every product is a single-threaded GEMM (gemm.go's micro-kernels) on
// tiles that stay in L1 and L2; the tasks run in parallel. With AVX-512 or
// AVX2 the tiles of scores, probabilities and their gradients (and Q and dO where
// they can be) are multiplied where they lie, by kernels that read A by
// rows or by columns (attnDirectF32), instead of packed first; and in a
// causal tile on the diagonal the products leave out the part past the
// diagonal, where the probabilities are zero (attnTrim). Both give the
// bits the packed products of the whole tiles give. Each output element
// is computed by one task in a fixed order (key blocks in order, groups
// added in order), and the number of groups depends only on the sizes, so
// the results do not depend on the number of workers. Causal attention
// skips the tiles above the diagonal, about half the work. Nothing of size
// Lq×Lk is allocated: the scratch is a few tiles per task, plus the partial
// dQ of each group (at most attnMaxGroups copies of dq).

const (
	attnBlockQ = 64 // queries per tile
	attnBlockK = 64 // keys per tile
	// attnMaxGroups bounds the key-block groups of the backward pass: more
	// groups give more parallel tasks when there are few problems, each
	// costing a partial dQ.
	attnMaxGroups = 8
	// attnMRAVX2 and attnMRAVX512 are the rows of the micro-kernels that
	// read a tile in place (attnDirectMR): AVX2's 6×16, AVX-512's 8×32.
	attnMRAVX2, attnMRAVX512 = 6, 8
	attnDirectMaxMR          = attnMRAVX512
	attnBlockMax             = max(attnBlockQ, attnBlockK)
	// attnTileSize is the length of a tile of scores or probabilities:
	// attnBlockQ×attnBlockK with that room for either kernel.
	attnTileSize = max((attnBlockMax+attnMRAVX2-1)/attnMRAVX2*attnMRAVX2,
		(attnBlockMax+attnMRAVX512-1)/attnMRAVX512*attnMRAVX512)*attnBlockMax + attnDirectMaxMR
)

// attnDirectF32, where set (AVX-512 or AVX2, attention_gemm_amd64.go), is
// attnRun.direct for float32, with attnDirectKernelF32 the kernel whose
// panels it reads; attnDirectMR is that kernel's rows: the tiles hold
// rows up to a multiple of it, and a few elements more, as the in-place
// kernels read them.
var (
	attnDirectMR        = attnMRAVX2
	attnDirectF32       func(a attnA[float32], b attnB[float32], mc, nb, k int, C matDst[float32], acc bool, trim attnTrim)
	attnDirectKernelF32 kernel[float32]
)

// attnA is the A operand of a tile product: mc×k, either packed as packOp
// packs it (packed), or a tile read in place, element (i, p) at
// s[i·rs+p·cs], one of rs and cs 1, s holding the rows (or columns) up to
// the next multiple of attnDirectMR.
type attnA[T float] struct {
	s      []T
	rs, cs int
	packed bool
}

// attnB is the B operand of a tile product: k×nb, either packed as
// packOp packs it (rs 0), or a matrix read in place, element (p, j) at
// s[p·rs+j], nb a multiple of the kernel's panel width.
type attnB[T float] struct {
	s  []T
	rs int
}

// attnTrim tells a tile product of a causal tile which part it may leave
// out: with d = i0 + CausalOffset − j0 (queries from i0, keys from j0),
// row i of the tile sees keys j ≤ i + d, and what lies past that is
// either not read (the scores) or zero (the probabilities and their
// gradients). Leaving it out gives the same sums, the same bits (adding
// a zero product changes no sum but the sign of a zero one).
type attnTrim struct {
	kind attnTrimKind
	d    int
}

type attnTrimKind int

const (
	attnTrimNone attnTrimKind = iota
	// attnTrimCols: C is scores (queries × keys); the micro-tiles past
	// the diagonal are not computed (C keeps what it held there)
	attnTrimCols
	// attnTrimKEnd: A's rows are queries, k its keys: row panel ir sums
	// over k < ir + mr + d only
	attnTrimKEnd
	// attnTrimKStart: A's rows are keys, k its queries: row panel ir
	// sums over k ≥ ir − d only
	attnTrimKStart
)

// span returns the columns of C (up to nb) and the k range row panel ir
// (mr rows) of a product needs.
func (t attnTrim) span(ir, mr, nb, k int) (n1, k0, k1 int) {
	n1, k0, k1 = nb, 0, k
	switch t.kind {
	case attnTrimCols:
		n1 = max(0, min(nb, ir+mr+t.d))
	case attnTrimKEnd:
		k1 = max(0, min(k, ir+mr+t.d))
	case attnTrimKStart:
		k0 = max(0, min(k, ir-t.d))
	}
	return n1, k0, k1
}

// attnDirectMode says when float32 attention multiplies its tiles in place:
// attnDirectAuto where attnDirectKernelF32 is the GEMM kernel (kernelF32),
// attnDirectOn wherever there is one (tests, to run that path on an
// AVX-512 machine too), attnDirectOff never (tests and benchmarks, to
// compare with packing the tiles).
type attnDirectMode int

const (
	attnDirectAuto attnDirectMode = iota
	attnDirectOn
	attnDirectOff
)

var attnDirect = attnDirectAuto

// attnMat is one [batch…, rows, cols] operand: element (r, c) of problem
// b at offs[b] + r·rs + c (a mask's: + c·cs), offs[b] being the offset of
// problem b (batch dimensions in row-major order).
type attnMat struct {
	offs   []int
	rs, cs int
}

func attnMatOf(v backends.View) attnMat {
	r := len(v.Shape)
	batch := v.Shape[:r-2]
	offs := make([]int, backends.NumElements(batch))
	idx := make([]int, len(batch))
	for b := range offs {
		o := v.Offset
		for d, i := range idx {
			o += i * v.Strides[d]
		}
		offs[b] = o
		for d := len(idx) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < batch[d] {
				break
			}
			idx[d] = 0
		}
	}
	return attnMat{offs: offs, rs: v.Strides[r-2], cs: v.Strides[r-1]}
}

// at returns the offset of row i of problem b.
func (m attnMat) at(b, i int) int { return m.offs[b] + i*m.rs }

// attnRun holds one call's operands, typed.
type attnRun[T float] struct {
	b                                   *Backend
	g                                   backends.AttentionGeometry
	scale                               T
	kern                                kernel[T]
	q, k, v, out, dout, dq, dk, dv, lse []T
	qm, km, vm, om, dom, dqm, dkm, dvm  attnMat
	maskB                               []uint8 // bool mask, or
	maskF                               []T     // float mask, or neither
	mm                                  attnMat
	ops                                 attnRowOps[T]
	exp                                 func(x T) T
	log                                 func(x T) T
	groups, blocksPerGroup              int // backward: key-block groups per problem, blocks per group
	delta                               []T // backward: Dᵢ = dOᵢ·Oᵢ, [Batch·Lq]
	part                                []T // backward, several groups: partial dQ, [Batch, groups, Lq, D]
	// direct, when set, is attnDirectF32 (and kern its kernel): mulTile
	// then reads the tiles in place
	direct func(a attnA[T], b attnB[T], mc, nb, k int, C matDst[T], acc bool, trim attnTrim)
}

// AttentionForward implements backends.AttentionFusion.
func (b *Backend) AttentionForward(out, lse, q, k, v, mask backends.View, g backends.AttentionGeometry) {
	const op = "attention"
	if !b.checkAttention(op, g, q, k, v, mask, []backends.View{out, lse}, []string{"out", "lse"}) {
		return
	}
	switch q.DType {
	case backends.Float32:
		r := newAttnRun[float32](b, g, q, k, v, mask)
		r.out, r.om, r.lse = attnData[float32](out), attnMatOf(out), attnData[float32](lse)[lse.Offset:]
		r.forward()
	case backends.Float64:
		r := newAttnRun[float64](b, g, q, k, v, mask)
		r.out, r.om, r.lse = attnData[float64](out), attnMatOf(out), attnData[float64](lse)[lse.Offset:]
		r.forward()
	}
}

// AttentionBackward implements backends.AttentionFusion.
func (b *Backend) AttentionBackward(dq, dk, dv, q, k, v, mask, out, dout, lse backends.View, g backends.AttentionGeometry) {
	const op = "attention grad"
	views := []backends.View{out, dout, lse}
	names := []string{"out", "out grad", "lse"}
	for i, d := range []backends.View{dq, dk, dv} {
		if d.Buf != nil {
			views, names = append(views, d), append(names, [...]string{"q grad", "k grad", "v grad"}[i])
		}
	}
	if !b.checkAttention(op, g, q, k, v, mask, views, names) {
		return
	}
	switch q.DType {
	case backends.Float32:
		r := newAttnRun[float32](b, g, q, k, v, mask)
		r.setGrads(dq, dk, dv, out, dout, lse)
		r.backward()
	case backends.Float64:
		r := newAttnRun[float64](b, g, q, k, v, mask)
		r.setGrads(dq, dk, dv, out, dout, lse)
		r.backward()
	}
}

// checkAttention checks the views of a fused attention call: q, k, v and
// the others (named by names) of one float dtype, one batch shape whose
// size is g.Batch and the sizes g gives, unit strides along their last
// dimension, lse contiguous, and an optional bool or float mask of the
// scores' shape.
func (b *Backend) checkAttention(op string, g backends.AttentionGeometry, q, k, v, mask backends.View,
	others []backends.View, names []string) bool {
	if q.DType != backends.Float32 && q.DType != backends.Float64 {
		return b.refuse(op, "dtype %s (want float32 or float64)", q.DType)
	}
	if g.Batch < 0 || g.Lq < 0 || g.Lk < 0 || g.D < 0 || g.Dv < 0 {
		return b.refuse(op, "negative size in %+v", g)
	}
	if len(q.Shape) < 2 || backends.NumElements(q.Shape[:len(q.Shape)-2]) != g.Batch {
		return b.refuse(op, "q: shape %v does not hold %d problems", q.Shape, g.Batch)
	}
	batch := q.Shape[:len(q.Shape)-2]
	with := func(tail ...int) []int { return append(append([]int(nil), batch...), tail...) }
	shapes := map[string][]int{
		"q": with(g.Lq, g.D), "k": with(g.Lk, g.D), "v": with(g.Lk, g.Dv),
		"out": with(g.Lq, g.Dv), "out grad": with(g.Lq, g.Dv), "lse": with(g.Lq),
		"q grad": with(g.Lq, g.D), "k grad": with(g.Lk, g.D), "v grad": with(g.Lk, g.Dv),
	}
	views := append([]backends.View{q, k, v}, others...)
	all := append([]string{"q", "k", "v"}, names...)
	for i, view := range views {
		name := all[i]
		if b.checkView(op, name, view) == nil || !b.checkDType(op, name, view, q.DType) ||
			!b.checkShape(op, name, view, shapes[name]...) {
			return false
		}
		last := len(view.Shape) - 1
		switch {
		case name == "lse" && !view.IsContiguous():
			return b.refuse(op, "lse: view %s is not contiguous", view)
		case name != "lse" && view.Shape[last] > 1 && view.Strides[last] != 1:
			return b.refuse(op, "%s: view %s: the last dimension must have stride 1", name, view)
		}
	}
	if mask.Buf != nil {
		if b.checkView(op, "mask", mask) == nil || !b.checkDType(op, "mask", mask, backends.Bool, q.DType) ||
			!b.checkShape(op, "mask", mask, with(g.Lq, g.Lk)...) {
			return false
		}
	}
	return true
}

// attnData returns the elements of v's buffer as []T.
func attnData[T float](v backends.View) []T {
	var z T
	if _, ok := any(z).(float32); ok {
		return any(buf(v).f32()).([]T)
	}
	return any(buf(v).f64()).([]T)
}

func newAttnRun[T float](b *Backend, g backends.AttentionGeometry, q, k, v, mask backends.View) *attnRun[T] {
	r := &attnRun[T]{b: b, g: g, scale: T(g.Scale), kern: convKernel[T](),
		q: attnData[T](q), k: attnData[T](k), v: attnData[T](v),
		qm: attnMatOf(q), km: attnMatOf(k), vm: attnMatOf(v)}
	if mask.Buf != nil {
		r.mm = attnMatOf(mask)
		if mask.DType == backends.Bool {
			r.maskB = buf(mask).u8()
		} else {
			r.maskF = attnData[T](mask)
		}
	}
	var z T
	if _, ok := any(z).(float32); ok {
		r.ops = any(attnF32).(attnRowOps[T])
		if attnDirectF32 != nil && (attnDirect == attnDirectOn ||
			attnDirect == attnDirectAuto && kernelF32.name == attnDirectKernelF32.name) {
			r.kern = any(attnDirectKernelF32).(kernel[T])
			r.direct = any(attnDirectF32).(func(attnA[T], attnB[T], int, int, int, matDst[T], bool, attnTrim))
		}
		r.exp = any(attnExpF32).(func(T) T)
		r.log = any(func(x float32) float32 { return float32(math.Log(float64(x))) }).(func(T) T)
	} else {
		r.ops = any(attnRowOps[float64]{exp: attnExpRowF64, max: attnMaxRow[float64], ds: attnDsRow[float64], scale: attnScaleRow[float64], dot: attnDotRow[float64]}).(attnRowOps[T])
		r.exp = any(math.Exp).(func(T) T)
		r.log = any(math.Log).(func(T) T)
	}
	return r
}

// keyEnd returns the end of the keys that queries [i0, i0+rows) may see.
func (r *attnRun[T]) keyEnd(i0, rows int) int {
	if !r.g.Causal {
		return r.g.Lk
	}
	return max(0, min(r.g.Lk, i0+rows+r.g.CausalOffset))
}

// Operands are packed once per task into the micro-kernel's panels
// (packOp), so that the products of the tiles (mul) run on packed data
// without the packing the general GEMM repeats on every call: per problem,
// the blocks of K and V (and in the backward pass of Q and dO) in the
// roles the products take them in, per tile only the probabilities and
// their gradients, and those not at all where the run has a direct kernel
// (mulTile, mulA).

// packOp packs rows [r0, r0+rn) and columns [0, k) of src into dst in
// panels of w rows, the columns in blocks of at most gemmKC as gemm packs
// them, and returns the packed part of dst. tmp holds gemmKC elements.
func packOp[T float](dst []T, src matSrc[T], r0, rn, k, w int, tmp []T) []T {
	kc := min(gemmKC, k)
	for pc := 0; pc < k; pc += kc {
		pack(dst[roundUp(rn, w)*pc:], src, r0, rn, pc, min(kc, k-pc), w, tmp)
	}
	return dst[:roundUp(rn, w)*k]
}

// packedSize is the length packOp gives rn rows of k columns in panels of w.
func packedSize(rn, k, w int) int { return roundUp(rn, w) * k }

// mul sets C (mc×nb; or adds to it, with acc) to the product of a, mc
// rows packed as A, and bp, nb columns packed as B, over k.
func (r *attnRun[T]) mul(a, bp []T, mc, nb, k int, C matDst[T], acc bool) {
	if k == 0 {
		if !acc {
			for i := range mc {
				clear(C.s[C.off+i*C.rs:][:nb])
			}
		}
		return
	}
	kc := min(gemmKC, k)
	mr, nr := r.kern.mr, r.kern.nr
	for pc := 0; pc < k; pc += kc {
		ap, bpp := a[roundUp(mc, mr)*pc:], bp[roundUp(nb, nr)*pc:]
		if r.kern.asm != nil {
			macroTileAsm(r.kern, ap, bpp, mc, nb, min(kc, k-pc), C, 0, 0, pc == 0 && !acc, nil)
		} else {
			macroTile(r.kern, ap, bpp, mc, nb, min(kc, k-pc), C, 0, 0, pc == 0 && !acc)
		}
	}
}

// mulTile is mul with A a tile read in place: element (i, p) at
// a[i·ars+p·acs], one of ars and acs 1, a holding attnTileSize elements
// (see attnDirectMR). Without a direct kernel it packs the tile into pa
// (packedSize(mc, k, kern.mr) elements) first, and computes all of it.
func (r *attnRun[T]) mulTile(a []T, ars, acs int, pa []T, b attnB[T], mc, nb, k int, C matDst[T], acc bool, tmp []T, trim attnTrim) {
	if r.direct != nil {
		r.direct(attnA[T]{s: a, rs: ars, cs: acs}, b, mc, nb, k, C, acc, trim)
		return
	}
	r.mul(packOp(pa, matSrc[T]{s: a, rs: ars, cs: acs}, 0, mc, k, r.kern.mr, tmp), b.s, mc, nb, k, C, acc)
}

// mulA is mul for A from operandA, leaving out what trim allows where the
// run has a direct kernel.
func (r *attnRun[T]) mulA(a attnA[T], b attnB[T], mc, nb, k int, C matDst[T], acc bool, trim attnTrim) {
	if r.direct != nil {
		r.direct(a, b, mc, nb, k, C, acc, trim)
		return
	}
	r.mul(a.s, b.s, mc, nb, k, C, acc)
}

// operandA returns rows [i0, i0+rows) and columns [0, cols) of operand m
// of problem bi as the A of a product: read in place where the run has a
// direct kernel and data holds the rows up to the next multiple of
// attnDirectMR (the kernels read them, without storing what they give),
// else packed into dst (packedSize(rows, cols, kern.mr) elements).
func (r *attnRun[T]) operandA(dst, data []T, m attnMat, bi, i0, rows, cols int, tmp []T) attnA[T] {
	if off := m.at(bi, i0); r.direct != nil && m.rs >= 0 && off+(roundUp(rows, attnDirectMR)-1)*m.rs+cols <= len(data) {
		return attnA[T]{s: data[off:], rs: m.rs, cs: 1}
	}
	return attnA[T]{s: packOp(dst, r.src(data, m, bi, i0, false), 0, rows, cols, r.kern.mr, tmp), packed: true}
}

// operandB returns rows [r0, r0+k) of operand m of problem bi, nb columns,
// as the B of a product: read in place where the run has a direct kernel
// and nb is a multiple of its panel width, else packed into dst
// (packedSize(nb, k, kern.nr) elements).
func (r *attnRun[T]) operandB(dst, data []T, m attnMat, bi, r0, k, nb int, tmp []T) attnB[T] {
	if r.direct != nil && nb%r.kern.nr == 0 && m.rs > 0 {
		return attnB[T]{s: data[m.at(bi, r0):], rs: m.rs}
	}
	return attnB[T]{s: packOp(dst, r.src(data, m, bi, r0, true), 0, nb, k, r.kern.nr, tmp)}
}

// trim returns the trims of the products of the tile of queries from i0
// and keys from j0 (kinds of attnTrimCols): none unless the run has a
// direct kernel (the packed products compute whole tiles) and the
// attention is causal without a mask and every query sees a key, so that
// no row's probabilities are NaN (which the products would carry
// everywhere).
func (r *attnRun[T]) trim(i0, j0 int) (cols, kEnd, kStart attnTrim) {
	g := r.g
	if r.direct == nil || !g.Causal || g.CausalOffset < 0 || r.maskB != nil || r.maskF != nil {
		return
	}
	d := i0 + g.CausalOffset - j0
	return attnTrim{attnTrimCols, d}, attnTrim{attnTrimKEnd, d}, attnTrim{attnTrimKStart, d}
}

// clearPad clears the rows of tile s (rows×cols) past rows up to the next
// multiple of attnDirectMR, and the elements after them: the direct
// kernels read them (without storing what they give), and cleared they
// hold no NaN or subnormal to slow them down.
func clearPad[T float](s []T, rows, cols int) {
	clear(s[rows*cols : roundUp(rows, attnDirectMR)*cols+attnDirectMR])
}

// src returns the matrix of rows [i0, …) of operand m of problem bi (rows
// along r, the last dimension along c), or its transpose.
func (r *attnRun[T]) src(data []T, m attnMat, bi, i0 int, transposed bool) matSrc[T] {
	s := matSrc[T]{s: data, off: m.at(bi, i0), rs: m.rs, cs: 1}
	if transposed {
		return s.t()
	}
	return s
}

// scaleAndMask sets per row of the tile s [rows, cols] of q·kᵀ of problem
// bi (queries from i0, keys from j0) the number of leading keys the causal
// mask leaves (the rest are to be ignored), and, when there is a mask,
// scales the scores and applies it. It returns the scale the row
// kernels are still to apply (1 when it has).
func (r *attnRun[T]) scaleAndMask(s []T, lim []int, bi, i0, rows, j0, cols int) T {
	g := r.g
	ninf := T(math.Inf(-1))
	for i := range rows {
		n := cols
		if g.Causal {
			n = max(0, min(cols, i0+i+g.CausalOffset-j0+1))
		}
		lim[i] = n
		if r.maskB == nil && r.maskF == nil && r.scale > 0 {
			continue
		}
		row := s[i*cols : i*cols+n]
		for j := range row {
			row[j] *= r.scale
		}
		switch {
		case r.maskB != nil:
			mo := r.mm.at(bi, i0+i) + j0*r.mm.cs
			for j := range row {
				if r.maskB[mo+j*r.mm.cs] == 0 {
					row[j] = ninf
				}
			}
		case r.maskF != nil:
			mo := r.mm.at(bi, i0+i) + j0*r.mm.cs
			for j := range row {
				row[j] += r.maskF[mo+j*r.mm.cs]
			}
		}
	}
	if r.maskB == nil && r.maskF == nil && r.scale > 0 {
		return r.scale // max(s·scale) = max(s)·scale: the row kernels scale
	}
	return 1
}

// groupsOf cuts n blocks of a problem into groups for parallel tasks:
// enough tasks for 32 workers when there are few problems, at most
// attnMaxGroups per problem. It depends only on the sizes.
func groupsOf(batch, n int) (groups, per int) {
	groups = max(1, min(n, attnMaxGroups, (32+batch-1)/max(batch, 1)))
	per = (n + groups - 1) / groups
	return (n + per - 1) / max(per, 1), per
}

// forward runs the forward pass: one task per problem and group of
// query blocks.
func (r *attnRun[T]) forward() {
	g := r.g
	nqb := (g.Lq + attnBlockQ - 1) / attnBlockQ
	groups, per := groupsOf(g.Batch, nqb)
	mr, nr := r.kern.mr, r.kern.nr
	pool := poolFor[T]()
	kSize, vSize := packedSize(attnBlockK, g.D, nr), packedSize(g.Dv, attnBlockK, nr)
	nkbMax := (g.Lk + attnBlockK - 1) / attnBlockK
	r.b.parallel(g.Batch*groups, 1, func(lo, hi int) {
		size := nkbMax*(kSize+vSize) + packedSize(attnBlockQ, g.D, mr) + packedSize(attnBlockQ, attnBlockK, mr) +
			attnTileSize + attnBlockQ*(g.Dv+1) + gemmKC
		scratch := pool.get(size)
		defer pool.put(scratch)
		lim := make([]int, attnBlockQ)
		l := make([]float64, attnBlockQ)
		for t := lo; t < hi; t++ {
			bi, gi := t/groups, t%groups
			q0, q1 := gi*per, min(nqb, (gi+1)*per)
			if q0 >= q1 {
				continue
			}
			end := r.keyEnd(q0*attnBlockQ, min(g.Lq, q1*attnBlockQ)-q0*attnBlockQ)
			buf := *scratch
			tmp := buf[size-gemmKC:]
			var kp, vp []attnB[T]
			for j0 := 0; j0 < end; j0 += attnBlockK {
				cols := min(attnBlockK, end-j0)
				kp = append(kp, attnB[T]{s: packOp(buf, r.src(r.k, r.km, bi, j0, false), 0, cols, g.D, nr, tmp)})
				buf = buf[kSize:]
				vp = append(vp, r.operandB(buf, r.v, r.vm, bi, j0, cols, g.Dv, tmp))
				buf = buf[vSize:]
			}
			for qb := q0; qb < q1; qb++ {
				r.forwardBlock(buf, lim, l, kp, vp, tmp, bi, qb*attnBlockQ)
			}
		}
	})
}

// forwardBlock computes the output rows of queries [i0, i0+attnBlockQ) of
// problem bi from the key and value blocks kp (packed) and vp.
func (r *attnRun[T]) forwardBlock(buf []T, lim []int, l []float64, kp, vp []attnB[T], tmp []T, bi, i0 int) {
	g := r.g
	mr := r.kern.mr
	rows := min(attnBlockQ, g.Lq-i0)
	qa := r.operandA(buf, r.q, r.qm, bi, i0, rows, g.D, tmp)
	buf = buf[packedSize(attnBlockQ, g.D, mr):]
	pa := buf[:packedSize(attnBlockQ, attnBlockK, mr)]
	buf = buf[len(pa):]
	s := buf[:attnTileSize]
	o := buf[len(s):][:rows*g.Dv]
	m := buf[len(s)+attnBlockQ*g.Dv:][:rows]
	ninf := T(math.Inf(-1))
	clear(o)
	for i := range rows {
		m[i], l[i] = ninf, 0
	}
	end := r.keyEnd(i0, rows)
	for jb, j0 := 0, 0; j0 < end; jb, j0 = jb+1, j0+attnBlockK {
		cols := min(attnBlockK, end-j0)
		trimCols, trimKEnd, _ := r.trim(i0, j0)
		r.mulA(qa, kp[jb], rows, cols, g.D, matDst[T]{s: s, rs: cols, cs: 1}, false, trimCols)
		clearPad(s, rows, cols)
		scale := r.scaleAndMask(s, lim, bi, i0, rows, j0, cols)
		for i := range rows {
			row := s[i*cols : (i+1)*cols]
			n := lim[i]
			mNew := m[i]
			if mx := r.ops.max(row[:n]) * scale; mx > mNew {
				mNew = mx
			}
			if mNew == ninf { // nothing to attend to yet
				clear(row)
				continue
			}
			alpha := r.exp(m[i] - mNew)
			sum := r.ops.exp(row[:n], scale, mNew)
			clear(row[n:])
			l[i] = l[i]*float64(alpha) + sum
			if alpha != 1 {
				orow := o[i*g.Dv : (i+1)*g.Dv]
				r.ops.scale(orow, orow, alpha)
			}
			m[i] = mNew
		}
		r.mulTile(s, cols, 1, pa, vp[jb], rows, g.Dv, cols, matDst[T]{s: o, rs: g.Dv, cs: 1}, true, tmp, trimKEnd)
	}
	for i := range rows {
		inv := T(1 / l[i]) // a row that sees no key: 0·Inf = NaN, as the composition gives
		r.ops.scale(r.out[r.om.at(bi, i0+i):][:g.Dv], o[i*g.Dv:(i+1)*g.Dv], inv)
		r.lse[bi*g.Lq+i0+i] = m[i] + r.log(T(l[i]))
	}
}

func (r *attnRun[T]) setGrads(dq, dk, dv, out, dout, lse backends.View) {
	r.out, r.om = attnData[T](out), attnMatOf(out)
	r.dout, r.dom = attnData[T](dout), attnMatOf(dout)
	r.lse = attnData[T](lse)[lse.Offset:]
	if dq.Buf != nil {
		r.dq, r.dqm = attnData[T](dq), attnMatOf(dq)
	}
	if dk.Buf != nil {
		r.dk, r.dkm = attnData[T](dk), attnMatOf(dk)
	}
	if dv.Buf != nil {
		r.dv, r.dvm = attnData[T](dv), attnMatOf(dv)
	}
}

// attnQueryPack is the packed query-side operands of one problem's query
// block in the backward pass.
type attnQueryPack[T float] struct {
	qa, da attnA[T] // Q as A (for S), dO as A (for dP)
	qb, db attnB[T] // Q as B (for dK), dO as B (for dV)
}

// backward runs the backward pass.
func (r *attnRun[T]) backward() {
	g := r.g
	pool := poolFor[T]()
	delta := pool.get(g.Batch * g.Lq)
	defer pool.put(delta)
	r.delta = (*delta)[:g.Batch*g.Lq]
	r.b.parallel(g.Batch*g.Lq, grainFor(g.Batch*g.Lq, 2*g.Dv), func(lo, hi int) {
		for t := lo; t < hi; t++ {
			bi, i := t/g.Lq, t%g.Lq
			o := r.out[r.om.at(bi, i):][:g.Dv]
			d := r.dout[r.dom.at(bi, i):][:g.Dv]
			r.delta[t] = T(r.ops.dot(o, d))
		}
	})
	nkb := (g.Lk + attnBlockK - 1) / attnBlockK
	nqb := (g.Lq + attnBlockQ - 1) / attnBlockQ
	r.groups, r.blocksPerGroup = groupsOf(g.Batch, nkb)
	var part *[]T
	if r.dq != nil && r.groups > 1 {
		n := g.Batch * r.groups * g.Lq * g.D
		part = pool.get(n)
		defer pool.put(part)
		r.part = (*part)[:n]
		clear(r.part)
	}
	mr, nr := r.kern.mr, r.kern.nr
	qSize := packedSize(attnBlockQ, g.D, mr) + packedSize(g.D, attnBlockQ, nr) + packedSize(attnBlockQ, g.Dv, mr) +
		packedSize(g.Dv, attnBlockQ, nr)
	kSize := packedSize(attnBlockK, g.D, nr) + packedSize(attnBlockK, g.Dv, nr) + packedSize(g.D, attnBlockK, nr)
	tSize := packedSize(attnBlockK, attnBlockQ, mr) + packedSize(attnBlockQ, attnBlockK, mr) + 2*attnTileSize +
		attnBlockK*(g.D+g.Dv)
	size := nqb*qSize + kSize + tSize + gemmKC
	r.b.parallel(g.Batch*r.groups, 1, func(lo, hi int) {
		scratch := pool.get(size)
		defer pool.put(scratch)
		lim := make([]int, attnBlockQ)
		qp := make([]attnQueryPack[T], nqb)
		for t := lo; t < hi; t++ {
			bi, gi := t/r.groups, t%r.groups
			k0, k1 := gi*r.blocksPerGroup, min(nkb, (gi+1)*r.blocksPerGroup)
			if k0 >= k1 {
				continue
			}
			buf := *scratch
			tmp := buf[size-gemmKC:]
			first := 0
			if g.Causal {
				first = max(0, k0*attnBlockK-g.CausalOffset) / attnBlockQ
			}
			for qb := first; qb < nqb; qb++ {
				i0 := qb * attnBlockQ
				rows := min(attnBlockQ, g.Lq-i0)
				p := &qp[qb]
				qaSize := packedSize(attnBlockQ, g.D, mr)
				p.qa = r.operandA(buf, r.q, r.qm, bi, i0, rows, g.D, tmp)
				p.qb = r.operandB(buf[qaSize:], r.q, r.qm, bi, i0, rows, g.D, tmp)
				qbSize := packedSize(g.D, attnBlockQ, nr)
				p.da = r.operandA(buf[qaSize+qbSize:], r.dout, r.dom, bi, i0, rows, g.Dv, tmp)
				p.db = r.operandB(buf[qaSize+qbSize+packedSize(attnBlockQ, g.Dv, mr):], r.dout, r.dom, bi, i0, rows, g.Dv, tmp)
				buf = buf[qSize:]
			}
			if r.dq != nil && r.groups == 1 { // the task adds every dS·K of problem bi straight into dq
				for i := range g.Lq {
					clear(r.dq[r.dqm.at(bi, i):][:g.D])
				}
			}
			for kb := k0; kb < k1; kb++ {
				r.backwardKeys(buf, tmp, lim, qp, bi, gi, kb*attnBlockK)
			}
			if r.dq != nil && r.groups == 1 {
				for i := range g.Lq {
					dst := r.dq[r.dqm.at(bi, i):][:g.D]
					r.ops.scale(dst, dst, r.scale)
				}
			}
		}
	})
	if r.dq != nil && r.groups > 1 {
		scale := r.scale
		r.b.parallel(g.Batch*g.Lq, grainFor(g.Batch*g.Lq, r.groups*g.D), func(lo, hi int) {
			for t := lo; t < hi; t++ {
				bi, i := t/g.Lq, t%g.Lq
				dst := r.dq[r.dqm.at(bi, i):][:g.D]
				copy(dst, r.part[(bi*r.groups*g.Lq+i)*g.D:][:g.D])
				for gi := 1; gi < r.groups; gi++ {
					for c, x := range r.part[((bi*r.groups+gi)*g.Lq+i)*g.D:][:g.D] {
						dst[c] += x
					}
				}
				r.ops.scale(dst, dst, scale)
			}
		})
	}
}

// backwardKeys accumulates the gradients of keys [j0, j0+attnBlockK) of
// problem bi over every query block that sees them (their operands packed
// in qp), writes dK and dV for those keys and adds dS·K to group gi's
// partial dQ (scaled once all groups are added).
func (r *attnRun[T]) backwardKeys(buf, tmp []T, lim []int, qp []attnQueryPack[T], bi, gi, j0 int) {
	g := r.g
	mr, nr := r.kern.mr, r.kern.nr
	cols := min(attnBlockK, g.Lk-j0)
	kb := packOp(buf, r.src(r.k, r.km, bi, j0, false), 0, cols, g.D, nr, tmp) // for S = Q·Kᵀ
	buf = buf[packedSize(attnBlockK, g.D, nr):]
	vb := packOp(buf, r.src(r.v, r.vm, bi, j0, false), 0, cols, g.Dv, nr, tmp) // for dP = dO·Vᵀ
	buf = buf[packedSize(attnBlockK, g.Dv, nr):]
	var kq attnB[T] // for dQ += dS·K
	if r.dq != nil {
		kq = r.operandB(buf, r.k, r.km, bi, j0, cols, g.D, tmp)
	}
	buf = buf[packedSize(g.D, attnBlockK, nr):]
	ta := buf[:packedSize(attnBlockK, attnBlockQ, mr)] // Pᵀ or dSᵀ as A
	buf = buf[len(ta):]
	sa := buf[:packedSize(attnBlockQ, attnBlockK, mr)] // dS as A
	buf = buf[len(sa):]
	p := buf[:attnTileSize]
	ds := buf[len(p):][:attnTileSize]
	dk := buf[2*len(p):][:cols*g.D]
	dv := buf[2*len(p)+attnBlockK*g.D:][:cols*g.Dv]
	clear(dk)
	clear(dv)
	first := 0
	if g.Causal {
		first = max(0, j0-g.CausalOffset) / attnBlockQ * attnBlockQ
	}
	needS := r.dq != nil || r.dk != nil
	nan := T(math.NaN())
	for i0 := first; i0 < g.Lq; i0 += attnBlockQ {
		rows := min(attnBlockQ, g.Lq-i0)
		if r.keyEnd(i0, rows) <= j0 {
			continue
		}
		q := &qp[i0/attnBlockQ]
		trimCols, trimKEnd, trimKStart := r.trim(i0, j0)
		r.mulA(q.qa, attnB[T]{s: kb}, rows, cols, g.D, matDst[T]{s: p, rs: cols, cs: 1}, false, trimCols)
		clearPad(p, rows, cols)
		scale := r.scaleAndMask(p, lim, bi, i0, rows, j0, cols)
		for i := range rows {
			row := p[i*cols : (i+1)*cols]
			n := lim[i]
			shift := r.lse[bi*g.Lq+i0+i]
			if math.IsInf(float64(shift), -1) { // a row that sees no key: NaN, as the composition gives
				for j := range row {
					row[j] = nan
				}
				continue
			}
			r.ops.exp(row[:n], scale, shift)
			clear(row[n:])
		}
		if r.dv != nil { // dV += Pᵀ·dO
			r.mulTile(p, 1, cols, ta, q.db, cols, g.Dv, rows, matDst[T]{s: dv, rs: g.Dv, cs: 1}, true, tmp, trimKStart)
		}
		if !needS {
			continue
		}
		// dP = dO·Vᵀ, then dS = P∘(dP − D) (scaled where it is used)
		r.mulA(q.da, attnB[T]{s: vb}, rows, cols, g.Dv, matDst[T]{s: ds, rs: cols, cs: 1}, false, trimCols)
		clearPad(ds, rows, cols)
		for i := range rows {
			n := cols
			if trimCols.kind != attnTrimNone { // dP past the diagonal was left out: dS is 0 there
				n = lim[i]
				clear(ds[i*cols+n : (i+1)*cols])
			}
			r.ops.ds(ds[i*cols:i*cols+n], p[i*cols:i*cols+n], r.delta[bi*g.Lq+i0+i])
		}
		if r.dk != nil { // dK += dSᵀ·Q
			r.mulTile(ds, 1, cols, ta, q.qb, cols, g.D, rows, matDst[T]{s: dk, rs: g.D, cs: 1}, true, tmp, trimKStart)
		}
		if r.dq != nil { // dQ += dS·K
			dst := matDst[T]{s: r.dq, off: r.dqm.at(bi, i0), rs: r.dqm.rs, cs: 1}
			if r.groups > 1 {
				dst = matDst[T]{s: r.part, off: ((bi*r.groups+gi)*g.Lq + i0) * g.D, rs: g.D, cs: 1}
			}
			r.mulTile(ds, cols, 1, sa, kq, rows, g.D, cols, dst, true, tmp, trimKEnd)
		}
	}
	for j := range cols {
		if r.dk != nil {
			r.ops.scale(r.dk[r.dkm.at(bi, j0+j):][:g.D], dk[j*g.D:(j+1)*g.D], r.scale)
		}
		if r.dv != nil {
			copy(r.dv[r.dvm.at(bi, j0+j):][:g.Dv], dv[j*g.Dv:])
		}
	}
}

// attnRowOps are the element-wise passes over a row of a tile.
type attnRowOps[T float] struct {
	// exp sets s[j] = e^(s[j]·scale − shift) and returns their sum.
	exp func(s []T, scale, shift T) float64
	// max returns the maximum of s, −Inf when s is empty (a NaN in s
	// may be skipped: its exponential is NaN anyway).
	max func(s []T) T
	// ds sets ds[j] = p[j]·(ds[j] − d).
	ds func(ds, p []T, d T)
	// dot returns Σ x[j]·y[j] (x and y of one length) computed in float64:
	// each row's dO·O of the backward pass.
	dot func(x, y []T) float64
	// scale sets dst[j] = x[j]·a (dst and x of one length; dst may be x):
	// the output rows' rescaling and normalisation and dK's softmax scale,
	// one rounded product each, so every implementation gives the same bits.
	scale func(dst, x []T, a T)
}

// attnF32 are the float32 row passes: Go loops, replaced by vector
// kernels where the CPU has them (attention_amd64.go).
var attnF32 = attnRowOps[float32]{exp: attnExpRowF32, max: attnMaxRow[float32], ds: attnDsRow[float32], scale: attnScaleRow[float32], dot: attnDotRow[float32]}

// attnF32Kernel is one implementation of the float32 row passes.
type attnF32Kernel struct {
	name string
	ops  attnRowOps[float32]
}

// attnF32Kernels are the implementations of the float32 row passes this
// CPU runs, the Go loops first and the one attnF32 uses last, so that the
// tests can run every one (an AVX-512 machine's AVX2 kernels included).
var attnF32Kernels = []attnF32Kernel{{"go", attnF32}}

func attnDotRow[T float](x, y []T) float64 {
	y = y[:len(x)]
	var s float64
	for j, v := range x {
		s += float64(v) * float64(y[j])
	}
	return s
}

func attnScaleRow[T float](dst, x []T, a T) {
	dst = dst[:len(x)]
	for j, v := range x {
		dst[j] = v * a
	}
}

func attnMaxRow[T float](s []T) T {
	m := T(math.Inf(-1))
	for _, x := range s {
		if x > m {
			m = x
		}
	}
	return m
}

func attnDsRow[T float](ds, p []T, d T) {
	p = p[:len(ds)]
	for j, x := range p {
		ds[j] = x * (ds[j] - d)
	}
}

// attnExpRowF64 sets s[j] = e^(s[j]·scale − shift) and returns their sum.
func attnExpRowF64(s []float64, scale, shift float64) float64 {
	var sum float64
	for j, x := range s {
		e := math.Exp(x*scale - shift)
		s[j] = e
		sum += e
	}
	return sum
}

// attnExpF32 returns e^x rounded to float32: x = k·ln2 + r with |r| ≤ ln2/2,
// e^r from its Taylor polynomial of degree 7 (relative error below 6e-9),
// all in float64, so that the result is within 0.6 ulp of e^x, denormal
// results included; 0 below −150 and +Inf above float32's range.
func attnExpF32(x float32) float32 { return attnExpToF32(float64(x)) }

// attnExpToF32 is attnExpF32 of a float64 argument.
func attnExpToF32(x float64) float32 {
	if !(x >= -150) {
		if x != x {
			return float32(x)
		}
		return 0
	}
	xd := min(x, 89)
	k := math.Floor(xd*math.Log2E + 0.5)
	r := xd - k*math.Ln2
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720+r*(1.0/5040)))))))
	return float32(p * math.Float64frombits(uint64(int64(k)+1023)<<52))
}

// attnExpRowF32 sets s[j] = e^(s[j]·scale − shift) and returns their sum (in
// float64).
func attnExpRowF32(s []float32, scale, shift float32) float64 {
	var sum float64
	for j, x := range s {
		e := attnExpToF32(float64(x)*float64(scale) - float64(shift))
		s[j] = e
		sum += float64(e)
	}
	return sum
}
