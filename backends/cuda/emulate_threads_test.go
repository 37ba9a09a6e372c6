//go:build !kiln_nocuda

package cuda

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/internal/conformance"
)

// threadShim runs kernels that cooperate through shared memory and
// __syncthreads: every thread of a block is an OS thread, and
// __syncthreads is a barrier across them.
const threadShim = `#include <cmath>
#include <cstring>
#include <cstdio>
#include <thread>
#include <vector>
#include <barrier>
using namespace std;
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __restrict__
struct dim3 { unsigned int x, y, z; };
dim3 blockIdx, blockDim, gridDim;
thread_local dim3 threadIdx;
std::barrier<>* kiln_barrier;
inline void __syncthreads() { kiln_barrier->arrive_and_wait(); }
inline float __uint_as_float(unsigned int u) { float f; memcpy(&f, &u, 4); return f; }
inline unsigned int __float_as_uint(float f) { unsigned int u; memcpy(&u, &f, 4); return u; }
// launch runs f on every thread of every block, one block at a time.
template <typename F> void launch(dim3 grid, dim3 block, F f) {
  gridDim = grid; blockDim = block;
  for (unsigned z = 0; z < grid.z; z++) for (unsigned y = 0; y < grid.y; y++) for (unsigned x = 0; x < grid.x; x++) {
    blockIdx = {x, y, z};
    std::barrier<> bar(block.x * block.y * block.z);
    kiln_barrier = &bar;
    std::vector<std::thread> ts;
    for (unsigned ty = 0; ty < block.y; ty++) for (unsigned tx = 0; tx < block.x; tx++)
      ts.emplace_back([=] { threadIdx = {tx, ty, 0}; f(); });
    for (auto& t : ts) t.join();
  }
}
`

func TestEmulatedBlockKernels(t *testing.T) {
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("g++ not installed; kernels not emulated")
	}
	f := backends.Float64
	const m, k, n = 5, 7, 19
	a := conformance.Values(f, 2*m*k, -1, 1, 1)
	b := conformance.Values(f, k*n, -1, 1, 2) // stored [n, k], used transposed and broadcast over the batch
	red := conformance.Values(f, 1000, -1, 1, 3)
	var src strings.Builder
	src.WriteString(threadShim + prelude)
	for _, kn := range []kernel{matmulKernel(f), reduceKernel(backends.Sum, f)} {
		src.WriteString(strings.TrimPrefix(kn.Source, prelude))
	}
	src.WriteString("int main() {\n" + cArray("double", "a", a) + cArray("double", "b", b) + cArray("double", "r", red))
	fmt.Fprintf(&src, `double out[%d], sum[1];
KView ov = {0, {2, %d, %d}, {%d, %d, 1}, 3}, av = {0, {2, %d, %d}, {%d, %d, 1}, 3}, bv = {0, {2, %d, %d}, {0, 1, %d}, 3};
launch({%d, %d, 2}, {16, 16, 1}, [&] { kiln_matmul_f64(out, ov, a, av, b, bv, %d, %d, %d, 2); });
for (int i = 0; i < %d; i++) printf("%%a ", out[i]);
KView sv = {0, {1}, {1}, 1}, xv = {0, {1}, {0}, 1}, rv = {0, {1000}, {1}, 1};
launch({1, 1, 1}, {%d, 1, 1}, [&] { kiln_reduce_sum_f64(sum, sv, r, xv, rv, 1, 1000); });
printf("%%a\n", sum[0]);
return 0;
}
`, 2*m*n, m, n, m*n, n, m, k, m*k, k, k, n, k,
		(n+15)/16, (m+15)/16, m, n, k, 2*m*n, reduceThreads)
	dir := t.TempDir()
	cc, bin := filepath.Join(dir, "k.cc"), filepath.Join(dir, "k")
	if err := os.WriteFile(cc, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gxx, "-O1", "-std=c++20", "-pthread", "-o", bin, cc).CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(string(out))
	if len(got) != 2*m*n+1 {
		t.Fatalf("printed %d values", len(got))
	}
	for z := range 2 {
		for i := range m {
			for j := range n {
				want := 0.0
				for p := range k {
					want += a[z*m*k+i*k+p] * b[j*k+p]
				}
				if g := parseC(got[z*m*n+i*n+j]); math.Abs(g-want) > 1e-12 {
					t.Fatalf("matmul[%d][%d][%d] = %v, want %v", z, i, j, g, want)
				}
			}
		}
	}
	want := 0.0
	for _, v := range red {
		want += v
	}
	if g := parseC(got[2*m*n]); math.Abs(g-want) > 1e-12 {
		t.Fatalf("block reduction = %v, want %v", g, want)
	}
}
