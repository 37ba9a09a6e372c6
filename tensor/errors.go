package tensor

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kiln-ml/kiln/backends"
)

// Sentinel errors, matched with errors.Is against a *Error or a returned error.
var (
	ErrShape        = errors.New("shape mismatch")
	ErrDType        = errors.New("dtype mismatch")
	ErrDevice       = errors.New("device mismatch")
	ErrArgument     = errors.New("invalid argument")
	ErrReleased     = errors.New("use of released tensor")
	ErrOutOfMemory  = errors.New("device memory budget exceeded")
	ErrNoDevice     = errors.New("device not available")
	ErrNoGradient   = errors.New("no gradient")
	ErrDeviceFailed = errors.New("device failure")
	// ErrDivideByZero is an integer Rem or FloorDivide by zero: the panic
	// of the scalar forms, and wrapped by the device failure reported at
	// the next synchronisation point for a tensor divisor. It is
	// backends.ErrDivideByZero.
	ErrDivideByZero = backends.ErrDivideByZero
)

// Error is the panic value of a tensor operation that cannot succeed on its
// inputs: it names the op and says what was wrong, with shapes and dtypes.
// Tensor ops panic with it (programming errors, as in gonum's mat package);
// Try turns such a panic back into an error.
type Error struct {
	Op  string // the operation, e.g. "tensor.Matmul"
	Msg string // what was wrong, with the shapes and dtypes involved
	Err error  // sentinel (ErrShape, ErrDType, …) for errors.Is
}

// Error implements error.
func (e *Error) Error() string { return e.Op + ": " + e.Msg }

// Unwrap returns the sentinel error.
func (e *Error) Unwrap() error { return e.Err }

// fail panics with an *Error for op.
func fail(op string, kind error, format string, args ...any) {
	panic(&Error{Op: "tensor." + op, Msg: fmt.Sprintf(format, args...), Err: kind})
}

// Try runs fn and returns the *Error it panicked with, or nil. Panics that
// are not tensor errors propagate unchanged.
func Try(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(*Error); ok {
				err = e
				return
			}
			panic(r)
		}
	}()
	fn()
	return nil
}

// shapeString formats a shape like PyTorch's error messages: [8 3 32 32].
func shapeString(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
