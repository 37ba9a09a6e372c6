package nn_test

import (
	"testing"
	"time"

	"github.com/kiln-ml/kiln/internal/benchpair"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// basicBlock is torchvision's ResNet BasicBlock: two 3×3 convolutions with
// batch norm, and a 1×1 strided convolution with batch norm on the shortcut
// where the shape changes.
type basicBlock struct {
	Conv1 *nn.Conv2d      `kiln:"conv1"`
	BN1   *nn.BatchNorm2d `kiln:"bn1"`
	Conv2 *nn.Conv2d      `kiln:"conv2"`
	BN2   *nn.BatchNorm2d `kiln:"bn2"`
	Down  *nn.Conv2d      `kiln:"downsample.0"`
	DownN *nn.BatchNorm2d `kiln:"downsample.1"`
}

func newBasicBlock(dev tensor.Device, in, out, stride int) *basicBlock {
	b := &basicBlock{
		Conv1: nn.NewConv2d(dev, in, out, 3, nn.ConvConfig{Stride: []int{stride}, Padding: []int{1}, NoBias: true}),
		BN1:   nn.NewBatchNorm2d(dev, out),
		Conv2: nn.NewConv2d(dev, out, out, 3, nn.ConvConfig{Padding: []int{1}, NoBias: true}),
		BN2:   nn.NewBatchNorm2d(dev, out),
	}
	if stride != 1 || in != out {
		b.Down = nn.NewConv2d(dev, in, out, 1, nn.ConvConfig{Stride: []int{stride}, NoBias: true})
		b.DownN = nn.NewBatchNorm2d(dev, out)
	}
	return b
}

func (b *basicBlock) Forward(x *tensor.Tensor) *tensor.Tensor {
	y := b.BN1.Forward(b.Conv1.Forward(x)).Relu()
	y = b.BN2.Forward(b.Conv2.Forward(y))
	short := x
	if b.Down != nil {
		short = b.DownN.Forward(b.Down.Forward(x))
	}
	return y.Add(short).Relu()
}

// resnet18 is torchvision's resnet18: a 7×7 stride-2 stem with max
// pooling, four stages of two BasicBlocks (64, 128, 256, 512 channels),
// global average pooling and a linear classifier.
type resnet18 struct {
	Conv1  *nn.Conv2d      `kiln:"conv1"`
	BN1    *nn.BatchNorm2d `kiln:"bn1"`
	Blocks []*basicBlock   `kiln:"layers"`
	FC     *nn.Linear      `kiln:"fc"`
}

func newResNet18(dev tensor.Device, classes int) *resnet18 {
	m := &resnet18{
		Conv1: nn.NewConv2d(dev, 3, 64, 7, nn.ConvConfig{Stride: []int{2}, Padding: []int{3}, NoBias: true}),
		BN1:   nn.NewBatchNorm2d(dev, 64),
		FC:    nn.NewLinear(dev, 512, classes),
	}
	in := 64
	for i, out := range []int{64, 128, 256, 512} {
		stride := 2
		if i == 0 {
			stride = 1
		}
		m.Blocks = append(m.Blocks, newBasicBlock(dev, in, out, stride), newBasicBlock(dev, out, out, 1))
		in = out
	}
	return m
}

func (m *resnet18) Forward(x *tensor.Tensor) *tensor.Tensor {
	x = m.BN1.Forward(m.Conv1.Forward(x)).Relu()
	x = nn.NewMaxPool2d(3, tensor.PoolConfig{Stride: []int{2}, Padding: []int{1}}).Forward(x)
	for _, b := range m.Blocks {
		x = b.Forward(x)
	}
	x = nn.NewAdaptiveAvgPool2d(1, 1).Forward(x)
	return m.FC.Forward(x.Reshape(x.Shape()[0], -1))
}

// resnetTrainer is a ResNet-18 (1000 classes) with its SGD optimizer
// (momentum 0.9) and a fixed batch of 32 64×64 images and labels, for the
// training-step benchmarks.
type resnetTrainer struct {
	m   *resnet18
	opt *optim.SGD
	x   *tensor.Tensor
	y   *tensor.Tensor
}

// newResnetTrainer builds a resnetTrainer on dev (an Autodiff view), seeded.
func newResnetTrainer(dev tensor.Device) *resnetTrainer {
	dev.Seed(1)
	return &resnetTrainer{m: newResNet18(dev, 1000), opt: optim.NewSGD(optim.SGDConfig{LR: 0.01, Momentum: 0.9}),
		x: tensor.Randn(dev.Inner(), 32, 3, 64, 64).Keep(), y: tensor.RandInt(dev.Inner(), 0, 1000, 32).Keep()}
}

// step takes one training step in a Scope: forward in training mode (batch
// statistics), cross-entropy, backward and the SGD update.
func (r *resnetTrainer) step() {
	tensor.Scope(func() {
		loss := nn.CrossEntropy(r.m.Forward(r.x), r.y, nn.CrossEntropyOptions{})
		r.opt.Step(r.m, loss.Backward())
		loss.Item()
	})
}

// release frees the model, the optimizer state and the batch.
func (r *resnetTrainer) release() {
	nn.Release(r.m)
	r.opt.ZeroState()
	r.x.Release()
	r.y.Release()
}

// BenchmarkResNet18TrainStep times training steps of torchvision's
// ResNet-18 layout (1000 classes) on 64×64 images in batches of 32:
// forward in training mode (batch statistics), cross-entropy, backward and
// an SGD update with momentum, each step in a Scope; it reports images/s.
// scripts/bench_compare.py times torchvision's resnet18 the same way.
func BenchmarkResNet18TrainStep(b *testing.B) {
	benchmarkResNet18(b, tensor.CPU())
}

// BenchmarkResNet18TrainStepAutocast is BenchmarkResNet18TrainStep with
// the model built on tensor.CPU().Autocast(tensor.BFloat16): the
// classifier's product and, where the CPU has AVX-512 BF16, the
// convolutions with 32 input and 64 output channels or more with bfloat16
// products, the rest in float32 (bench-compare's "ResNet-18 bf16" row).
func BenchmarkResNet18TrainStepAutocast(b *testing.B) {
	benchmarkResNet18(b, tensor.CPU().Autocast(tensor.BFloat16))
}

// benchmarkResNet18 times ResNet-18 training steps on dev.
func benchmarkResNet18(b *testing.B, dev tensor.Device) {
	r := newResnetTrainer(dev.Autodiff())
	defer r.release()
	r.step() // optimizer state, buffer pools
	b.ResetTimer()
	for b.Loop() {
		r.step()
	}
	b.ReportMetric(32*float64(b.N)/b.Elapsed().Seconds(), "images/s")
}

// BenchmarkResNet18TrainStepBF16 times BenchmarkResNet18TrainStep's step
// in float32 and with bfloat16 autocast (the model built on
// tensor.CPU().Autocast(tensor.BFloat16): the classifier's product in
// bfloat16, VDPBF16PS where the CPU has it, and the convolutions' tensors
// in float32, with bfloat16 products in the wide layers where the CPU has
// AVX-512 BF16, as autocast runs them on the CPU), the two alternating
// (internal/benchpair: best and median ms of each, and fp32/bf16 the ratio
// of the medians, above 1: autocast faster). Run with -benchtime 6x or
// more.
func BenchmarkResNet18TrainStepBF16(b *testing.B) {
	f32 := newResnetTrainer(tensor.CPU().Autodiff())
	defer f32.release()
	bf16 := newResnetTrainer(tensor.CPU().Autocast(tensor.BFloat16).Autodiff())
	defer bf16.release()
	benchpair.Run(b, "bf16", "fp32", 1, func(on bool) time.Duration {
		r := f32
		if on {
			r = bf16
		}
		start := time.Now()
		r.step()
		return time.Since(start)
	})
}
