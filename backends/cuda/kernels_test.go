//go:build !kiln_nocuda

package cuda

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// cudaShim declares just enough of CUDA C for g++ to check the generated
// kernels' syntax and types on a machine without the toolkit.
const cudaShim = `#include <cmath>
#include <cstring>
using namespace std;
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __restrict__
struct dim3 { unsigned int x, y, z; };
extern dim3 blockIdx, threadIdx, blockDim, gridDim;
inline void __syncthreads() {}
inline float __uint_as_float(unsigned int u) { float f; memcpy(&f, &u, 4); return f; }
inline unsigned int __float_as_uint(float f) { unsigned int u; memcpy(&u, &f, 4); return u; }
`

func TestEveryOpHasCUDASource(t *testing.T) {
	for op := range backends.UnaryOps {
		u := backends.UnaryOp(op)
		if e, ok := unaryC[u]; !ok || e[0] == "" || e[1] == "" {
			t.Errorf("unary op %s has no CUDA expression", u)
		}
	}
	for op := range backends.BinaryOps {
		if binaryC[backends.BinaryOp(op)] == "" {
			t.Errorf("binary op %s has no CUDA expression", backends.BinaryOp(op))
		}
	}
	for _, d := range backends.DTypes() {
		if _, ok := cTypes[d]; !ok {
			t.Errorf("dtype %s has no C type", d)
		}
	}
}

func TestKernelSourceIsDeterministicWithUniqueNames(t *testing.T) {
	a, b := allKernels(), allKernels()
	if len(a) < 1000 {
		t.Fatalf("only %d kernels generated", len(a))
	}
	seen := map[string]bool{}
	for i, k := range a {
		if k.Source != b[i].Source || k.Name != b[i].Name {
			t.Fatalf("kernel %s: source differs between two generations", k.Name)
		}
		if seen[k.Name] {
			t.Fatalf("kernel name %s generated twice", k.Name)
		}
		seen[k.Name] = true
		if !kernelSymbol(k.Name) {
			t.Errorf("kernel name %q is not a C identifier", k.Name)
		}
		if !strings.Contains(k.Source, `extern "C" __global__ void `+k.Name+"(") {
			t.Errorf("kernel %s: source does not define its entry point", k.Name)
		}
	}
}

// TestKernelsCompileUnderShim checks every generated kernel with
// g++ -fsyntax-only -x c++ against the CUDA shim.
func TestKernelsCompileUnderShim(t *testing.T) {
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("g++ not installed (apt-get install g++); kernel syntax not checked")
	}
	var b strings.Builder
	b.WriteString(cudaShim)
	b.WriteString(prelude)
	for _, k := range allKernels() {
		b.WriteString(strings.TrimPrefix(k.Source, prelude))
	}
	path := filepath.Join(t.TempDir(), "kernels.cu")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(gxx, "-fsyntax-only", "-x", "c++", "-std=c++14", "-Wno-unused", path).CombinedOutput()
	if err != nil {
		lines := strings.Split(string(out), "\n")
		if len(lines) > 40 {
			lines = lines[:40]
		}
		t.Fatalf("g++ rejected the generated kernels: %v\n%s", err, strings.Join(lines, "\n"))
	}
}
