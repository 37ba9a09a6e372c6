package dist

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/kiln-ml/kiln/tensor"
)

// benchSizes are the all-reduce sizes in bytes, 1 KB to 64 MB.
var benchSizes = []int{1 << 10, 16 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20}

// benchIters is how many all-reduces of size bytes each rank times (fixed,
// so that both ranks run the same count).
func benchIters(size int) int { return min(max((256<<20)/size, 5), 2000) }

// BenchmarkAllReduceMPI starts this binary under mpirun -np 2 once, where
// each rank times float32 all-reduces (TestMPIChild, mode "bench"), and
// reports rank 0's figures: GB/s through the Communicator (tensor copies
// included) and through MPI_Allreduce directly (rawGB/s). With two ranks
// the bus bandwidth equals this algorithm bandwidth.
func BenchmarkAllReduceMPI(b *testing.B) {
	results := benchOnce(b)
	for _, size := range benchSizes {
		b.Run(byteSize(size), func(b *testing.B) {
			r, ok := results[size]
			if !ok {
				b.Fatalf("no result for %d bytes", size)
			}
			b.ReportMetric(r[0]*1e9, "ns/op")
			b.ReportMetric(float64(size)/r[0]/1e9, "GB/s")
			b.ReportMetric(float64(size)/r[1]/1e9, "rawGB/s")
			if r[2] > 0 {
				b.ReportMetric(float64(size)/r[2]/1e9, "cGB/s")
				b.ReportMetric(r[2]/r[0], "ratio_vs_C")
			}
		})
	}
}

var (
	benchMu      sync.Mutex
	benchResults map[int][3]float64
)

// benchOnce runs mpirun once per process and parses "BENCH size sec rawsec";
// when mpicc is on PATH it also builds and runs testdata/allreduce_bench.c
// and parses its "CBENCH size sec". Each result is seconds per all-reduce:
// through the Communicator, through MPI_Allreduce from Go, from C (0 when
// not measured).
func benchOnce(b *testing.B) map[int][3]float64 {
	benchMu.Lock()
	defer benchMu.Unlock()
	if benchResults != nil {
		return benchResults
	}
	out, _, err := mpirun(b, 2, "bench", "TestMPIChild", 5*time.Minute)
	if err != nil {
		b.Fatalf("mpirun: %v\n%s", err, out)
	}
	res := map[int][3]float64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var size int
		var sec, raw float64
		if n, _ := fmt.Sscanf(sc.Text(), "BENCH %d %g %g", &size, &sec, &raw); n == 3 {
			res[size] = [3]float64{sec, raw, 0}
		}
	}
	cOut, err := runCBench(b)
	if err != nil {
		b.Logf("C reference not measured: %v\n%s", err, cOut)
	}
	sc = bufio.NewScanner(strings.NewReader(cOut))
	for sc.Scan() {
		var size int
		var sec float64
		if n, _ := fmt.Sscanf(sc.Text(), "CBENCH %d %g", &size, &sec); n == 2 {
			r := res[size]
			r[2] = sec
			res[size] = r
		}
	}
	benchResults = res
	return res
}

// runCBench builds testdata/allreduce_bench.c with mpicc and runs it under
// mpirun -np 2.
func runCBench(b *testing.B) (string, error) {
	mpicc, err := exec.LookPath("mpicc")
	if err != nil {
		return "", fmt.Errorf("mpicc not on PATH (Debian's libopenmpi-dev)")
	}
	bin := filepath.Join(b.TempDir(), "allreduce_bench")
	if out, err := exec.Command(mpicc, "-O2", "-o", bin, "testdata/allreduce_bench.c").CombinedOutput(); err != nil {
		return string(out), err
	}
	args := []string{"-np", "2", "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader"}
	if os.Geteuid() == 0 {
		args = append(args, "--allow-run-as-root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "mpirun", append(args, bin)...).CombinedOutput()
	return string(out), err
}

func byteSize(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMB", n>>20)
	}
	return fmt.Sprintf("%dKB", n>>10)
}

// mpiChildBench times float32 all-reduces on this rank; rank 0 prints them.
func mpiChildBench(c Communicator) error {
	m := c.(*mpiComm)
	for _, size := range benchSizes {
		n := size / 4
		x := tensor.Ones(tensor.CPU(), n)
		iters := benchIters(size)
		if err := c.AllReduce(x, Sum); err != nil { // warm up
			return err
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		start := time.Now()
		for i := 0; i < iters; i++ {
			if err := c.AllReduce(x, Sum); err != nil {
				return err
			}
		}
		sec := time.Since(start).Seconds() / float64(iters)

		buf := make([]float32, n)
		if err := c.Barrier(); err != nil {
			return err
		}
		var rawSec float64
		err := m.collective("AllReduce", func() error {
			p := unsafe.Pointer(&buf[0])
			start := time.Now()
			for i := 0; i < iters; i++ {
				if err := m.lib.check(m.rank, "MPI_Allreduce", m.lib.allreduce(mpiInPlace, p, int32(n), m.lib.float32, m.lib.opSum, m.lib.commWorld)); err != nil {
					return err
				}
			}
			rawSec = time.Since(start).Seconds() / float64(iters)
			runtime.KeepAlive(buf)
			return nil
		})
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			fmt.Printf("BENCH %d %g %g\n", size, sec, rawSec)
		}
	}
	return nil
}
