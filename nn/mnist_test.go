package nn_test

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// MNIST training, end to end: real data, nn layers, cross-entropy,
// AdamW, Scopes and NoGrad evaluation. The default tests train on a
// subset and check a loose accuracy bound; mnist_long_test.go (build tag
// long, `make test-long`) trains on everything and checks the targets.

// mnistRun describes one training run.
type mnistRun struct {
	model       func(dev tensor.Device) nn.Module
	nchw        bool    // the model takes [B, 1, 28, 28] instead of [B, 784]
	train, test int     // how many images of each split to use (their first ones)
	epochs      int     // passes over the training images
	lr          float64 // AdamW's learning rate (its peak with cosine)
	cosine      bool    // anneal the learning rate to 0 over the run, step by step
	minAccuracy float64 // the test accuracy the run must reach
}

// mnistMLP is 784-256-128-10 with ReLU.
func mnistMLP(dev tensor.Device) nn.Module {
	return nn.NewSequential(
		nn.NewLinear(dev, 784, 256), nn.ReLU{},
		nn.NewLinear(dev, 256, 128), nn.ReLU{},
		nn.NewLinear(dev, 128, 10),
	)
}

// mnistCNN is conv 1→16 3×3, ReLU, max-pool 2, conv 16→32 3×3, ReLU,
// max-pool 2, flatten (32·5·5 = 800), linear 800→10.
func mnistCNN(dev tensor.Device) nn.Module {
	return nn.NewSequential(
		nn.NewConv2d(dev, 1, 16, 3), nn.ReLU{}, nn.NewMaxPool2d(2),
		nn.NewConv2d(dev, 16, 32, 3), nn.ReLU{}, nn.NewMaxPool2d(2),
		nn.NewFlatten(),
		nn.NewLinear(dev, 800, 10),
	)
}

const (
	mnistBatch     = 128
	mnistEvalBatch = 1000
	mnistSeed      = 1
)

var mnistOnce struct {
	sync.Once
	train, test *data.MNIST
	err         error
}

// loadMNIST returns the real MNIST splits, loaded once per test binary.
func loadMNIST(t testing.TB) (train, test *data.MNIST) {
	t.Helper()
	mnistOnce.Do(func() {
		dir, err := data.MNISTDir()
		if err == nil {
			mnistOnce.train, mnistOnce.test, err = data.LoadMNIST(dir)
		}
		mnistOnce.err = err
	})
	if mnistOnce.err != nil {
		t.Fatal(mnistOnce.err)
	}
	return mnistOnce.train, mnistOnce.test
}

// trainMNIST runs r on dev: batches of 128 reshuffled each epoch by a
// seeded permutation, each step inside a Scope, AdamW at lr 1e-3, the
// test accuracy measured on dev.NoGrad() after each epoch. It fails the
// test when the final accuracy is below r.minAccuracy or when the live
// memory after a step differs from the live memory after the first step
// (the only step that may allocate lasting state: the optimizer's
// moments). It returns the final accuracy.
func trainMNIST(t *testing.T, dev tensor.Device, r mnistRun) float64 {
	fullTrain, fullTest := loadMNIST(t)
	train, test := fullTrain.Subset(r.train), fullTest.Subset(r.test)
	train.NCHW, test.NCHW = r.nchw, r.nchw
	train.Standardize, test.Standardize = true, true
	adev := dev.Autodiff()
	adev.Seed(mnistSeed)
	model := r.model(adev)
	defer nn.Release(model)
	opt := optim.NewAdamW(optim.AdamWConfig{LR: r.lr})
	defer opt.ZeroState()
	steps := r.epochs * ((train.Len() + mnistBatch - 1) / mnistBatch)
	sched := optim.NewScheduler(opt, optim.NewConstantLR(r.lr, 1, 0))
	if r.cosine {
		sched = optim.NewScheduler(opt, optim.NewCosineAnnealingLR(r.lr, steps, 0))
	}
	rng := rand.New(rand.NewPCG(mnistSeed, 0))

	var baseline int64 // live bytes after the first step
	step := 0
	accuracy := 0.0
	for epoch := 1; epoch <= r.epochs; epoch++ {
		perm := rng.Perm(train.Len())
		start := time.Now()
		lossSum, batches := 0.0, 0
		for b := 0; b < len(perm); b += mnistBatch {
			tensor.Scope(func() {
				x, y := train.Batch(perm[b:min(b+mnistBatch, len(perm))], adev)
				loss := nn.CrossEntropy(model.Forward(x), y, nn.CrossEntropyOptions{})
				opt.Step(model, loss.Backward())
				lossSum += loss.Item()
				batches++
			})
			sched.Step()
			live := dev.MemoryStats().LiveBytes
			if step == 0 {
				baseline = live
			} else if live != baseline {
				t.Fatalf("epoch %d step %d: %d live bytes, %d after the first step: memory is not flat", epoch, step,
					live, baseline)
			}
			step++
		}
		trainTime := time.Since(start)
		start = time.Now()
		accuracy = mnistAccuracy(model, test, dev.NoGrad())
		if live := dev.MemoryStats().LiveBytes; live != baseline {
			t.Fatalf("epoch %d: %d live bytes after evaluation, %d after the first step", epoch, live, baseline)
		}
		t.Logf("%s: epoch %d: %d steps on %d images in %v (%.0f images/s), mean loss %.4f; test accuracy %.2f%% "+
			"on %d images (evaluated in %v)", dev, epoch, batches, train.Len(), trainTime.Round(time.Millisecond),
			float64(train.Len())/trainTime.Seconds(), lossSum/float64(batches), 100*accuracy, test.Len(),
			time.Since(start).Round(time.Millisecond))
	}
	if err := dev.Sync(); err != nil {
		t.Fatal(err)
	}
	if accuracy < r.minAccuracy {
		t.Errorf("test accuracy %.2f%% after %d epochs, want at least %.2f%%", 100*accuracy, r.epochs,
			100*r.minAccuracy)
	}
	return accuracy
}

// mnistAccuracy returns the fraction of test's images that model
// classifies correctly, computed on dev (a NoGrad view: no graph).
func mnistAccuracy(model nn.Module, test *data.MNIST, dev tensor.Device) float64 {
	correct := 0
	indices := make([]int, 0, mnistEvalBatch)
	for b := 0; b < test.Len(); b += mnistEvalBatch {
		indices = indices[:0]
		for i := b; i < min(b+mnistEvalBatch, test.Len()); i++ {
			indices = append(indices, i)
		}
		tensor.Scope(func() {
			x, y := test.Batch(indices, dev)
			pred, want := model.Forward(x).Argmax(1).Int64s(), y.Int64s()
			for i := range pred {
				if pred[i] == want[i] {
					correct++
				}
			}
		})
	}
	return float64(correct) / float64(test.Len())
}

// The subset runs train on the first 6000 training images for one epoch
// (47 steps) and test on the first 1000 test images. Their bound, 80%,
// sits well below what the recipe reaches there (PyTorch 1.13, same
// models, optimizer, batches and standardised inputs, three seeds: MLP
// 86.1–87.0%, CNN 85.5–86.0%; Kiln at seed 1: 84.7% and 86.8%), so that
// the seed and kernel rounding cannot fail it, and far above what broken
// gradients, optimizer or data give (10%, chance): the subset proves that
// learning happens, the long runs how well.
func TestTrainMNISTMLPSubset(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		trainMNIST(t, dev, mnistRun{model: mnistMLP, train: 6000, test: 1000, epochs: 1, lr: 1e-3, minAccuracy: 0.80})
	})
}

func TestTrainMNISTCNNSubset(t *testing.T) {
	if raceEnabled {
		t.Skip("the plain run trains it; under the race detector it takes over three minutes, and TestTrainMNISTMLPSubset already trains through the same thread pool there")
	}
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		trainMNIST(t, dev, mnistRun{model: mnistCNN, nchw: true, train: 6000, test: 1000, epochs: 1,
			lr: 1e-3, minAccuracy: 0.80})
	})
}
