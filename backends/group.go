package backends

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// GroupKind is the element-wise kernel one GroupOp runs: one of the
// Backend methods that a fusing decorator records.
type GroupKind uint8

// The kernels of a group, each named for the Backend method it stands for.
const (
	GroupFill      GroupKind = iota // Out = P0 (Fill); no inputs
	GroupCopy                       // Out = In[0], converted to Out's dtype (Copy)
	GroupUnary                      // Out = Unary(In[0]) with parameters P0, P1 (Unary)
	GroupUnaryGrad                  // Out = In[1]·Unary'(In[0]) with P0, P1 (UnaryGrad: x, then g)
	GroupBinary                     // Out = In[0] Binary In[1] (Binary)
	GroupScalar                     // Out = In[0] Binary P0, or P0 Binary In[0] when Reverse (BinaryScalar)
	GroupWhere                      // Out = In[1] where In[0] (Bool) is true, else In[2] (Where)
	numGroupKinds
)

var groupKindNames = [numGroupKinds]string{"fill", "copy", "unary", "unarygrad", "binary", "scalar", "where"}

var groupKindArity = [numGroupKinds]int{0, 1, 1, 2, 2, 1, 3}

// String returns the kind's name ("unary", "where").
func (k GroupKind) String() string {
	if k < numGroupKinds {
		return groupKindNames[k]
	}
	return fmt.Sprintf("GroupKind(%d)", k)
}

// Inputs returns how many values an op of kind k reads (the length of
// GroupOp.In), or -1 for an unknown kind.
func (k GroupKind) Inputs() int {
	if k < numGroupKinds {
		return groupKindArity[k]
	}
	return -1
}

// GroupOp is one element-wise kernel of an ElementwiseGroup: it reads the
// values In and writes the value Out, element by element, exactly as the
// Backend method of its Kind would over whole views. Unary and Binary say
// which op runs, for the kinds that take one; P0, P1 and Reverse are the
// method's scalar arguments.
type GroupOp struct {
	Kind    GroupKind
	Unary   UnaryOp
	Binary  BinaryOp
	P0, P1  float64
	Reverse bool
	Out     int   // index of the value written, in ElementwiseGroup.Values
	In      []int // indices of the values read, in the method's argument order
}

// GroupValue is one array of a group, indexed like the group's shape. A
// value with memory (View.Buf not nil) lives in that view: Load says the
// group reads its contents before any op writes it, Store that the group
// writes its last value back. A value without memory is an intermediate
// the group produces and consumes itself, which a compiler keeps in
// registers; only its DType matters then (it rounds what is written to it).
type GroupValue struct {
	DType DType
	View  View
	Load  bool
	Store bool
}

// InMemory reports whether v lives in a buffer rather than only in the
// group.
func (v GroupValue) InMemory() bool { return v.View.Buf != nil }

// ElementwiseGroup is a straight-line program of element-wise kernels over
// one index space, Shape: what a fusing decorator (package
// backends/fusion) hands a GroupCompiler to run as one kernel. Running it
// must give, bit for bit, what running Ops in order through the Backend's
// own methods gives, with every value rounded to its DType whenever an op
// writes it. Because every op is element-wise and a value written by the
// group is reached through one view only (Validate checks it), element i
// of the result depends only on element i of the inputs, so a compiler may
// give each element to a thread of its own and keep every intermediate in
// registers.
type ElementwiseGroup struct {
	Shape  []int
	Values []GroupValue
	Ops    []GroupOp
}

// GroupCompiler is an optional interface a Backend implements to run an
// ElementwiseGroup as one kernel (compiled per group structure, say).
// RunGroup queues the group like any kernel and returns true, or returns
// false, having done nothing, for a group it cannot compile (an op or
// dtype it lacks, too many operands); the caller then runs the group's
// ops another way. Failures after it accepted a group are the sticky
// error of the next Read or Sync, as for any kernel. RunGroup must not
// modify g.
type GroupCompiler interface {
	RunGroup(g *ElementwiseGroup) (ok bool)
}

// ErrGroup is wrapped by the errors of ElementwiseGroup.Validate.
var ErrGroup = errors.New("invalid element-wise group")

// Validate checks that g is well formed: operand indices in range and as
// many as each kind reads, every view of g's shape and inside its buffer,
// a value read before it is written loaded from memory, a stored value
// written by some op, and a value the group writes to memory reached
// through one view that never maps two elements to one address (so that
// elements can run in any order). The error wraps ErrGroup and names the
// op or value at fault.
func (g *ElementwiseGroup) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrGroup, fmt.Sprintf(format, args...))
	}
	if _, ok := CheckedNumElements(g.Shape); !ok {
		return bad("shape %v", g.Shape)
	}
	written := make([]bool, len(g.Values))
	for i, op := range g.Ops {
		if op.Kind.Inputs() < 0 {
			return bad("op %d: unknown kind %d", i, op.Kind)
		}
		if len(op.In) != op.Kind.Inputs() {
			return bad("op %d (%s): %d inputs, want %d", i, op.Kind, len(op.In), op.Kind.Inputs())
		}
		for _, v := range append(slices.Clone(op.In), op.Out) {
			if v < 0 || v >= len(g.Values) {
				return bad("op %d (%s): value %d out of range (%d values)", i, op.Kind, v, len(g.Values))
			}
		}
		switch {
		case (op.Kind == GroupUnary || op.Kind == GroupUnaryGrad) && int(op.Unary) >= len(UnaryOps):
			return bad("op %d: unknown unary op %d", i, op.Unary)
		case (op.Kind == GroupBinary || op.Kind == GroupScalar) && int(op.Binary) >= len(BinaryOps):
			return bad("op %d: unknown binary op %d", i, op.Binary)
		}
		for _, v := range op.In {
			if !written[v] && !g.Values[v].Load {
				return bad("op %d (%s) reads value %d before anything writes it, and it is not loaded", i, op.Kind, v)
			}
		}
		written[op.Out] = true
	}
	for i, v := range g.Values {
		if !v.DType.Valid() {
			return bad("value %d: dtype %d", i, v.DType)
		}
		if !v.InMemory() {
			if v.Load || v.Store {
				return bad("value %d: loaded or stored without memory", i)
			}
			continue
		}
		if err := checkGroupView(g.Shape, v.DType, v.View, written[i]); err != nil {
			return bad("value %d: %v", i, err)
		}
		if v.Store && !written[i] {
			return bad("value %d: stored but never written", i)
		}
		for j := range i {
			w := g.Values[j]
			if w.View.Buf == v.View.Buf && (written[i] || written[j]) {
				return bad("values %d and %d share a buffer that the group writes", j, i)
			}
		}
	}
	return nil
}

// checkGroupView checks one value's view: its dtype and shape, its reach
// within the buffer, and, for a written value, that no two elements share
// an address.
func checkGroupView(shape []int, dt DType, v View, written bool) error {
	if v.DType != dt {
		return fmt.Errorf("view dtype %s, value dtype %s", v.DType, dt)
	}
	if !slices.Equal(v.Shape, shape) || len(v.Strides) != len(shape) {
		return fmt.Errorf("view %s, group shape %v", v, shape)
	}
	if NumElements(shape) == 0 {
		return nil
	}
	lo, hi := v.Offset, v.Offset
	for d, s := range shape {
		if st := v.Strides[d]; st < 0 {
			lo += (s - 1) * st
		} else {
			hi += (s - 1) * st
		}
	}
	if lo < 0 || int64(hi+1)*int64(dt.Size()) > v.Buf.Bytes() {
		return fmt.Errorf("view %s reaches outside its %d-byte buffer", v, v.Buf.Bytes())
	}
	if !written {
		return nil
	}
	// Sorted by stride, each stride must step past everything the smaller
	// ones reach: then no two indices share an address.
	type dim struct{ size, stride int }
	var dims []dim
	for d, s := range shape {
		if s > 1 {
			st := v.Strides[d]
			if st < 0 {
				st = -st
			}
			dims = append(dims, dim{s, st})
		}
	}
	slices.SortFunc(dims, func(a, b dim) int { return a.stride - b.stride })
	reach := 0
	for _, d := range dims {
		if d.stride <= reach {
			return fmt.Errorf("written view %s maps two elements to one address", v)
		}
		reach += (d.size - 1) * d.stride
	}
	return nil
}

// String lists g for debugging: its shape, each value (dtype, where it
// lives) and each op as "v2 = mul(v0, v1)".
func (g *ElementwiseGroup) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "group %v, %d ops\n", g.Shape, len(g.Ops))
	for i, v := range g.Values {
		where := "registers"
		if v.InMemory() {
			where = fmt.Sprintf("strides %v offset %d", v.View.Strides, v.View.Offset)
			if v.Load {
				where += " load"
			}
			if v.Store {
				where += " store"
			}
		}
		fmt.Fprintf(&b, "  v%d %s %s\n", i, v.DType, where)
	}
	for _, op := range g.Ops {
		args := make([]string, 0, 3)
		for _, in := range op.In {
			args = append(args, fmt.Sprintf("v%d", in))
		}
		name := op.Kind.String()
		switch op.Kind {
		case GroupFill:
			args = append(args, fmt.Sprint(op.P0))
		case GroupUnary, GroupUnaryGrad:
			if int(op.Unary) < len(UnaryOps) {
				name = UnaryOps[op.Unary].Name
			}
			if op.Kind == GroupUnaryGrad {
				name += "_grad"
			}
			if op.P0 != 0 || op.P1 != 0 {
				args = append(args, fmt.Sprint(op.P0), fmt.Sprint(op.P1))
			}
		case GroupBinary, GroupScalar:
			if int(op.Binary) < len(BinaryOps) {
				name = BinaryOps[op.Binary].Name
			}
			if op.Kind == GroupScalar {
				if op.Reverse {
					args = append([]string{fmt.Sprint(op.P0)}, args...)
				} else {
					args = append(args, fmt.Sprint(op.P0))
				}
			}
		}
		fmt.Fprintf(&b, "  v%d = %s(%s)\n", op.Out, name, strings.Join(args, ", "))
	}
	return b.String()
}
