package onnx_test

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// exportCNN is the MNIST CNN of nn's tests: conv 1→8 3×3, ReLU, max-pool
// 2, conv 8→16 3×3, ReLU, max-pool 2, flatten, linear 400→10, log-softmax.
type exportCNN struct {
	Conv1, Conv2 *nn.Conv2d
	FC           *nn.Linear
}

func (m *exportCNN) Forward(x *tensor.Tensor) *tensor.Tensor {
	pool := tensor.PoolConfig{Kernel: []int{2}}
	x, _ = tensor.MaxPool2d(m.Conv1.Forward(x).Relu(), pool)
	x, _ = tensor.MaxPool2d(m.Conv2.Forward(x).Relu(), pool)
	return m.FC.Forward(x.Flatten(1, -1)).LogSoftmax(1)
}

// TestExportRoundTrip trains the MNIST CNN in Kiln for a few steps on real
// MNIST digits, exports it, checks the file with onnx.checker (where
// python3-onnx is installed) and imports it back: the outputs are the
// same, for the traced batch size and another.
func TestExportRoundTrip(t *testing.T) {
	dir, err := data.MNISTDir()
	if err != nil {
		t.Skipf("no MNIST data: %v", err)
	}
	train, _, err := data.LoadMNIST(dir)
	if err != nil {
		t.Fatal(err)
	}
	train = train.Subset(640)
	train.NCHW, train.Standardize = true, true
	dev := tensor.CPU()
	adev := dev.Autodiff()
	adev.Seed(3)
	model := &exportCNN{Conv1: nn.NewConv2d(adev, 1, 8, 3), Conv2: nn.NewConv2d(adev, 8, 16, 3), FC: nn.NewLinear(adev, 400, 10)}
	defer nn.Release(model)
	opt := optim.NewAdamW(optim.AdamWConfig{LR: 2e-3})
	defer opt.ZeroState()
	rng := rand.New(rand.NewPCG(3, 0))
	perm := rng.Perm(train.Len())
	var first, last float64
	for b := 0; b < len(perm); b += 64 {
		tensor.Scope(func() {
			x, y := train.Batch(perm[b:b+64], adev)
			loss := nn.CrossEntropy(model.Forward(x), y, nn.CrossEntropyOptions{})
			opt.Step(model, loss.Backward())
			if b == 0 {
				first = loss.Item()
			}
			last = loss.Item()
		})
	}
	if !(last < first) {
		t.Fatalf("training did not lower the loss: %v → %v", first, last)
	}

	path := filepath.Join(t.TempDir(), "cnn.onnx")
	tensor.Scope(func() {
		x, _ := train.Batch([]int{0, 1, 2, 3, 4}, dev)
		if err := onnx.Export(model, x, path); err != nil {
			t.Fatal(err)
		}
	})
	if pythonONNX(t) {
		if opset, _ := checkModel(t, path); opset != "17" {
			t.Fatalf("onnx.checker: opset %s, want 17", opset)
		}
	} else {
		t.Log("python3-onnx is not installed: onnx.checker.check_model skipped")
	}
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		back, err := onnx.Load(path, dev)
		if err != nil {
			t.Fatal(err)
		}
		defer nn.Release(back)
		names := []string{}
		for _, p := range nn.Params(back) {
			names = append(names, p.Name)
		}
		if got := strings.Join(names, " "); got != "Conv1.bias Conv1.weight Conv2.bias Conv2.weight FC.bias FC.weight" {
			t.Errorf("imported params %s", got)
		}
		for _, n := range []int{5, 3} {
			idx := make([]int, n)
			for i := range idx {
				idx[i] = 10 + i
			}
			x, _ := train.Batch(idx, dev)
			want := model.Forward(x.ToDevice(tensor.CPU())).Float64s()
			got := back.Forward(x)
			testutil.AssertValues(t, "re-imported", got, []int{n, 10}, want, 0, 0)
		}
	})
}

func TestExportRefuses(t *testing.T) {
	dev := tensor.CPU()
	cases := []struct {
		name  string
		model nn.Module
		says  string
	}{
		{"an op without translation", &fnModel{f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { return x.Cumprod(-1) }},
			"no ONNX translation for ops: cumprod (1)"},
		{"circular padding (ONNX's wrap comes with opset 19)", &fnModel{f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor {
			return x.Pad([]int{1, 1}, "circular", 0)
		}}, "no ONNX translation for ops: pad (circular) (1)"},
		{"a constant released before export reads it", releasedConstant{}, "float32 constant of shape [4 3] that the forward pass built"},
		{"a mask computed from the input's values read to the host", &fnModel{f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor {
			// (A comparison of x itself is traced: TestExportComparisons.)
			host := tensor.FromFloat32s(x.Device().Inner(), x.Float32s(), x.Shape()...)
			return tensor.Where(host.GtScalar(0), x, x.Neg())
		}}, "bool constant of shape [4 3] that the forward pass computes from the input's values"},
	}
	for _, c := range cases {
		err := onnx.Export(c.model, tensor.Ones(dev, 4, 3), filepath.Join(t.TempDir(), "m.onnx"))
		if !errors.Is(err, onnx.ErrExport) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: err = %v, want ErrExport saying %q", c.name, err, c.says)
		}
	}
}

// releasedConstant multiplies by a constant it releases before returning:
// Export cannot read it any more.
type releasedConstant struct{}

func (releasedConstant) Forward(x *tensor.Tensor) *tensor.Tensor {
	c := tensor.Ones(x.Device().Inner(), x.Shape()...)
	y := x.Mul(c)
	c.Release()
	return y
}
