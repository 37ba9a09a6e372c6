package cpu

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// resnetConvs are the distinct convolutions of torchvision's ResNet-18 on
// 64×64 images in batches of 32 (BenchmarkResNet18TrainStep), with how
// many times a training step runs each.
var resnetConvs = []struct {
	name       string
	c, o, h, k int // input channels, output channels, input size, kernel
	stride     int
	count      int
}{
	{"stem7x7s2", 3, 64, 64, 7, 2, 1},
	{"l1_3x3", 64, 64, 16, 3, 1, 4},
	{"l2_3x3s2", 64, 128, 16, 3, 2, 1},
	{"l2_3x3", 128, 128, 8, 3, 1, 3},
	{"l2_1x1s2", 64, 128, 16, 1, 2, 1},
	{"l3_3x3s2", 128, 256, 8, 3, 2, 1},
	{"l3_3x3", 256, 256, 4, 3, 1, 3},
	{"l3_1x1s2", 128, 256, 8, 1, 2, 1},
	{"l4_3x3s2", 256, 512, 4, 3, 2, 1},
	{"l4_3x3", 512, 512, 2, 3, 1, 3},
	{"l4_1x1s2", 256, 512, 4, 1, 2, 1},
	{"mnist_conv1", 1, 16, 28, 3, 1, 0}, // unpadded, batch 128 (see below)
	{"mnist_conv2", 16, 32, 13, 3, 1, 0},
}

// BenchmarkResNetConvs times each ResNet-18 convolution's forward pass
// and both gradients (float32, batch 32), and the MNIST CNN's two
// convolutions' (batch 128), on one worker (KILN_CONV_BENCH_WORKERS sets
// another number); GFLOP/s counts
// 2·N·O·OutH·OutW·C·KH·KW per direction (cpu-GFLOP/s per CPU second, less
// disturbed by other processes on the machine). ms/step and cpu-ms/step are the
// wall and CPU time of the convolution's runs in one training step; CPU
// time is less disturbed by other processes on the machine.
//
// KILN_CONV_CHANNELS sets convChannelsMode ("off": the direct forward
// pass in position tiles only; "force": in channel tiles wherever they
// run).
func BenchmarkResNetConvs(b *testing.B) {
	defer func(mode string) { convChannelsMode = mode }(convChannelsMode)
	convChannelsMode = os.Getenv("KILN_CONV_CHANNELS")
	for _, c := range resnetConvs {
		pad, n := c.k/2, 32
		if c.count == 0 { // the MNIST CNN's convolutions, as bench_compare.py's "conv1" and "conv2" rows
			pad, n = 0, 128
		}
		out := (c.h+2*pad-c.k)/c.stride + 1
		g := backends.ConvGeometry{N: n, C: c.c, H: c.h, W: c.h, KH: c.k, KW: c.k, StrideH: c.stride, StrideW: c.stride,
			PadTop: pad, PadLeft: pad, DilationH: 1, DilationW: 1, OutH: out, OutW: out}
		flops := 2 * float64(g.N*c.o*out*out*c.c*c.k*c.k)
		for _, dir := range []string{"fwd", "dx", "dw"} {
			for _, path := range convBenchPaths() {
				b.Run(fmt.Sprintf("%s/%s/path=%s", c.name, dir, path), func(b *testing.B) {
					convBF16Force = path == "bf16"
					defer func() { convBF16Force = false }()
					direct := map[string]string{"gemm": "off", "bf16": "off", "wino": "off", "auto": "auto", "new": "auto", "force": "force", "taps": "auto",
						"framed": "auto", "rows": "auto"}[path]
					taps := map[string]string{"gemm": "off", "bf16": "off", "wino": "off", "auto": "off", "new": "", "force": "off", "taps": "force",
						"framed": "", "rows": ""}[path]
					rows := map[string]string{"framed": "off", "rows": "force"}[path]
					wino := map[bool]string{true: "force", false: "off"}[path == "wino"]
					if path == "default" || path == "autocast" {
						benchConv(b, g, c.o, dir, flops, c.count, path == "autocast")
						return
					}
					withConvDirect(b, direct, func() {
						withConvTaps(b, taps, func() {
							withConvRows(b, rows, func() {
								withConvWino(b, wino, func() { benchConv(b, g, c.o, dir, flops, c.count, path == "bf16") })
							})
						})
					})
				})
			}
		}
	}
}

// convBenchPaths are the convolution paths this machine can time, one
// after the other so that all see the same load: the GEMM path; the tap
// path wherever it can run (taps: for tuning convTapsMaxUse); the
// Winograd path wherever it can run (wino: for tuning useConvWino); this
// machine's choice among them all (default) and its choice under bfloat16
// autocast (autocast: the BF16 methods); where the direct path's
// kernels run, the paths chosen with them without the tap path (auto: the
// direct one where it pays, as on AVX2 machines before the tap path) and
// with it (new: this machine's default before the Winograd path), and the
// direct path wherever it can run (force: for tuning convDirectMinUse); new with
// the direct input gradient framed (framed) or in row passes (rows), for
// tuning convRowsCost; and where the CPU has AVX-512 BF16, the bfloat16
// autocast methods' GEMM path on every layer (bf16, for tuning
// convBF16Pays).
// KILN_CONV_BENCH_PATHS (comma-separated) picks some of them.
func convBenchPaths() []string {
	paths := []string{"gemm", "taps", "wino", "default", "autocast"}
	if convDirectUsable {
		paths = append(paths, "auto", "new", "force")
	}
	if convBF16Hardware {
		paths = append(paths, "bf16")
	}
	if s := os.Getenv("KILN_CONV_BENCH_PATHS"); s != "" {
		paths = strings.Split(s, ",")
	}
	return paths
}

// benchConv times one direction (fwd, dx or dw) of convolution g with o
// output channels, float32 on one worker or KILN_CONV_BENCH_WORKERS; with
// bf16, through the bfloat16 autocast methods (Conv2dBF16, …).
func benchConv(b *testing.B, g backends.ConvGeometry, o int, dir string, flops float64, count int, bf16 bool) {
	workers := 1 // KILN_CONV_BENCH_WORKERS sets another number
	if v, err := strconv.Atoi(os.Getenv("KILN_CONV_BENCH_WORKERS")); err == nil && v > 0 {
		workers = v
	}
	be := New(workers)
	x := randView(be, backends.Float32, 1, g.N, g.C, g.H, g.W)
	w := randView(be, backends.Float32, 2, o, g.C, g.KH, g.KW)
	dy := randView(be, backends.Float32, 3, g.N, o, g.OutH, g.OutW)
	fwd, dx, dw := be.Conv2d, be.Conv2dInputGrad, be.Conv2dWeightGrad
	if bf16 {
		fwd, dx, dw = be.Conv2dBF16, be.Conv2dInputGradBF16, be.Conv2dWeightGradBF16
	}
	run := func() {
		switch dir {
		case "fwd":
			fwd(dy, x, w, g)
		case "dx":
			dx(x, dy, w, g)
		case "dw":
			dw(w, dy, x, g)
		}
	}
	run() // fill the scratch pools first: a few timed runs must not pay for it
	cpu0 := cpuSeconds()
	for b.Loop() {
		run()
	}
	cpu := cpuSeconds() - cpu0
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	b.ReportMetric(flops*float64(b.N)/cpu/1e9, "cpu-GFLOP/s")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)*float64(count)/1000, "ms/step")
	b.ReportMetric(cpu/float64(b.N)*float64(count)*1000, "cpu-ms/step")
}
