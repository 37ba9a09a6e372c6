package tensor_test

import (
	"errors"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/tensor"
)

// embeddingWithGrad checks the forward values and, through Backward seeded
// with the fixture's loss weights, the weight gradient PyTorch computed.
func embeddingWithGrad(padded bool) nnFixtureFunc {
	return func(in nnIn) nnOut {
		w := in.T("w").ToDevice(in.dev.Autodiff()).RequireGrad()
		var out *tensor.Tensor
		if padded {
			out = tensor.EmbeddingPadded(w, in.T("indices"), 2)
		} else {
			out = tensor.Embedding(w, in.T("indices"))
		}
		grads := out.BackwardWith(in.T("loss_weights"))
		return nnOut{"out": out.Detach(), "w_grad": grads.Get(w)}
	}
}

var nnEmbeddingFixtures = map[string]nnFixtureFunc{
	"embedding":               embeddingWithGrad(false),
	"embedding padding index": embeddingWithGrad(true),
}

func TestNNEmbeddingFixtures(t *testing.T) { nnRunFixtures(t, nnEmbeddingFixtures) }

func TestNNEmbeddingGradients(t *testing.T) {
	idx := func(shape []int, v ...int64) func(dev tensor.Device) *tensor.Tensor {
		return func(dev tensor.Device) *tensor.Tensor { return tensor.FromInt64s(dev, v, shape...) }
	}
	nnRunGradChecks(t, []nnGradCase{
		{"repeated indices", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.Embedding(in[0], in[1]) },
			nnInputs(nnRand(1, 5, 3), idx([]int{2, 3}, 4, 0, 4, 2, 2, 2))},
		{"transposed weight and indices", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.Embedding(in[0].T(), in[1].T())
		}, nnInputs(nnRand(2, 3, 4), idx([]int{2, 3}, 3, 1, 0, 1, 1, 2))},
		{"scalar index", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.Embedding(in[0], in[1]) },
			nnInputs(nnRand(3, 4, 2), func(dev tensor.Device) *tensor.Tensor { return tensor.FromInt64s(dev, []int64{3}).Reshape() })},
		{"int32 indices", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.Embedding(in[0], in[1]) },
			nnInputs(nnRand(4, 4, 2), func(dev tensor.Device) *tensor.Tensor { return tensor.FromInt32s(dev, []int32{1, 3, 1}) })},
	})
}

func TestNNEmbeddingPaddingRowGetsNoGradient(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		w := tensor.Ones(dev.Autodiff(), 4, 2).RequireGrad()
		out := tensor.EmbeddingPadded(w, tensor.FromInt64s(dev, []int64{3, 1, 3, 0}), -1)
		assertValues(t, "forward", out, []int{4, 2}, []float64{1, 1, 1, 1, 1, 1, 1, 1}, 0, 0)
		g := out.Backward().Get(w)
		assertValues(t, "grad", g, []int{4, 2}, []float64{1, 1, 1, 1, 0, 0, 0, 0}, 0, 0)
	})
}

func TestNNEmbeddingIndexOutOfRangeIsDeviceError(t *testing.T) {
	dev := testutil.FreshDevices(t)[1] // the strict one
	tensor.Scope(func() {
		out := tensor.Embedding(tensor.Ones(dev, 3, 2), tensor.FromInt64s(dev, []int64{0, 3}))
		err := tensor.Try(func() { out.Float64s() })
		if !errors.Is(err, tensor.ErrDeviceFailed) {
			t.Errorf("index 3 of 3 rows: error %v, want ErrDeviceFailed", err)
		}
	})
}

func TestNNEmbeddingBadInputs(t *testing.T) {
	nnRunBadInputs(t, []nnBadCase{
		{"weight rank", func(d tensor.Device) { tensor.Embedding(tensor.Zeros(d, 3), tensor.FromInt64s(d, []int64{0})) },
			tensor.ErrShape, "tensor.Embedding: weight [3] must be [num_embeddings, embedding_dim]"},
		{"float indices", func(d tensor.Device) { tensor.Embedding(tensor.Zeros(d, 3, 2), tensor.Zeros(d, 2)) },
			tensor.ErrDType, "indices [2] are float32"},
		{"bool indices", func(d tensor.Device) {
			tensor.Embedding(tensor.Zeros(d, 3, 2), tensor.FromBools(d, []bool{true}))
		}, tensor.ErrDType, "are bool"},
		{"padding index out of range", func(d tensor.Device) {
			tensor.EmbeddingPadded(tensor.Zeros(d, 3, 2), tensor.FromInt64s(d, []int64{0}), 3)
		}, tensor.ErrArgument, "tensor.EmbeddingPadded: padding index 3 out of range for weight [3 2]"},
	})
}
