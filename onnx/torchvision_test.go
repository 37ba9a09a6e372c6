package onnx_test

import (
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// torchvisionModels runs testdata/gen_torchvision.py into a temporary
// folder and returns it. Without python3-torchvision the test is skipped,
// unless KILN_REQUIRE_TORCHVISION is set (make test sets it, and installs
// the package).
func torchvisionModels(t *testing.T) string {
	t.Helper()
	if exec.Command("/usr/bin/python3", "-c", "import torchvision").Run() != nil {
		if os.Getenv("KILN_REQUIRE_TORCHVISION") != "" {
			t.Fatal("python3-torchvision is not installed (make deps installs it)")
		}
		t.Skip("python3-torchvision is not installed")
	}
	dir := t.TempDir()
	if out, err := exec.Command("/usr/bin/python3", "testdata/gen_torchvision.py", dir).CombinedOutput(); err != nil {
		t.Fatalf("gen_torchvision.py: %v\n%s", err, out)
	}
	return dir
}

func readFloat32s(t *testing.T, path string) []float64 {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float64, len(raw)/4)
	for i := range v {
		v[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
	}
	return v
}

// TestTorchvisionModels imports torchvision's ResNet-18, MobileNetV2 and
// SqueezeNet 1.1 as torch.onnx.export writes them (opset 13, dynamic batch)
// and compares Kiln's logits with PyTorch's for the same input (within
// 1e-4). ResNet-18
// is then fine-tuned in Kiln for a few steps (the loss falls), exported
// again, checked by onnx.checker where installed, and re-imported: the
// re-imported model gives the fine-tuned model's outputs.
func TestTorchvisionModels(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("builds three torchvision models in PyTorch (the plain run checks them; under the race detector they take minutes)")
	}
	dir := torchvisionModels(t)
	for _, name := range []string{"resnet18", "mobilenet_v2", "squeezenet1_1"} {
		t.Run(name, func(t *testing.T) {
			m, err := onnx.Load(filepath.Join(dir, name+".onnx"), tensor.CPU())
			if err != nil {
				t.Fatal(err)
			}
			defer nn.Release(m)
			want := readFloat32s(t, filepath.Join(dir, name+".output.bin"))
			tensor.Scope(func() {
				x := tensor.FromFloat64s(tensor.CPU(), readFloat32s(t, filepath.Join(dir, name+".input.bin")), 2, 3, 224, 224).To(tensor.Float32)
				got := m.Forward(x)
				worst, scale := 0.0, 0.0
				for i, v := range got.Float64s() {
					worst, scale = math.Max(worst, math.Abs(v-want[i])), math.Max(scale, math.Abs(want[i]))
				}
				t.Logf("largest difference from PyTorch's logits %.2e (largest logit %.2f)", worst, scale)
				testutil.AssertValues(t, name, got, []int{2, 1000}, want, 0, 1e-4)
			})
		})
	}
	t.Run("resnet18 fine-tuned and exported again", func(t *testing.T) {
		adev := tensor.CPU().Autodiff()
		m, err := onnx.Load(filepath.Join(dir, "resnet18.onnx"), adev)
		if err != nil {
			t.Fatal(err)
		}
		defer nn.Release(m)
		// Fine-tune the classifier, as one does on a pretrained backbone
		// (torch.onnx.export folded the batch norms into the convolutions).
		nn.Eval(m)
		nn.Freeze(m, "**")
		if n := nn.Unfreeze(m, "fc.*"); n != 2 {
			t.Fatalf("unfroze %d parameters, want fc.weight and fc.bias", n)
		}
		opt := optim.NewAdamW(optim.AdamWConfig{LR: 1e-3})
		defer opt.ZeroState()
		adev.Seed(7)
		x := tensor.Randn(tensor.CPU(), 2, 3, 224, 224).Keep()
		defer x.Release()
		y := tensor.FromInt64s(tensor.CPU(), []int64{3, 1}, 2).Keep()
		defer y.Release()
		var first, last float64
		for step := range 8 {
			tensor.Scope(func() {
				loss := nn.CrossEntropy(m.Forward(x.ToDevice(adev)), y.ToDevice(adev), nn.CrossEntropyOptions{})
				opt.Step(m, loss.Backward())
				if step == 0 {
					first = loss.Item()
				}
				last = loss.Item()
			})
		}
		t.Logf("cross-entropy over 8 steps: %.3f → %.3f", first, last)
		if !(last < first/2) {
			t.Fatalf("fine-tuning did not lower the loss enough: %.4f → %.4f", first, last)
		}
		path := filepath.Join(t.TempDir(), "resnet18-tuned.onnx")
		if err := onnx.Export(m, x, path); err != nil {
			t.Fatal(err)
		}
		if pythonONNX(t) {
			checkModel(t, path)
		}
		back, err := onnx.Load(path, tensor.CPU())
		if err != nil {
			t.Fatal(err)
		}
		defer nn.Release(back)
		tensor.Scope(func() {
			want := m.Forward(x.ToDevice(adev))
			got := back.Forward(x)
			testutil.AssertValues(t, "re-imported", got, want.Shape(), want.Float64s(), 1e-4, 1e-4)
		})
	})
}
