package cpu

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// TestRefusedViews checks that every kernel refuses views it would read or
// write past their buffer, or as another dtype: the call does nothing (out
// keeps its bytes, nothing panics) and the next Sync reports an error
// naming the op and the view.
func TestRefusedViews(t *testing.T) {
	be := New(2)
	f32 := func(shape ...int) backends.View { return randView(be, backends.Float32, 1, shape...) }
	i64 := func(shape ...int) backends.View { return randView(be, backends.Int64, 2, shape...) }
	boolean := func(shape ...int) backends.View { return randView(be, backends.Bool, 3, shape...) }
	// retyped views a buffer as another dtype, as a caller bug would
	retyped := func(v backends.View, dt backends.DType) backends.View { v.DType = dt; return v }
	// long views more elements than its buffer holds
	long := func(v backends.View, shape ...int) backends.View {
		v.Shape, v.Strides = shape, backends.RowMajorStrides(shape)
		return v
	}
	shifted := func(v backends.View, off int) backends.View { v.Offset = off; return v }
	geo := backends.ConvGeometry{N: 1, C: 1, H: 4, W: 4, KH: 2, KW: 2, StrideH: 1, StrideW: 1, DilationH: 1, DilationW: 1,
		OutH: 3, OutW: 3}
	cases := []struct {
		name string
		out  backends.View // must keep its bytes
		call func(out backends.View)
		want string // in the error
	}{
		{"copy into a float64 view of a float32 buffer", f32(8), func(o backends.View) {
			be.Copy(retyped(o, backends.Float64), retyped(f32(8), backends.Float64))
		}, "copy: out: view float64[8]"},
		{"copy from a view longer than its buffer", f32(8), func(o backends.View) {
			be.Copy(long(o, 16), long(f32(8), 16))
		}, "reaches elements [0, 15] of a buffer of 8 float32 elements"},
		{"fill past the end by offset", f32(8), func(o backends.View) { be.Fill(shifted(o, 1), 3) }, "fill: out"},
		{"negative stride before the start", f32(8), func(o backends.View) {
			o.Strides = []int{-1}
			be.Fill(o, 3)
		}, "reaches elements [-7, 0]"},
		{"strides and shape of different ranks", f32(8), func(o backends.View) {
			o.Strides = []int{1, 1}
			be.Fill(o, 3)
		}, "1 dimensions but 2 strides"},
		{"binary input too short for the output", f32(8), func(o backends.View) {
			be.Binary(backends.Add, o, f32(8), f32(4))
		}, "add: input 1"},
		{"binary predicate into a float32 view of a bool buffer", boolean(8), func(o backends.View) {
			be.Binary(backends.Lt, retyped(o, backends.Float32), f32(8), f32(8))
		}, "lt: out: view float32[8]"},
		{"binary scalar into an int64 view of a float32 buffer", f32(8), func(o backends.View) {
			be.BinaryScalar(backends.Add, retyped(o, backends.Int64), retyped(f32(8), backends.Int64), 1, false)
		}, "add: out"},
		{"unary on an input view longer than its buffer", f32(8), func(o backends.View) {
			be.Unary(backends.Exp, long(o, 4, 4), long(f32(8), 4, 4), 0, 0)
		}, "exp: out"},
		{"arg-reduce into a float32 output", f32(1), func(o backends.View) {
			be.ArgReduce(backends.ArgMax, long(o, 1), f32(8), 0)
		}, "argmax: out: dtype float32 (want [int64])"},
		{"arg-reduce into an int64 view of a float32 buffer", f32(1), func(o backends.View) {
			be.ArgReduce(backends.ArgMax, retyped(o, backends.Int64), f32(8), 0)
		}, "the dtypes differ"},
		{"arg-reduce over an axis out of range", i64(1), func(o backends.View) {
			be.ArgReduce(backends.ArgMax, o, f32(8), 1)
		}, "axis 1 out of range"},
		{"reduce into the wrong shape", f32(2), func(o backends.View) {
			be.Reduce(backends.Sum, o, f32(8), []int{0})
		}, "sum: out: shape [2] (want [1])"},
		{"scan into a shorter output", f32(4), func(o backends.View) {
			be.Scan(backends.Sum, o, f32(8), 0)
		}, "cumulative sum"},
		{"sort with float32 indices", f32(8), func(o backends.View) {
			be.Sort(f32(8), o, f32(8), 0, false)
		}, "sort: indices: dtype float32"},
		{"gather with a float32 index", f32(4), func(o backends.View) {
			be.Gather(o, f32(8), f32(4), 0)
		}, "gather: index: dtype float32"},
		{"gather into values wider than the input", f32(2, 4), func(o backends.View) {
			be.Gather(o, f32(2, 3), i64(2, 4), 0)
		}, "gather: values [2 4] larger than the indexed view [2 3] on axis 1"},
		{"scatter with an index shorter than the source", f32(8), func(o backends.View) {
			be.Scatter(o, i64(2), f32(4), 0, false)
		}, "scatter: index"},
		{"where with a float32 condition", f32(8), func(o backends.View) {
			be.Where(o, f32(8), f32(8), f32(8))
		}, "where: condition: dtype float32"},
		{"matmul with inner sizes that differ", f32(2, 2), func(o backends.View) {
			be.Matmul(o, f32(2, 3), f32(4, 2))
		}, "matmul: shapes [2 3] · [4 2] into [2 2] do not match"},
		{"matmul reading past a short input", f32(2, 2), func(o backends.View) {
			be.Matmul(o, long(f32(2), 2, 3), f32(3, 2))
		}, "matmul: input 0"},
		{"im2col into columns of the wrong shape", f32(1, 4, 8), func(o backends.View) {
			be.Im2Col(o, f32(1, 1, 4, 4), geo)
		}, "im2col: columns: shape [1 4 8] (want [1 4 9])"},
		{"col2im with a zero stride", f32(1, 1, 4, 4), func(o backends.View) {
			g := geo
			g.StrideH = 0
			be.Col2Im(o, f32(1, 4, 9), g)
		}, "stride or dilation below 1"},
		{"random into a view past its buffer", f32(8), func(o backends.View) {
			be.Random(long(o, 9), backends.Uniform, 1, 0, 0, 1)
		}, "random: out"},
		{"fused max-pool into int64 values", i64(1, 1, 2, 2), func(o backends.View) {
			g := geo
			g.KH, g.KW, g.StrideH, g.StrideW, g.OutH, g.OutW = 2, 2, 2, 2, 2, 2
			be.MaxPool2d(o, i64(1, 1, 2, 2), f32(1, 1, 4, 4), g)
		}, "maxpool2d: out: dtype int64"},
		{"fused convolution with weights of the wrong shape", f32(1, 1, 3, 3), func(o backends.View) {
			be.Conv2d(o, f32(1, 1, 4, 4), f32(1, 1, 3, 3), geo)
		}, "conv2d: input 1"},
		{"fused cross-entropy with float32 targets", f32(4, 3), func(o backends.View) {
			be.CrossEntropyForward(o, f32(4), f32(4), f32(4, 3), f32(4), -100)
		}, "cross entropy: targets: dtype float32"},
		{"fused Adam with a short gradient", f32(8), func(o backends.View) {
			be.AdamStep(o, f32(8), f32(8), f32(8), f32(4), f32(8), f32(8),
				backends.AdamHyper{Decay: 1, Beta1: 0.9, Beta2: 0.999, InvDenom: 1, EpsTerm: 1e-8, MovesParam: true})
		}, "adam step: gradients"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := append([]byte(nil), buf(c.out).bytes...)
			c.call(c.out)
			err := be.Sync()
			if err == nil {
				t.Fatalf("accepted; want an error containing %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "cpu: ") {
				t.Errorf("error %q, want one containing %q", err, c.want)
			}
			if !bytes.Equal(before, buf(c.out).bytes) {
				t.Errorf("the refused call wrote to its output")
			}
		})
	}
}

// TestReadWriteBounds checks that Read and Write refuse byte ranges
// outside the buffer.
func TestReadWriteBounds(t *testing.T) {
	be := New(1)
	v := allocView(be, backends.Float32, 4) // 16 bytes
	cases := []struct {
		name string
		off  int64
		n    int
	}{
		{"past the end", 8, 12},
		{"negative offset", -4, 4},
		{"offset past the end", 20, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := be.Read(v.Buf, c.off, make([]byte, c.n)); err == nil || !strings.Contains(err.Error(), "cpu: read") {
				t.Errorf("Read: error %v, want a refusal", err)
			}
			be.Write(v.Buf, c.off, make([]byte, c.n))
			if err := be.Sync(); err == nil || !strings.Contains(err.Error(), "cpu: write") {
				t.Errorf("Write: error %v, want a refusal", err)
			}
		})
	}
}

// TestTypedViewsCheckDType checks that the typed slices over a buffer's
// words refuse another dtype, the last line of defence behind the checks
// of the kernel methods.
func TestTypedViewsCheckDType(t *testing.T) {
	b := newBuffer(backends.Bool, 3)
	cases := []struct {
		name string
		view func()
	}{
		{"float32 of bool", func() { b.f32() }},
		{"float64 of bool", func() { b.f64() }},
		{"int64 of bool", func() { b.i64() }},
		{"int32 of bool", func() { b.i32() }},
		{"float16 of bool", func() { b.u16() }},
		{"4-byte raw of bool", func() { rawElems[uint32](b) }},
		{"uint8 of float32", func() { newBuffer(backends.Float32, 3).u8() }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), "view of a buffer of 3") {
					t.Errorf("recovered %v, want a panic naming the buffer", r)
				}
			}()
			c.view()
		})
	}
	if got := len(b.u8()); got != 3 {
		t.Errorf("u8 view of a bool buffer has %d elements, want 3", got)
	}
}

// TestPredicateIntoBool checks the case that used to take a float32 view
// of a Bool output (reading four bytes per element past its allocation):
// a float32 comparison writes its Bool output as bytes, typed and scalar.
func TestPredicateIntoBool(t *testing.T) {
	be := New(2)
	for _, n := range []int{1, 7, 1000} {
		x, y := randView(be, backends.Float32, 1, n), randView(be, backends.Float32, 2, n)
		out := allocView(be, backends.Bool, n)
		be.Binary(backends.Lt, out, x, y)
		outS := allocView(be, backends.Bool, n)
		be.BinaryScalar(backends.Gt, outS, x, 0, false)
		if err := be.Sync(); err != nil {
			t.Fatal(err)
		}
		xs, ys := buf(x).f32(), buf(y).f32()
		for i, got := range buf(out).u8() {
			if want := xs[i] < ys[i]; (got == 1) != want || got > 1 {
				t.Fatalf("n=%d: element %d: %v < %v gave %d", n, i, xs[i], ys[i], got)
			}
			if want := xs[i] > 0; (buf(outS).u8()[i] == 1) != want {
				t.Fatalf("n=%d: element %d: %v > 0 gave %d", n, i, xs[i], buf(outS).u8()[i])
			}
		}
	}
}

// TestIntegerDivisionByZero checks that integer Rem and FloorDiv by zero
// record an error wrapping backends.ErrDivideByZero, for tensor and scalar
// divisors, in every integer dtype, while nonzero divisors do not.
func TestIntegerDivisionByZero(t *testing.T) {
	be := New(2)
	ints := func(dt backends.DType, vals ...int64) backends.View {
		v := allocView(be, dt, len(vals))
		for i, x := range vals {
			refStoreInt(buf(v), i, x)
		}
		return v
	}
	for _, dt := range []backends.DType{backends.Int64, backends.Int32, backends.Uint8} {
		for _, op := range []backends.BinaryOp{backends.Rem, backends.FloorDiv} {
			cases := []struct {
				name string
				call func(out backends.View)
				zero bool
			}{
				{"tensor divisor with a zero", func(o backends.View) { be.Binary(op, o, ints(dt, 7, 8, 9), ints(dt, 2, 0, 3)) }, true},
				{"broadcast zero divisor", func(o backends.View) {
					d := ints(dt, 0)
					d.Shape, d.Strides = []int{3}, []int{0}
					be.Binary(op, o, ints(dt, 7, 8, 9), d)
				}, true},
				{"scalar zero divisor", func(o backends.View) { be.BinaryScalar(op, o, ints(dt, 7, 8, 9), 0, false) }, true},
				{"reverse scalar over a zero", func(o backends.View) { be.BinaryScalar(op, o, ints(dt, 1, 0, 2), 5, true) }, true},
				{"nonzero divisors", func(o backends.View) { be.Binary(op, o, ints(dt, 7, 8, 9), ints(dt, 2, 1, 3)) }, false},
				{"zero dividend", func(o backends.View) { be.BinaryScalar(op, o, ints(dt, 0, 0, 0), 3, false) }, false},
			}
			for _, c := range cases {
				t.Run(dt.String()+"/"+op.String()+"/"+c.name, func(t *testing.T) {
					c.call(allocView(be, dt, 3))
					err := be.Sync()
					if c.zero && !errors.Is(err, backends.ErrDivideByZero) {
						t.Errorf("error %v, want one wrapping ErrDivideByZero", err)
					}
					if c.zero && err != nil && !strings.Contains(err.Error(), op.String()) {
						t.Errorf("error %q does not name %s", err, op)
					}
					if !c.zero && err != nil {
						t.Errorf("unexpected error %v", err)
					}
				})
			}
		}
	}
}
