//go:build !kiln_nocuda

package cuda

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// TestEmulatedInt8Int16Wrap checks that the int8 and int16 kernels wrap
// out-of-range results by two's complement truncation, as the CPU backend
// and PyTorch do (int8 127+1 = -128), and that casts from float truncate
// toward zero.
func TestEmulatedInt8Int16Wrap(t *testing.T) {
	const n = 6
	type check struct {
		name string
		want []float64
	}
	var (
		ks     []kernel
		checks []check
		body   strings.Builder
	)
	fmt.Fprintf(&body, "KView v = {0, {%d}, {1}, 1};\n", n)
	for _, c := range []struct {
		dt     backends.DType
		ctype  string
		op     backends.BinaryOp
		a, b   []float64
		want   []float64
		castIn []float64 // float64 values cast to dt
		cast   []float64
	}{
		{backends.Int8, "signed char", backends.Add,
			[]float64{127, -128, 100, -100, 5, 0}, []float64{1, -1, 100, -100, -7, -128},
			[]float64{-128, 127, -56, 56, -2, -128},
			[]float64{1.7, -1.7, 127.9, -128.9, 300, -0.5}, []float64{1, -1, 127, -128, 44, 0}},
		{backends.Int16, "short", backends.Mul,
			[]float64{32767, -32768, 300, -300, 181, 2},
			[]float64{2, -1, 300, 300, 181, -16384},
			[]float64{-2, -32768, 24464, -24464, 32761, -32768},
			[]float64{1.7, -1.7, 32767.9, -32768.9, 40000, -65537.5}, []float64{1, -1, 32767, -32768, -25536, -1}},
	} {
		tag := cTypes[c.dt].tag
		k := binaryKernel(c.op, c.dt, c.dt, false, false)
		cp := copyKernel(c.dt, backends.Float64)
		ks = append(ks, k, cp)
		body.WriteString("{\n" + cArray(c.ctype, "a_"+tag, c.a) + cArray(c.ctype, "b_"+tag, c.b) + cArray("double", "f_"+tag, c.castIn))
		fmt.Fprintf(&body, "%s out[%d];\n", c.ctype, n)
		fmt.Fprintf(&body, "%s(out, v, a_%s, v, b_%s, v, %d);\n", k.Name, tag, tag, n)
		fmt.Fprintf(&body, "for (int i = 0; i < %d; i++) printf(\"%%a \", (double)out[i]);\n", n)
		fmt.Fprintf(&body, "%s(out, v, f_%s, v, %d);\n", cp.Name, tag, n)
		fmt.Fprintf(&body, "for (int i = 0; i < %d; i++) printf(\"%%a \", (double)out[i]);\n}\n", n)
		checks = append(checks, check{k.Name, c.want}, check{cp.Name, c.cast})
	}
	got := emulate(t, ks, body.String())
	if len(got) != n*len(checks) {
		t.Fatalf("emulator printed %d values, want %d", len(got), n*len(checks))
	}
	for c, ch := range checks {
		for i, w := range ch.want {
			if g := parseC(got[c*n+i]); g != w {
				t.Errorf("%s element %d: kernel %v, want %v", ch.name, i, g, w)
			}
		}
	}
}
