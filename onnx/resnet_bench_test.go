package onnx_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// BenchmarkResNet18 imports torchvision's ResNet-18 (written by
// testdata/gen_torchvision.py --bench, which also prints PyTorch's times for
// the same model and batches) and times Kiln's import (Load) and inference
// of batch 1 and 32 on the CPU device:
//
//	go test -run '^$' -bench ResNet18 -benchtime 5x ./onnx/
//
// Pair it with the script's figures from the same run for the ratio.
func BenchmarkResNet18(b *testing.B) {
	if exec.Command("/usr/bin/python3", "-c", "import torchvision").Run() != nil {
		b.Skip("python3-torchvision is not installed")
	}
	dir := b.TempDir()
	out, err := exec.Command("/usr/bin/python3", "testdata/gen_torchvision.py", dir, "--bench", "--rounds", "5").CombinedOutput()
	if err != nil {
		b.Fatalf("gen_torchvision.py: %v\n%s", err, out)
	}
	b.Logf("PyTorch 1.13 on this machine:\n%s", out)
	path := filepath.Join(dir, "resnet18.onnx")
	b.Run("load", func(b *testing.B) {
		for b.Loop() {
			m, err := onnx.Load(path, tensor.CPU())
			if err != nil {
				b.Fatal(err)
			}
			nn.Release(m)
		}
	})
	m, err := onnx.Load(path, tensor.CPU())
	if err != nil {
		b.Fatal(err)
	}
	defer nn.Release(m)
	for _, batch := range []int{1, 32} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			x := tensor.Randn(tensor.CPU(), batch, 3, 224, 224).To(tensor.Float32).Keep()
			defer x.Release()
			tensor.Scope(func() { m.Forward(x).Float32s() }) // warm the buffer pools
			for b.Loop() {
				tensor.Scope(func() { m.Forward(x).Float32s() })
			}
			b.ReportMetric(float64(batch)*float64(b.N)/b.Elapsed().Seconds(), "images/s")
		})
	}
}
