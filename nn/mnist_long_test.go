//go:build long

package nn_test

import (
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// The full runs (`make test-long`): all 60000 training images for two
// epochs, accuracy on all 10000 test images, on the CPU.

func TestTrainMNISTMLP(t *testing.T) {
	trainMNIST(t, tensor.CPU(), mnistRun{model: mnistMLP, train: 60000, test: 10000, epochs: 2, lr: 3e-3, cosine: true,
		minAccuracy: 0.97})
}

func TestTrainMNISTCNN(t *testing.T) {
	trainMNIST(t, tensor.CPU(), mnistRun{model: mnistCNN, nchw: true, train: 60000, test: 10000, epochs: 2,
		lr: 3e-3, cosine: true, minAccuracy: 0.98})
}
