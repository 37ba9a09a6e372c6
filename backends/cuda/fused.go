//go:build !kiln_nocuda

package cuda

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/kiln-ml/kiln/backends"
)

// Fused element-wise groups. A fusing decorator (backends/fusion) hands the
// backend a backends.ElementwiseGroup; RunGroup generates one kernel for
// it: a grid-stride loop in which each thread loads its element of every
// input once, runs the group's ops one after the other in registers, and
// stores the outputs. Each op's arithmetic is the expression of the
// per-op kernel (unaryC, binaryC, load, store), with the result rounded to
// its value's dtype as the per-op kernel's store rounds it, so results
// equal the unfused path's. After every float or double op the value goes
// through kiln_keep, an empty inline-assembly statement, so that NVRTC
// (which contracts a*b+c into a fused multiply-add by default) cannot fuse
// arithmetic across two ops, which the unfused path, storing between
// kernels, never does.
//
// The kernel depends on the group's structure only: the ops, the values'
// dtypes, which live in memory, and each view's class (dense, one
// broadcast element, or strided in the group's merged shape). Pointers,
// offsets, strides, sizes and the ops' scalars are launch arguments, so a
// training step whose groups repeat compiles each once; kernels are
// cached by that structure in memory and, through NVRTC's cache
// (cache.go), on disk.

// fusedMaxParamBytes bounds a fused kernel's parameters (8 bytes each),
// below CUDA's 4 KiB limit on kernel parameters.
const fusedMaxParamBytes = 4000

// fusedPrelude follows the shared prelude in every fused kernel.
const fusedPrelude = `
// kiln_keep hides a value from the optimiser, so that no multiply-add is
// contracted across two ops of a group (each op rounds as its own kernel
// would). Under a C++ compiler (the tests' emulation) it does nothing.
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
__device__ __forceinline__ void kiln_keep(float& v) { asm volatile("" : "+f"(v)); }
__device__ __forceinline__ void kiln_keep(double& v) { asm volatile("" : "+d"(v)); }
#else
inline void kiln_keep(float&) {}
inline void kiln_keep(double&) {}
#endif
`

// fusedClass is how a value of a group is addressed.
type fusedClass uint8

const (
	fusedRegister  fusedClass = iota // no memory: kept in registers
	fusedDense                       // element i at offset i
	fusedBroadcast                   // one element for every index
	fusedStrided                     // through the merged shape's coordinates
)

// fusedLayout is a group's index space with mergeable dimensions merged,
// and each value's class and strides in it.
type fusedLayout struct {
	shape   []int
	class   []fusedClass
	strides [][]int // per value, in the merged shape (nil unless strided)
	strided bool    // some value is strided: the kernel computes coordinates
	wide    bool    // more than 2^31-1 elements: coordinates in 64-bit arithmetic
}

// fusedWideIndex makes every fused kernel compute coordinates in 64-bit
// arithmetic, as it does past 2^31-1 elements (tests set it to check that
// variant on small groups).
var fusedWideIndex = false

// layoutGroup merges g's dimensions as the tiled fusion does: size-1
// dimensions go, and neighbours merge where every view in memory steps
// through them as through one.
func layoutGroup(g *backends.ElementwiseGroup) *fusedLayout {
	var groups [][]int
	for d, s := range g.Shape {
		if s == 1 {
			continue
		}
		if k := len(groups); k > 0 {
			last := groups[k-1][len(groups[k-1])-1]
			merge := true
			for _, v := range g.Values {
				if v.InMemory() && v.View.Strides[last] != v.View.Strides[d]*s {
					merge = false
					break
				}
			}
			if merge {
				groups[k-1] = append(groups[k-1], d)
				continue
			}
		}
		groups = append(groups, []int{d})
	}
	l := &fusedLayout{class: make([]fusedClass, len(g.Values)), strides: make([][]int, len(g.Values))}
	for _, grp := range groups {
		n := 1
		for _, d := range grp {
			n *= g.Shape[d]
		}
		l.shape = append(l.shape, n)
	}
	if len(l.shape) == 0 {
		l.shape = []int{1}
	}
	l.wide = fusedWideIndex || backends.NumElements(l.shape) > math.MaxInt32
	dense := backends.RowMajorStrides(l.shape)
	for i, v := range g.Values {
		if !v.InMemory() {
			continue
		}
		st := make([]int, len(l.shape))
		zero, contiguous := true, true
		for k, grp := range groups {
			st[k] = v.View.Strides[grp[len(grp)-1]] // the innermost of a run steps by one
			zero = zero && st[k] == 0
			contiguous = contiguous && st[k] == dense[k]
		}
		switch {
		case contiguous:
			l.class[i] = fusedDense
		case zero:
			l.class[i] = fusedBroadcast
		default:
			l.class[i], l.strides[i], l.strided = fusedStrided, st, true
		}
	}
	return l
}

// fusedKey is the structure a fused kernel depends on.
func fusedKey(g *backends.ElementwiseGroup, l *fusedLayout) []byte {
	key := []byte{byte(len(l.shape)), 0}
	if l.wide && l.strided {
		key[1] = 1
	}
	for i, v := range g.Values {
		var f byte
		if v.Load {
			f |= 1
		}
		if v.Store {
			f |= 2
		}
		key = append(key, byte(v.DType), byte(l.class[i]), f)
	}
	key = append(key, 0xff)
	for _, op := range g.Ops {
		rev := byte(0)
		if op.Reverse {
			rev = 1
		}
		key = append(key, byte(op.Kind), byte(op.Unary), byte(op.Binary), rev)
		key = binary.AppendUvarint(key, uint64(op.Out))
		for _, in := range op.In {
			key = binary.AppendUvarint(key, uint64(in))
		}
	}
	return key
}

// fusedParam is one launch argument of a fused kernel (every one is 8
// bytes: a pointer, a long long or a double).
type fusedParam struct {
	kind  uint8 // 'p' pointer of value, 's' stride of value along dim, 'd' merged size of dim, 'f' op's scalar
	value int   // value (pointer, stride) or op (scalar)
	dim   int   // dimension (stride, size) or which scalar (0: P0, 1: P1)
}

// fusedProgram is a generated fused kernel and how to bind its arguments.
type fusedProgram struct {
	k      kernel
	params []fusedParam
	err    error // why the group's structure cannot be compiled
}

// copyAcc is the type copyKernel converts through.
func copyAcc(outT, xT backends.DType) string {
	acc := "double"
	if outT != backends.Float64 && xT != backends.Float64 && !xT.IsInt() && !outT.IsInt() {
		acc = "float"
	}
	if xT.IsInt() && outT.IsInt() {
		acc = "long long"
	}
	return acc
}

// fusedKernel generates the kernel of g laid out as l, or an error saying
// what it cannot compile.
func fusedKernel(g *backends.ElementwiseGroup, l *fusedLayout, name string) *fusedProgram {
	p := &fusedProgram{}
	fail := func(format string, args ...any) *fusedProgram {
		p.err = fmt.Errorf("cuda: fused group: "+format, args...)
		return p
	}
	if len(l.shape) > maxDims {
		return fail("rank %d above %d", len(l.shape), maxDims)
	}
	for i, v := range g.Values {
		if _, ok := cTypes[v.DType]; !ok {
			return fail("value %d: dtype %s", i, v.DType)
		}
	}
	var params []string
	for i, v := range g.Values {
		if !v.InMemory() {
			continue
		}
		params = append(params, ptr(v.DType, fmt.Sprintf("m%d", i), !v.Store))
		p.params = append(p.params, fusedParam{kind: 'p', value: i})
		if l.class[i] == fusedStrided {
			for d := range l.shape {
				params = append(params, fmt.Sprintf("long long s%d_%d", i, d))
				p.params = append(p.params, fusedParam{kind: 's', value: i, dim: d})
			}
		}
	}
	if l.strided {
		for d := 1; d < len(l.shape); d++ {
			params = append(params, fmt.Sprintf("long long d%d", d))
			p.params = append(p.params, fusedParam{kind: 'd', dim: d})
		}
	}
	scalar := func(op, which int) string {
		params = append(params, fmt.Sprintf("double P%d_%d", op, which))
		p.params = append(p.params, fusedParam{kind: 'f', value: op, dim: which})
		return fmt.Sprintf("P%d_%d", op, which)
	}
	var body strings.Builder
	body.WriteString(gridLoop)
	if l.strided {
		// Below 2^31 elements, coordinates come from 32-bit divisions,
		// several times cheaper on a GPU than 64-bit ones.
		r, it := len(l.shape), "unsigned int"
		if l.wide {
			it = "long long"
		}
		fmt.Fprintf(&body, "    %s r_ = (%s)i;\n", it, it)
		for d := r - 1; d > 0; d-- {
			fmt.Fprintf(&body, "    const long long c%d = r_ %% (%s)d%d; r_ /= (%s)d%d;\n", d, it, d, it, d)
		}
		body.WriteString("    const long long c0 = r_;\n")
	}
	index := func(v int) string {
		switch l.class[v] {
		case fusedDense:
			return "i"
		case fusedBroadcast:
			return "0"
		}
		terms := make([]string, len(l.shape))
		for d := range l.shape {
			terms[d] = fmt.Sprintf("c%d * s%d_%d", d, v, d)
		}
		return strings.Join(terms, " + ")
	}
	cur := make([]string, len(g.Values)) // the register holding each value's current element
	for i, v := range g.Values {
		if v.Load {
			cur[i] = fmt.Sprintf("L%d", i)
			fmt.Fprintf(&body, "    const %s L%d = m%d[%s];\n", cTypes[v.DType].storage, i, i, index(i))
		}
	}
	for j, op := range g.Ops {
		outT := g.Values[op.Out].DType
		in := func(k int) (string, backends.DType) { return cur[op.In[k]], g.Values[op.In[k]].DType }
		var code string
		switch op.Kind {
		case backends.GroupFill:
			code = fmt.Sprintf("t%d = %s;", j, store(outT, scalar(j, 0)))
		case backends.GroupCopy:
			x, xT := in(0)
			code = fmt.Sprintf("t%d = %s;", j, store(outT, load(xT, x, copyAcc(outT, xT))))
		case backends.GroupUnary, backends.GroupUnaryGrad:
			exprs, ok := unaryC[op.Unary]
			if !ok {
				return fail("op %d: unary op %s", j, op.Unary)
			}
			x, xT := in(0)
			acc := cTypes[xT].acc
			expr := exprs[0]
			if op.Kind == backends.GroupUnaryGrad {
				gr, gT := in(1)
				if gT != xT {
					return fail("op %d: gradient %s for input %s", j, gT, xT)
				}
				expr = "(" + exprs[1] + ") * " + load(xT, gr, acc)
			}
			code = fmt.Sprintf("typedef %s T; const T p0 = (T)%s, p1 = (T)%s; T x = %s; t%d = %s;",
				acc, scalar(j, 0), scalar(j, 1), load(xT, x, acc), j, store(outT, expr))
		case backends.GroupBinary, backends.GroupScalar:
			expr, ok := binaryC[op.Binary]
			if !ok {
				return fail("op %d: binary op %s", j, op.Binary)
			}
			a, inT := in(0)
			acc := cTypes[inT].acc
			aload, bload := load(inT, a, acc), ""
			if op.Kind == backends.GroupBinary {
				b, bT := in(1)
				if bT != inT {
					return fail("op %d: operands %s and %s", j, inT, bT)
				}
				bload = load(inT, b, acc)
			} else {
				bload = "(T)" + scalar(j, 0)
				if op.Reverse {
					aload, bload = bload, aload
				}
			}
			code = fmt.Sprintf("typedef %s T; T a = %s; T b = %s; t%d = %s;", acc, aload, bload, j, store(outT, expr))
		case backends.GroupWhere:
			c, cT := in(0)
			a, aT := in(1)
			b, bT := in(2)
			if cT != backends.Bool || aT != outT || bT != outT {
				return fail("op %d: where(%s, %s, %s) into %s", j, cT, aT, bT, outT)
			}
			code = fmt.Sprintf("t%d = %s ? %s : %s;", j, c, a, b)
		default:
			return fail("op %d: kind %s", j, op.Kind)
		}
		fmt.Fprintf(&body, "    %s t%d;\n    { %s }\n", cTypes[outT].storage, j, code)
		if outT == backends.Float32 || outT == backends.Float64 {
			fmt.Fprintf(&body, "    kiln_keep(t%d);\n", j)
		}
		cur[op.Out] = fmt.Sprintf("t%d", j)
	}
	for i, v := range g.Values {
		if v.Store {
			fmt.Fprintf(&body, "    m%d[%s] = %s;\n", i, index(i), cur[i])
		}
	}
	body.WriteString("  }\n}\n")
	if 8*(len(p.params)+1) > fusedMaxParamBytes {
		return fail("%d kernel parameters", len(p.params)+1)
	}
	params = append(params, "long long n")
	p.k = kernel{Name: name, Source: prelude + fusedPrelude + "\n" +
		fmt.Sprintf("extern \"C\" __global__ void %s(%s) {\n", name, strings.Join(params, ", ")) + body.String()}
	return p
}

var (
	fusedPrograms sync.Map // string(fusedKey) → *fusedProgram
	fusedLoaded   sync.Map // fusedLoad → error (nil once loaded): each kernel compiled once per device
)

// fusedLoad names a fused kernel on one device.
type fusedLoad struct {
	b    *Backend
	name string
}

// fusedProgramFor returns the kernel of g's structure, generating it on
// first use.
func fusedProgramFor(g *backends.ElementwiseGroup, l *fusedLayout) *fusedProgram {
	key := fusedKey(g, l)
	if p, ok := fusedPrograms.Load(string(key)); ok {
		return p.(*fusedProgram)
	}
	sum := sha256.Sum256(key)
	p := fusedKernel(g, l, "kiln_fused_"+hex.EncodeToString(sum[:10]))
	actual, _ := fusedPrograms.LoadOrStore(string(key), p)
	return actual.(*fusedProgram)
}

// RunGroup implements backends.GroupCompiler: it runs g as one generated
// kernel (see the comment at the top of fused.go). It returns false,
// queuing nothing, when g is malformed, holds a buffer of another device
// or an op this backend has no expression for, or its kernel fails to
// compile (the compiler's error is then kept and the structure never
// offered to NVRTC again on this device).
func (b *Backend) RunGroup(g *backends.ElementwiseGroup) bool {
	if len(g.Ops) == 0 || g.Validate() != nil {
		return false
	}
	for _, v := range g.Values {
		if bb, ok := v.View.Buf.(*buffer); v.InMemory() && (!ok || bb.owner != b || bb.blk == nil) {
			return false
		}
	}
	l := layoutGroup(g)
	p := fusedProgramFor(g, l)
	if p.err != nil {
		return false
	}
	gen := func() kernel { return p.k }
	load := fusedLoad{b, p.k.Name}
	if err, seen := fusedLoaded.Load(load); !seen {
		var err error
		b.thread.call(func() { _, err = b.function(gen) })
		fusedLoaded.Store(load, err)
		if err != nil {
			return false
		}
	} else if err != nil {
		return false
	}
	a := &args{}
	for _, pr := range p.params {
		switch pr.kind {
		case 'p':
			v := g.Values[pr.value]
			a.ptr(b.buf(v.View.Buf).blk.ptr + DevicePtr(int64(v.View.Offset)*int64(v.DType.Size())))
		case 's':
			a.i64(l.strides[pr.value][pr.dim])
		case 'd':
			a.i64(l.shape[pr.dim])
		case 'f':
			op := g.Ops[pr.value]
			a.f64([2]float64{op.P0, op.P1}[pr.dim])
		}
	}
	b.launch1D(gen, backends.NumElements(l.shape), a)
	return true
}

var _ backends.GroupCompiler = (*Backend)(nil)
