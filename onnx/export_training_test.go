package onnx_test

import (
	"errors"
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// TestExportBatchNormTraining exports batch normalisation in training mode
// (ExportOptions.Training): the graph normalises by the batch's own
// statistics, and its outputs equal Kiln's training-mode outputs on other
// batches and batch sizes. The traced passes leave the running statistics
// as they were.
func TestExportBatchNormTraining(t *testing.T) {
	dev := tensor.CPU()
	dev.Seed(5)
	module := func(m nn.Module) func(xs []*tensor.Tensor) *tensor.Tensor {
		return func(xs []*tensor.Tensor) *tensor.Tensor { return m.Forward(xs[0]) }
	}
	randn := func(shape ...int) func(n int) []*tensor.Tensor {
		return func(n int) []*tensor.Tensor {
			return []*tensor.Tensor{tensor.Randn(tensor.CPU(), append([]int{n}, shape...)...).MulScalar(2).AddScalar(0.5)}
		}
	}
	bn1 := nn.NewBatchNorm1d(dev, 4)
	bn1seq := nn.NewBatchNorm1d(dev, 3)
	bn2 := nn.NewBatchNorm2d(dev, 3)
	noAffine := nn.NewBatchNorm1d(dev, 4, nn.BatchNormConfig{NoAffine: true, NoTrackRunningStats: true})
	net := nn.NewSequential(nn.NewConv2d(dev, 2, 3, 3), nn.NewBatchNorm2d(dev, 3), nn.ReLU{}, nn.NewFlatten(), nn.NewLinear(dev, 12, 4), nn.NewBatchNorm1d(dev, 4))
	// Running statistics away from their initial values, to show they are
	// not what the graph uses.
	tensor.NoScope(func() {
		bn1.RunningMean.Assign(tensor.Full(dev, 3, 4))
		bn1.RunningVar.Assign(tensor.Full(dev, 9, 4))
	})
	checkFunctionExports(t, []functionCase{
		{"BatchNorm1d [N C]", module(bn1), bn1, randn(4), []string{"ReduceMean"}, true, 0},
		{"BatchNorm1d [N C L]", module(bn1seq), bn1seq, randn(3, 5), []string{"ReduceMean"}, true, 0},
		{"BatchNorm2d", module(bn2), bn2, randn(3, 4, 4), []string{"ReduceMean"}, true, 0},
		{"BatchNorm1d no affine, no running statistics", module(noAffine), noAffine, randn(4), nil, true, 0},
		{"Conv2d BatchNorm2d Linear BatchNorm1d", module(net), net, randn(2, 4, 4), []string{"Conv", "ReduceMean"}, true, 0},
	}, 1e-5, []int{4, 6})
}

// TestExportTrainingKeepsState checks that a training-mode export leaves
// the running statistics and the mode as they were, and that a random
// layer (dropout) in training mode is refused.
func TestExportTrainingKeepsState(t *testing.T) {
	dev := tensor.CPU()
	dev.Seed(6)
	bn := nn.NewBatchNorm1d(dev, 3)
	defer nn.Release(bn)
	nn.Eval(bn)
	tensor.NoScope(func() { bn.RunningMean.Assign(tensor.Full(dev, 2, 3)) })
	fn := func(xs []*tensor.Tensor) *tensor.Tensor { return bn.Forward(xs[0]) }
	if _, err := onnx.TraceFunction(fn, bn, []*tensor.Tensor{tensor.Randn(dev, 5, 3)}, onnx.ExportOptions{Training: true}); err != nil {
		t.Fatal(err)
	}
	if nn.IsTraining(bn) {
		t.Error("the module is left in training mode; it was in evaluation mode")
	}
	if got := bn.RunningMean.Float64s(); got[0] != 2 || got[1] != 2 || got[2] != 2 {
		t.Errorf("running mean %v after a training-mode export, want it unchanged [2 2 2]", got)
	}
	if got := bn.NumBatchesTracked.Int64s(); got[0] != 0 {
		t.Errorf("batches tracked %v after a training-mode export, want 0", got)
	}
	drop := nn.NewSequential(nn.NewLinear(dev, 3, 3), nn.NewDropout(0.5))
	defer nn.Release(drop)
	_, err := onnx.TraceFunction(func(xs []*tensor.Tensor) *tensor.Tensor { return drop.Forward(xs[0]) }, drop,
		[]*tensor.Tensor{tensor.Randn(dev, 4, 3)}, onnx.ExportOptions{Training: true})
	if !errors.Is(err, onnx.ErrExport) {
		t.Errorf("dropout in training mode: %v, want ErrExport", err)
	}
}
