package backends

import "fmt"

// DType is the element type of a buffer or tensor.
type DType uint8

// The element types every backend accepts. Float16 and BFloat16 are stored in
// two bytes; backends without native half arithmetic compute them in float32.
const (
	Float32 DType = iota
	Float64
	Float16
	BFloat16
	Int64
	Int32
	Uint8
	Bool
	// Int8 and Int16 were added after Bool so that the numeric values of the
	// older dtypes (written into checkpoints and wire messages) do not change.
	Int8
	Int16
	numDTypes
)

var dtypeInfo = [numDTypes]struct {
	name string
	size int
}{
	Float32:  {"float32", 4},
	Float64:  {"float64", 8},
	Float16:  {"float16", 2},
	BFloat16: {"bfloat16", 2},
	Int64:    {"int64", 8},
	Int32:    {"int32", 4},
	Uint8:    {"uint8", 1},
	Bool:     {"bool", 1},
	Int8:     {"int8", 1},
	Int16:    {"int16", 2},
}

// DTypes lists every element type, in declaration order.
func DTypes() []DType {
	out := make([]DType, numDTypes)
	for i := range out {
		out[i] = DType(i)
	}
	return out
}

// String returns the PyTorch-style name of d ("float32", "int64", …).
func (d DType) String() string {
	if d >= numDTypes {
		return fmt.Sprintf("dtype(%d)", uint8(d))
	}
	return dtypeInfo[d].name
}

// Size returns the number of bytes one element of d occupies.
func (d DType) Size() int {
	if d >= numDTypes {
		return 0
	}
	return dtypeInfo[d].size
}

// Valid reports whether d is one of the declared element types.
func (d DType) Valid() bool { return d < numDTypes }

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool {
	return d == Float32 || d == Float64 || d == Float16 || d == BFloat16
}

// IsInt reports whether d is an integer type (bool excluded).
func (d DType) IsInt() bool {
	return d == Int64 || d == Int32 || d == Int16 || d == Int8 || d == Uint8
}

// ParseDType returns the DType named s ("float32", "f32", "int64", "bool", …).
func ParseDType(s string) (DType, error) {
	switch s {
	case "float32", "f32", "float":
		return Float32, nil
	case "float64", "f64", "double":
		return Float64, nil
	case "float16", "f16", "half":
		return Float16, nil
	case "bfloat16", "bf16":
		return BFloat16, nil
	case "int64", "i64", "long":
		return Int64, nil
	case "int32", "i32", "int":
		return Int32, nil
	case "int16", "i16", "short":
		return Int16, nil
	case "int8", "i8":
		return Int8, nil
	case "uint8", "u8":
		return Uint8, nil
	case "bool":
		return Bool, nil
	}
	return 0, fmt.Errorf("backends: unknown dtype %q", s)
}

// category orders dtypes the way PyTorch's promotion does: bool < integer < floating.
func (d DType) category() int {
	switch {
	case d == Bool:
		return 0
	case d.IsInt():
		return 1
	default:
		return 2
	}
}

// Promote returns the dtype that a binary operation on tensors of dtypes a and b
// computes in, following PyTorch's type-promotion rules for tensors of equal
// standing: the higher category wins (bool < integer < float); within
// integers the wider type wins (uint8 with int8 gives int16, which holds
// both ranges); float16 with bfloat16 gives float32.
func Promote(a, b DType) DType {
	if a == b {
		return a
	}
	ca, cb := a.category(), b.category()
	if ca != cb {
		if ca > cb {
			return a
		}
		return b
	}
	switch ca {
	case 1:
		if a == Int64 || b == Int64 {
			return Int64
		}
		if a == Int32 || b == Int32 {
			return Int32
		}
		// uint8 with int8 needs int16 to hold both ranges, as in PyTorch.
		if a == Int16 || b == Int16 || a == Uint8 || b == Uint8 {
			return Int16
		}
		return Int8
	case 2:
		if a == Float64 || b == Float64 {
			return Float64
		}
		if a == Float32 || b == Float32 {
			return Float32
		}
		return Float32 // float16 with bfloat16
	}
	return a
}

// PromoteScalar returns the dtype of an operation between a tensor of dtype d
// and a Go scalar: a float scalar lifts bool and integer tensors to def (the
// default float dtype); an integer scalar lifts bool tensors to Int64;
// otherwise the tensor's dtype wins, as in PyTorch.
func PromoteScalar(d DType, scalarIsFloat bool, def DType) DType {
	if scalarIsFloat && !d.IsFloat() {
		return def
	}
	if !scalarIsFloat && d == Bool {
		return Int64
	}
	return d
}
