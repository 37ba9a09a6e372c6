package onnx_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// openCVRun runs the ONNX model at path in OpenCV's dnn module on the
// float32 input x and returns its first output's values.
func openCVRun(t *testing.T, path string, x *tensor.Tensor) []float64 {
	t.Helper()
	in := filepath.Join(t.TempDir(), "input.bin")
	out := in + ".out"
	raw := make([]byte, 4*x.NumElements())
	for i, v := range x.Float32s() {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	if err := os.WriteFile(in, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	shape := fmt.Sprint(x.Shape())
	script := `import sys, numpy as np, cv2
path, inp, out, shape = sys.argv[1], sys.argv[2], sys.argv[3], [int(v) for v in sys.argv[4].strip("[]").split()]
net = cv2.dnn.readNetFromONNX(path)
net.setInput(np.fromfile(inp, dtype="<f4").reshape(shape))
net.forward().astype("<f4").tofile(out)`
	if o, err := exec.Command("/usr/bin/python3", "-c", script, path, in, out, shape).CombinedOutput(); err != nil {
		t.Fatalf("OpenCV: %v\n%s", err, o)
	}
	return readFloat32s(t, out)
}

// TestExportOpenCV runs models Kiln exports in a second, independent ONNX
// runtime, OpenCV's dnn module (python3-opencv), and compares its outputs
// with Kiln's: a CNN (convolutions, batch norm with running statistics,
// pooling, linear, softmax) and an MLP with the activations OpenCV knows.
// (OpenCV 4.6 refuses 1-D convolutions whatever their producer.) Skipped without python3-opencv unless
// KILN_REQUIRE_OPENCV is set (make test sets it and installs the package).
func TestExportOpenCV(t *testing.T) {
	if exec.Command("/usr/bin/python3", "-c", "import cv2").Run() != nil {
		if os.Getenv("KILN_REQUIRE_OPENCV") != "" {
			t.Fatal("python3-opencv is not installed (make deps installs it)")
		}
		t.Skip("python3-opencv is not installed")
	}
	dev := tensor.CPU().Autodiff()
	dev.Seed(17)
	bn := nn.NewBatchNorm2d(dev, 4)
	nn.Train(bn)
	tensor.Scope(func() { bn.Forward(tensor.Randn(dev, 8, 4, 6, 6).MulScalar(1.5).AddScalar(0.5)) })
	cases := []struct {
		name  string
		model nn.Module
		shape []int
	}{
		{"cnn", nn.NewSequential(nn.NewConv2d(dev, 3, 4, 3, nn.ConvConfig{Padding: []int{1}}), bn, nn.ReLU{}, nn.NewMaxPool2d(2),
			nn.NewConv2d(dev, 4, 6, 3), nn.Sigmoid{}, nn.NewAvgPool2d(2), nn.NewFlatten(), nn.NewLinear(dev, 6, 5), nn.NewSoftmax(-1)), []int{2, 3, 8, 8}},
		{"mlp", nn.NewSequential(nn.NewLinear(dev, 7, 16), nn.Tanh{}, nn.NewLinear(dev, 16, 16), nn.NewLeakyReLU(0.1),
			nn.NewLinear(dev, 16, 16), nn.NewELU(1), nn.NewLinear(dev, 16, 3)), []int{4, 7}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer nn.Release(c.model)
			nn.Eval(c.model)
			path := filepath.Join(t.TempDir(), c.name+".onnx")
			x := tensor.Randn(tensor.CPU(), c.shape...).Keep()
			defer x.Release()
			if err := onnx.Export(c.model, x, path); err != nil {
				t.Fatal(err)
			}
			tensor.Scope(func() {
				want := c.model.Forward(x.ToDevice(dev))
				got := openCVRun(t, path, x)
				testutil.AssertValues(t, "OpenCV", want, want.Shape(), got, 1e-4, 1e-4)
			})
		})
	}
}
