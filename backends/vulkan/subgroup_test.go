//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"fmt"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/internal/conformance"
)

// TestSubgroupGEMM runs matmul_subgroup.comp where the device reports
// subgroup shuffles (lavapipe does) on shapes that leave partial tiles in
// every direction, batched with a broadcast operand, transposed and
// strided, for Float32, Float16 and BFloat16: against the CPU within the
// conformance tolerance, and against the shared-memory GEMM bit for bit
// (both sum each output's products in k order in float32).
func TestSubgroupGEMM(t *testing.T) {
	dev := openDevice(t)
	sg := dev.pd.subgroup
	t.Logf("subgroup size %d, operations %#x, compute %v", sg.size, sg.operations, sg.compute)
	if !sg.gemmSubgroup() {
		t.Skipf("%s has no subgroup shuffles in compute shaders", dev.Info().Name)
	}
	if !dev.subgroupGEMM.Load() {
		t.Fatal("the device supports the subgroup GEMM but the backend did not select it")
	}
	defer dev.subgroupGEMM.Store(true)
	type shape struct{ batch, m, n, k int }
	shapes := []shape{{1, 1, 1, 1}, {1, 7, 13, 5}, {1, 65, 33, 70}, {3, 9, 40, 17}, {2, 130, 90, 200}}
	for _, dt := range []backends.DType{backends.Float32, backends.Float16, backends.BFloat16} {
		for _, sh := range shapes {
			c := conformance.Case{Name: fmt.Sprintf("%s/%v", dt, sh), DType: dt, Run: func(s *conformance.Session) backends.View {
				a := s.Tensor(dt, conformance.Values(dt, sh.batch*sh.m*sh.k, -1, 1, 1), sh.batch, sh.m, sh.k)
				// b is [n, k], read as a batch of kᵀ×n matrices: transposed and broadcast
				b := s.Tensor(dt, conformance.Values(dt, sh.n*sh.k, -1, 1, 2), sh.n, sh.k)
				bt := backends.View{Buf: b.Buf, DType: dt, Shape: []int{sh.batch, sh.k, sh.n}, Strides: []int{0, 1, sh.k}}
				out := s.Empty(dt, sh.batch, sh.m, sh.n)
				s.B.Matmul(out, a, bt)
				return out
			}}
			dev.subgroupGEMM.Store(true)
			check(t, dev, c, within)
			var subgroup, shared []byte
			for _, on := range []bool{true, false} {
				dev.subgroupGEMM.Store(on)
				s := &conformance.Session{B: dev}
				raw := s.Raw(c.Run(s))
				s.Free()
				if s.Err != nil {
					t.Fatal(s.Err)
				}
				if on {
					subgroup = raw
				} else {
					shared = raw
				}
			}
			if err := exact(c, dt, shared, subgroup); err != nil {
				t.Errorf("%s: the subgroup GEMM differs from the shared-memory one: %v", c.Name, err)
			}
		}
	}
	// a strided output view at an offset
	dt := backends.Float32
	dev.subgroupGEMM.Store(true)
	check(t, dev, conformance.Case{Name: "strided-out", DType: dt, Run: func(s *conformance.Session) backends.View {
		a := s.Tensor(dt, conformance.Values(dt, 67*65, -1, 1, 3), 67, 65)
		b := s.Tensor(dt, conformance.Values(dt, 65*129, -1, 1, 4), 65, 129)
		out := s.Empty(dt, 67, 2*129)
		ov := backends.View{Buf: out.Buf, DType: dt, Shape: []int{67, 129}, Strides: []int{2 * 129, 2}, Offset: 1}
		s.B.Matmul(ov, a, b)
		return out
	}}, within)
	if err := dev.Sync(); err != nil {
		t.Fatal(err)
	}
	dev.mu.Lock()
	_, ran := dev.pipelines["matmul_subgroup,0"] // the Float32 pipeline
	dev.mu.Unlock()
	if !ran {
		t.Error("matmul_subgroup.comp never ran")
	}
}

// BenchmarkGEMMPaths times the subgroup and the shared-memory GEMM on
// vulkan:0 in the same run (n×n float32, the wait included), in GFLOP/s.
//
//	go test -run '^$' -bench GEMMPaths -benchtime 3x ./backends/vulkan/
func BenchmarkGEMMPaths(b *testing.B) {
	dev, err := Open(0)
	if err != nil {
		b.Skipf("no Vulkan device: %v", err)
	}
	if !dev.pd.subgroup.gemmSubgroup() {
		b.Skip("no subgroup shuffles")
	}
	defer dev.subgroupGEMM.Store(true)
	for _, n := range []int{256, 512} {
		s := &conformance.Session{B: dev}
		x := s.Tensor(backends.Float32, conformance.Values(backends.Float32, n*n, -1, 1, 1), n, n)
		y := s.Tensor(backends.Float32, conformance.Values(backends.Float32, n*n, -1, 1, 2), n, n)
		out := s.Empty(backends.Float32, n, n)
		for _, path := range []string{"subgroup", "shared", "subgroup", "shared"} {
			b.Run(fmt.Sprintf("n=%d/%s", n, path), func(b *testing.B) {
				dev.subgroupGEMM.Store(path == "subgroup")
				dev.Matmul(out, x, y) // warm up: pipeline creation
				if err := dev.Sync(); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for range b.N {
					dev.Matmul(out, x, y)
					if err := dev.Sync(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
		s.Free()
	}
}
