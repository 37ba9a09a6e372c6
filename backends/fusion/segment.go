package fusion

import (
	"math"
	"slices"
	"unsafe"

	"github.com/kiln-ml/kiln/backends"
)

// Segments: a run of consecutive float32 ops of a group that the segment
// kernel serves (segment_amd64.s with AVX-512, segment_avx2_amd64.s with
// AVX2 only) is compiled into one flat program of accumulator
// instructions, run over each tile in blocks of segBlock elements held in
// vector registers: the value one op hands to the next stays in
// registers, and only values read again later (or leaving the tiles) are
// stored, to the tile's scratch or to memory. Each instruction is the
// IEEE operation the CPU backend's kernel for that op performs, with the
// same operand as the first source, so the results are the same bits as
// the op-by-op tile kernels (TestSegmentsMatchUnfused).

// segOp is an instruction of the segment kernel; the order is the op
// table's in gen_segment_amd64.py, which writes the kernels' dispatch.
type segOp int64

const (
	segLoad      segOp = iota // acc = P
	segStore                  // P = acc
	segAddV                   // acc = acc + P
	segAddVR                  // acc = P + acc
	segSubV                   // acc = acc − P
	segSubVR                  // acc = P − acc
	segMulV                   // acc = acc × P
	segMulVR                  // acc = P × acc
	segDivV                   // acc = acc ÷ P
	segDivVR                  // acc = P ÷ acc
	segAddS                   // acc = acc + s (float32 s)
	segSubS                   // acc = acc − s
	segSubSR                  // acc = s − acc
	segMulS                   // acc = acc × s
	segDivS                   // acc = acc ÷ s
	segDivSR                  // acc = s ÷ acc
	segAddD                   // acc = float32(float64(acc) + s) (float64 s)
	segSubD                   // acc = float32(float64(acc) − s)
	segSubDR                  // acc = float32(s − float64(acc))
	segMulD                   // acc = float32(float64(acc) × s)
	segDivD                   // acc = float32(float64(acc) ÷ s)
	segDivDR                  // acc = float32(s ÷ float64(acc))
	segNeg                    // acc = −acc (the sign bit flipped)
	segAbs                    // acc = |acc| (the sign bit cleared)
	segSquare                 // acc = acc × acc
	segStoreNT                // P = acc with non-temporal stores (P 64-byte aligned)
	segRelu                   // acc = max(0, acc) + 0, as the CPU's ReLU kernel
	segPrefetch               // fetch P's lines the next tile will read into the caches
	segPrefetchW              // fetch P's lines the next tile will write, for writing
)

// segInst is one instruction as the kernel reads it (32 bytes).
type segInst struct {
	op     segOp
	ptr    unsafe.Pointer // the operand's first element in the tile, for the ops with one
	scalar uint64         // float32 bits for the S ops, float64 bits for the D ops
	_      int64
}

// segment is ops [first, end) of a group compiled for the kernel.
type segment struct {
	first, end int
	prog       []segInst  // the program, its pointers set per tile
	args       []segArg   // the instructions with an operand in memory
	patches    []segPatch // other per tile changes to the program
}

// segArg is an instruction whose operand is view ref.
type segArg struct {
	inst int
	ref  segRef
}

// segRef names view j of op i of the group.
type segRef struct{ op, view int }

// segPatch is an instruction whose scalar is a broadcast element read
// for each tile (ref), or a non-temporal store that becomes a plain one
// in a tile where its operand is not 64-byte aligned (nt).
type segPatch struct {
	inst int
	ref  segRef
	nt   bool
}

// step is one step of a tile: a segment, one op run on its own, or
// (red > 0) reduction tail red-1.
type step struct {
	op  int
	seg *segment
	red int
}

// planSteps cuts the group into steps: maximal runs of ops the segment
// kernel serves become segments, the other ops run one by one.
func (b *Backend) planSteps(p *plan) {
	p.steps = p.steps[:0]
	redAt := func(i int) bool {
		for _, rp := range p.reds {
			if rp.after == i {
				return true
			}
		}
		return false
	}
	for i := 0; ; {
		for r, rp := range p.reds {
			if rp.after == i {
				p.steps = append(p.steps, step{red: r + 1})
			}
		}
		if i == len(b.ops) {
			break
		}
		j := i
		if hasSegment && b.n >= segBlock && p.fast != nil {
			for j < len(b.ops) && b.segmentable(p, j) && (j == i || !redAt(j)) {
				j++
			}
		}
		if j == i {
			p.steps = append(p.steps, step{op: i})
			i++
			continue
		}
		p.steps = append(p.steps, step{op: i, seg: b.compileSegment(p, i, j)})
		p.nseg += j - i
		i = j
	}
}

// segmentable reports whether op i, which runs through tile kernels, is
// one the segment kernel serves.
func (b *Backend) segmentable(p *plan, i int) bool {
	if p.fast[i] == nil {
		return false
	}
	n := &b.ops[i]
	vs := &p.views[i]
	arith := func(op backends.BinaryOp) bool {
		return op == backends.Add || op == backends.Sub || op == backends.Mul || op == backends.Div
	}
	switch n.kind {
	case kindBinary:
		return arith(n.binary) && !(vs[1].one && vs[2].one)
	case kindScalar:
		return arith(n.binary) && !math.IsNaN(n.p0) && !vs[1].one
	case kindUnary:
		switch n.unary {
		case backends.Neg, backends.Abs, backends.Square, backends.Relu:
			return !vs[1].one
		}
	case kindCopy:
		return !vs[1].one
	}
	return false
}

// sameValue reports whether two views of a group's ops address the same
// values in every tile.
func sameValue(a, b *viewPlan) bool {
	if a.slot >= 0 || b.slot >= 0 {
		return a.slot == b.slot
	}
	return a.buf == b.buf && a.offset == b.offset && slices.Equal(a.strides, b.strides)
}

// compileSegment compiles ops [first, end) into accumulator code.
func (b *Backend) compileSegment(p *plan, first, end int) *segment {
	s := &segment{first: first, end: end}
	var acc *viewPlan // the value in the accumulator
	var fetched []*viewPlan
	// Inputs in memory are read from the caches but for the first tile: the
	// first instruction to read one in a segment also prefetches the
	// next tile's part (the tile after this one in memory, for a flat
	// view), so that the memory is read while the tile's other steps
	// compute, as a one-pass kernel's loads overlap its arithmetic.
	prefetch := func(i, j int) {
		vp := &p.views[i][j]
		if vp.slot >= 0 || vp.one {
			return
		}
		for _, f := range fetched {
			if sameValue(f, vp) {
				return
			}
		}
		fetched = append(fetched, vp)
		s.args = append(s.args, segArg{inst: len(s.prog), ref: segRef{i, j}})
		s.prog = append(s.prog, segInst{op: segPrefetch})
	}
	ref := func(i, j int) segRef { return segRef{i, j} }
	none := segRef{-1, -1}
	emit := func(op segOp, arg segRef, scalar uint64) {
		if arg.op >= 0 {
			s.args = append(s.args, segArg{inst: len(s.prog), ref: arg})
		}
		s.prog = append(s.prog, segInst{op: op, scalar: scalar})
	}
	for i := first; i < end; i++ {
		n := &b.ops[i]
		vs := &p.views[i]
		for j := 1; j < n.nv; j++ {
			prefetch(i, j)
		}
		isAcc := func(j int) bool { return acc != nil && sameValue(acc, &vs[j]) }
		load := func(j int) {
			if !isAcc(j) {
				emit(segLoad, ref(i, j), 0)
			}
		}
		switch n.kind {
		case kindCopy:
			load(1)
		case kindUnary:
			load(1)
			emit(map[backends.UnaryOp]segOp{backends.Neg: segNeg, backends.Abs: segAbs,
				backends.Square: segSquare, backends.Relu: segRelu}[n.unary], none, 0)
		case kindScalar:
			load(1)
			op, bits := scalarInst(n.binary, n.p0, n.reverse)
			emit(op, none, bits)
		case kindBinary:
			switch {
			case vs[2].one: // x op y[0]: the CPU's vector-scalar kernel
				load(1)
				op, _ := scalarInst(n.binary, 1, false)
				s.patches = append(s.patches, segPatch{inst: len(s.prog), ref: segRef{i, 2}})
				emit(op, none, 0)
			case vs[1].one: // x[0] op y: scalar-vector, or vector-scalar where op commutes
				load(2)
				op, _ := scalarInst(n.binary, 1, true)
				s.patches = append(s.patches, segPatch{inst: len(s.prog), ref: segRef{i, 1}})
				emit(op, none, 0)
			case sameValue(&vs[1], &vs[2]) && n.binary == backends.Mul:
				load(1)
				emit(segSquare, none, 0)
			case isAcc(2) && !isAcc(1):
				emit(vectorInst(n.binary, true), ref(i, 1), 0)
			default:
				load(1)
				emit(vectorInst(n.binary, false), ref(i, 2), 0)
			}
		}
		acc = &vs[0]
		if b.needStore(p, i, end) {
			op := segStore
			if acc.slot < 0 && b.n*4 >= streamBytes {
				op = segStoreNT
				s.patches = append(s.patches, segPatch{inst: len(s.prog), nt: true})
			}
			if acc.slot < 0 && op == segStore {
				// the next tile's output lines, fetched for writing
				// while this tile computes, so that its stores hit the
				// cache
				emit(segPrefetchW, ref(i, 0), 0)
			}
			emit(op, ref(i, 0), 0)
		}
	}
	return s
}

// needStore reports whether the output of op i (in a segment ending at
// end) must be written to its buffer or scratch: it leaves the tiles, or
// something other than the next op's accumulator reads it before it is
// written again.
func (b *Backend) needStore(p *plan, i, end int) bool {
	out := &p.views[i][0]
	if out.slot < 0 {
		return true
	}
	for k := i + 1; k <= len(b.ops); k++ {
		for r := range p.reds {
			if p.reds[r].after == k && sameValue(out, &p.reds[r].x) {
				return true // a reduction tail reads it
			}
		}
		if k == len(b.ops) {
			break
		}
		nk := &b.ops[k]
		reads := 0
		for j := 1; j < nk.nv; j++ {
			if sameValue(out, &p.views[k][j]) {
				reads++
			}
		}
		if reads > 0 && (k != i+1 || k >= end || reads == 2 && nk.binary != backends.Mul) {
			return true
		}
		if sameValue(out, &p.views[k][0]) {
			return false
		}
	}
	return false
}

// scalarInst is the instruction for x op s (s op x when reverse) as the
// CPU's BinaryScalar computes it for float32: in float32 where s is a
// float32 value, else through float64. Add and Mul take the vector as the
// first source either way, as the CPU's kernels do.
func scalarInst(op backends.BinaryOp, s float64, reverse bool) (segOp, uint64) {
	if float64(float32(s)) == s {
		bits := uint64(math.Float32bits(float32(s)))
		switch op {
		case backends.Add:
			return segAddS, bits
		case backends.Mul:
			return segMulS, bits
		case backends.Sub:
			if reverse {
				return segSubSR, bits
			}
			return segSubS, bits
		default:
			if reverse {
				return segDivSR, bits
			}
			return segDivS, bits
		}
	}
	bits := math.Float64bits(s)
	switch op {
	case backends.Add:
		return segAddD, bits
	case backends.Mul:
		return segMulD, bits
	case backends.Sub:
		if reverse {
			return segSubDR, bits
		}
		return segSubD, bits
	default:
		if reverse {
			return segDivDR, bits
		}
		return segDivD, bits
	}
}

// vectorInst is the instruction for acc op P, or P op acc when reverse.
func vectorInst(op backends.BinaryOp, reverse bool) segOp {
	base := map[backends.BinaryOp]segOp{backends.Add: segAddV, backends.Sub: segSubV,
		backends.Mul: segMulV, backends.Div: segDivV}[op]
	if reverse {
		return base + 1
	}
	return base
}

// runSegmentTile runs segment s on the tile of cnt elements that starts
// at element start of dimension split: whole blocks through the kernel,
// the rest through the ops' tile kernels.
func (w *worker) runSegmentTile(si int, s *segment, start, cnt int) bool {
	prog := w.progs[si]
	for _, a := range s.args {
		sl := w.slice(a.ref.op, a.ref.view, start, 0, cnt)
		if sl == nil {
			return false
		}
		prog[a.inst].ptr = unsafe.Pointer(&sl[0])
	}
	for _, pt := range s.patches {
		if pt.nt {
			op := segStoreNT
			if uintptr(prog[pt.inst].ptr)%64 != 0 {
				op = segStore
			}
			prog[pt.inst].op = op
			continue
		}
		prog[pt.inst].scalar = uint64(math.Float32bits(w.slice(pt.ref.op, pt.ref.view, start, 0, cnt)[0]))
	}
	done := runSegment(prog, cnt, 4*cnt)
	for i := s.first; i < s.end && done < cnt; i++ {
		if !w.runFast(i, w.p.fast[i], &w.b.ops[i], start, done, cnt) {
			return false
		}
	}
	return true
}
