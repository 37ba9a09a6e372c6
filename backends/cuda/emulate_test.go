//go:build !kiln_nocuda

package cuda

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/internal/conformance"
)

// The generated kernels are plain C++ apart from a few CUDA keywords, and
// their grid-stride loops cover every element with one thread. So on a
// machine without a GPU, g++ can build them against the shim and run them
// with a 1×1 grid, checking their arithmetic against the Go definitions.

const emulatorGrid = `dim3 blockIdx = {0, 0, 0}, threadIdx = {0, 0, 0}, blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
#include <cstdio>
`

// emulate compiles the kernels with main's body and returns its output lines.
func emulate(t *testing.T, ks []kernel, body string) []string {
	t.Helper()
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("g++ not installed; kernels not emulated")
	}
	var b strings.Builder
	b.WriteString(cudaShim + emulatorGrid + prelude)
	for _, k := range ks {
		b.WriteString(strings.TrimPrefix(k.Source, prelude))
	}
	b.WriteString("int main() {\n" + body + "return 0;\n}\n")
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "k.cc"), filepath.Join(dir, "k")
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gxx, "-O1", "-std=c++14", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(out))
}

func cArray(ctype, name string, vals []float64) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		switch {
		case math.IsInf(v, 1):
			parts[i] = "INFINITY"
		case math.IsInf(v, -1):
			parts[i] = "-INFINITY"
		case v == 0 && math.Signbit(v):
			parts[i] = "-0.0" // "-0" would be the integer zero
		default:
			parts[i] = strconv.FormatFloat(v, 'g', -1, 64)
		}
	}
	return fmt.Sprintf("%s %s[] = {%s};\n", ctype, name, strings.Join(parts, ", "))
}

func parseC(s string) float64 {
	switch strings.TrimPrefix(s, "-") {
	case "nan":
		return math.NaN()
	case "inf":
		if s[0] == '-' {
			return math.Inf(-1)
		}
		return math.Inf(1)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic(err)
	}
	return v
}

func close64(got, want, rtol float64) bool {
	return got == want || math.IsNaN(got) && math.IsNaN(want) || math.Abs(got-want) <= rtol*(1+math.Abs(want))
}

func TestEmulatedElementwiseKernelsMatchGo(t *testing.T) {
	var ks []kernel
	var body strings.Builder
	type check struct {
		name string
		want []float64
	}
	var checks []check
	const n = 16
	fmt.Fprintf(&body, "KView v = {0, {%d}, {1}, 1};\ndouble out[%d]; unsigned char pred[%d];\n", n, n, n)
	for op := range backends.UnaryOps {
		u := backends.UnaryOp(op)
		def := backends.UnaryOps[u]
		lo, hi := conformance.Domain(u)
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = lo + (hi-lo)*float64(i)/n + 0.01
		}
		p0, p1 := 0.7, 2.0
		if u == backends.Clamp {
			p0, p1 = -1, 1.5
		}
		f, g := unaryKernel(u, backends.Float64, backends.Float64, false), unaryKernel(u, backends.Float64, backends.Float64, true)
		out := "out"
		if def.Predicate {
			f, out = unaryKernel(u, backends.Bool, backends.Float64, false), "pred"
		}
		ks = append(ks, f)
		fmt.Fprintf(&body, "{\n%s%s(%s, v, x, v, %v, %v, %d);\n", cArray("double", "x", xs), f.Name, out, p0, p1, n)
		fmt.Fprintf(&body, "for (int i = 0; i < %d; i++) printf(\"%%a \", (double)%s[i]);\n", n, out)
		want := make([]float64, n)
		for i, x := range xs {
			want[i] = def.F(x, p0, p1)
		}
		checks = append(checks, check{f.Name, want})
		if !def.Predicate {
			ks = append(ks, g)
			fmt.Fprintf(&body, "%s(out, v, x, v, x, v, %v, %v, %d);\n", g.Name, p0, p1, n)
			fmt.Fprintf(&body, "for (int i = 0; i < %d; i++) printf(\"%%a \", out[i]);\n", n)
			gw := make([]float64, n)
			for i, x := range xs {
				gw[i] = x * def.DF(x, p0, p1)
			}
			checks = append(checks, check{g.Name, gw})
		}
		body.WriteString("}\n")
	}
	as := []float64{-7.5, -3, -2, -0.5, 0, 0.5, 1, 2, 3, 5.5, 7, -1, 1e-3, 4, -4, 9}
	bs := []float64{2, -3, 0.5, 2, 3, -0.25, 1, -2, 3, 2, 0.1, -1, 2, -4, 4, 0}
	body.WriteString(cArray("double", "ga", as) + cArray("double", "gb", bs))
	for op := range backends.BinaryOps {
		bop := backends.BinaryOp(op)
		def := backends.BinaryOps[bop]
		outT, out := backends.Float64, "out"
		if def.Predicate {
			outT, out = backends.Bool, "pred"
		}
		k := binaryKernel(bop, outT, backends.Float64, false, false)
		ks = append(ks, k)
		fmt.Fprintf(&body, "%s(%s, v, ga, v, gb, v, %d);\n", k.Name, out, n)
		fmt.Fprintf(&body, "for (int i = 0; i < %d; i++) printf(\"%%a \", (double)%s[i]);\n", n, out)
		want := make([]float64, n)
		for i := range as {
			want[i] = def.F(as[i], bs[i])
		}
		checks = append(checks, check{k.Name, want})
	}
	for kind := backends.Uniform; kind <= backends.RandInt; kind++ {
		k := randomKernel(kind, backends.Float64)
		ks = append(ks, k)
		fmt.Fprintf(&body, "%s(out, v, 0x123456789abcdefull, 1ull << 33, -2.0, 3.0, %d);\n", k.Name, n)
		fmt.Fprintf(&body, "for (int i = 0; i < %d; i++) printf(\"%%a \", out[i]);\n", n)
		want := make([]float64, n)
		for i := range want {
			want[i] = backends.RandomValue(kind, 0x123456789abcdef, 1<<33+uint64(i), -2, 3)
		}
		checks = append(checks, check{k.Name, want})
	}
	got := emulate(t, ks, body.String())
	if len(got) != n*len(checks) {
		t.Fatalf("emulator printed %d values, want %d", len(got), n*len(checks))
	}
	for c, ch := range checks {
		for i, w := range ch.want {
			if g := parseC(got[c*n+i]); !close64(g, w, 1e-12) {
				t.Errorf("%s element %d: kernel %v, Go %v", ch.name, i, g, w)
			}
		}
	}
}

func TestEmulatedHalfConversionsMatchGo(t *testing.T) {
	xs := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 65504, 65520, 1e6, 6e-8, 3e-5, 1.0009765625, 2.5e-3,
		math.Inf(1), math.Inf(-1), 3.140625, 1.00390625, 1e-40, 3.4e38, 0.333333, -12345.678}
	n := len(xs)
	var body strings.Builder
	fmt.Fprintf(&body, "KView v = {0, {%d}, {1}, 1};\n", n)
	body.WriteString(cArray("float", "x", xs))
	fmt.Fprintf(&body, "unsigned short h[%d], b[%d];\n", n, n)
	ks := []kernel{copyKernel(backends.Float16, backends.Float32), copyKernel(backends.BFloat16, backends.Float32)}
	fmt.Fprintf(&body, "%s(h, v, x, v, %d);\n%s(b, v, x, v, %d);\n", ks[0].Name, n, ks[1].Name, n)
	fmt.Fprintf(&body, "for (int i = 0; i < %d; i++) printf(\"%%u %%u %%a %%a \", h[i], b[i], (double)kiln_h2f(h[i]), (double)kiln_bf2f(b[i]));\n", n)
	got := emulate(t, ks, body.String())
	for i, x := range xs {
		f := float32(x)
		wantH, wantB := backends.Float32ToFloat16(f), backends.Float32ToBFloat16(f)
		gh, _ := strconv.Atoi(got[4*i])
		gb, _ := strconv.Atoi(got[4*i+1])
		if uint16(gh) != wantH || uint16(gb) != wantB {
			t.Errorf("%v: kernel f16 %#04x bf16 %#04x, Go %#04x %#04x", x, gh, gb, wantH, wantB)
		}
		if back := parseC(got[4*i+2]); back != float64(backends.Float16ToFloat32(wantH)) {
			t.Errorf("%v: f16 back to float %v, Go %v", x, back, backends.Float16ToFloat32(wantH))
		}
		if back := parseC(got[4*i+3]); back != float64(backends.BFloat16ToFloat32(wantB)) {
			t.Errorf("%v: bf16 back to float %v", x, back)
		}
	}
}

// TestEmulatedIndexedKernels runs the reduction, arg-reduction, scan,
// sort, gather, scatter, im2col and col2im kernels on a 2×3 input, with the launch
// arguments the Backend methods build, and checks them against hand-worked
// answers.
func TestEmulatedIndexedKernels(t *testing.T) {
	f := backends.Float64
	ks := []kernel{im2colKernel(f), col2imKernel(f), reduceKernel(backends.Sum, f), reduceKernel(backends.Max, f), argReduceKernel(backends.ArgMax, f),
		scanKernel(backends.Sum, f), sortKernel(f, true), gatherKernel(f), scatterKernel(f, true)}
	body := `double x[] = {3, 1, 2, -1, 5, 5};
int err = 0;
#define P(a, n) for (int k = 0; k < n; k++) printf("%g ", (double)a[k]); printf("| ");
{ double out[2]; KView ov = {0, {2, 1}, {1, 1}, 2}, xv = {0, {2, 1}, {3, 0}, 2}, rv = {0, {3}, {1}, 1};
  kiln_reduce_sum_f64(out, ov, x, xv, rv, 2, 3); P(out, 2) }
{ double out[3]; KView ov = {0, {1, 3}, {3, 1}, 2}, xv = {0, {1, 3}, {0, 1}, 2}, rv = {0, {2}, {3}, 1};
  kiln_reduce_max_f64(out, ov, x, xv, rv, 3, 2); P(out, 3) }
{ long long out[2]; KView ov = {0, {2, 1}, {1, 1}, 2}, xv = {0, {2, 1}, {3, 0}, 2};
  kiln_argmax_f64(out, ov, x, xv, 3, 1, 2); P(out, 2) }
{ double out[6]; KView v = {0, {2, 1}, {3, 1}, 2};
  kiln_scan_sum_f64(out, v, x, v, 3, 1, 1, 2); P(out, 6) }
{ double vals[6]; long long idx[6]; KView v = {0, {2, 1}, {3, 1}, 2};
  kiln_sort_desc_f64(vals, v, idx, v, x, v, 3, 1, 1, 1, 2); P(vals, 6) P(idx, 6) }
{ double out[4]; long long index[] = {2, 0, 1, 1}; KView ov = {0, {2, 2}, {2, 1}, 2}, xv = {0, {2, 3}, {3, 1}, 2};
  kiln_gather_f64(out, ov, x, xv, index, ov, 1, 3, &err, 4); P(out, 4) }
{ double out[6] = {0, 0, 0, 0, 0, 0}, src[] = {1, 2, 3, 4, 5, 6}; long long index[] = {0, 1, 0, 0, 1, 1};
  KView v = {0, {2, 3}, {3, 1}, 2};
  kiln_scatter_add_f64(out, v, index, v, src, v, 0, 2, 2, &err, 3); P(out, 6) }
printf("err=%d | ", err);
{ double out[2]; long long index[] = {3, 0}; KView ov = {0, {1, 2}, {2, 1}, 2}, xv = {0, {2, 3}, {3, 1}, 2};
  kiln_gather_f64(out, ov, x, xv, index, ov, 1, 3, &err, 2); }
printf("err=%d | ", err);
{ double img[9], cols[16], ones[16], back[9];
  for (int k = 0; k < 9; k++) img[k] = k + 1;
  for (int k = 0; k < 16; k++) ones[k] = 1;
  KView iv = {0, {1, 1, 3, 3}, {9, 9, 3, 1}, 4}, cv = {0, {1, 4, 4}, {16, 4, 1}, 3};
  kiln_im2col_f64(cols, cv, img, iv, 1, 1, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 2, 2, 0.0, 16); P(cols, 16)
  kiln_col2im_f64(back, iv, ones, cv, 1, 1, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 2, 2, 9); P(back, 9) }
printf("\n");
`
	got := strings.Join(emulate(t, ks, body), " ")
	want := "6 9 | 3 5 5 | 0 1 | 3 4 6 -1 4 9 | 3 2 1 5 5 -1 | 0 2 1 1 2 0 | 2 3 5 5 | 5 0 3 0 7 6 | err=0 | err=1 | 1 2 4 5 2 3 5 6 4 5 7 8 5 6 8 9 | 1 2 1 2 4 2 1 2 1 |"
	if got != want {
		t.Fatalf("kernels printed\n%s\nwant\n%s", got, want)
	}
}
