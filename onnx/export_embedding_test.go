package onnx_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// tokenModel embeds token ids, runs a transformer encoder over them and
// maps each position to logits.
type tokenModel struct {
	Embed   *nn.Embedding
	Encoder *nn.TransformerEncoder
	Head    *nn.Linear
}

func (m *tokenModel) Forward(ids *tensor.Tensor) *tensor.Tensor {
	return m.Head.Forward(m.Encoder.Forward(m.Embed.Forward(ids)))
}

// tokens returns batch×length ids in [0, vocab) of dtype dt.
func tokens(vocab int, dt tensor.DType, batch, length int) *tensor.Tensor {
	ids := tensor.RandInt(tensor.CPU(), 0, int64(vocab), batch, length)
	if dt != tensor.Int64 {
		return ids.To(dt)
	}
	return ids
}

// TestExportEmbedding exports models whose first layer is an embedding of
// integer token ids (int64 and int32 graph inputs), alone, followed by a
// linear layer, and in front of a transformer encoder, and checks the
// re-imported models' outputs on other ids and batch sizes.
func TestExportEmbedding(t *testing.T) {
	dev := tensor.CPU()
	dev.Seed(21)
	const vocab = 11
	module := func(m nn.Module) func(xs []*tensor.Tensor) *tensor.Tensor {
		return func(xs []*tensor.Tensor) *tensor.Tensor { return m.Forward(xs[0]) }
	}
	emb, emb32 := nn.NewEmbedding(dev, vocab, 6), nn.NewEmbedding(dev, vocab, 6)
	padded := nn.NewEmbedding(dev, vocab, 4, nn.EmbeddingConfig{Padded: true, PaddingIndex: 0})
	seq := nn.NewSequential(nn.NewEmbedding(dev, vocab, 6), nn.NewLinear(dev, 6, 3))
	enc := &tokenModel{nn.NewEmbedding(dev, vocab, 8),
		nn.NewTransformerEncoder(nn.NewTransformerEncoderLayer(dev, 8, 2, nn.TransformerLayerConfig{DimFeedforward: 16, BatchFirst: true}), 2, nil),
		nn.NewLinear(dev, 8, vocab)}
	checkFunctionExports(t, []functionCase{
		{"Embedding int64", module(emb), emb, func(b int) []*tensor.Tensor { return []*tensor.Tensor{tokens(vocab, tensor.Int64, b, 5)} }, []string{"Gather"}, false, 0},
		{"Embedding int32", module(emb32), emb32, func(b int) []*tensor.Tensor { return []*tensor.Tensor{tokens(vocab, tensor.Int32, b, 5)} }, []string{"Gather"}, false, 0},
		{"Embedding padded", module(padded), padded, func(b int) []*tensor.Tensor { return []*tensor.Tensor{tokens(vocab, tensor.Int64, b, 7)} }, []string{"Gather"}, false, 0},
		{"Embedding Linear", module(seq), seq, func(b int) []*tensor.Tensor { return []*tensor.Tensor{tokens(vocab, tensor.Int64, b, 4)} }, []string{"Gather", "MatMul"}, false, 0},
	}, 1e-5, []int{3, 5})
	// The transformer's attention reshapes at the traced sizes.
	checkFunctionExports(t, []functionCase{
		{"Embedding TransformerEncoder Linear", module(enc), enc, func(b int) []*tensor.Tensor { return []*tensor.Tensor{tokens(vocab, tensor.Int64, b, 6)} },
			[]string{"Gather", "Softmax", "LayerNormalization"}, false, 0},
	}, 1e-5, []int{3, 3})
}

// TestExportEmbeddingThroughExport exports an embedding model through
// Export itself, with an int64 example, and checks the graph input is
// INT64 with a symbolic batch; a bool example is refused with ErrDType.
func TestExportEmbeddingThroughExport(t *testing.T) {
	dev := tensor.CPU()
	dev.Seed(3)
	emb := nn.NewEmbedding(dev, 9, 4)
	defer nn.Release(emb)
	mp, err := onnx.Trace(emb, tokens(9, tensor.Int64, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	in := mp.Graph.Inputs
	if len(in) != 1 || in[0].Name != "input" || in[0].Type.ElemType != onnx.TypeInt64 || in[0].Type.Shape[0].Param != "batch" {
		t.Fatalf("graph input %+v, want one INT64 \"input\" with a symbolic batch", in[0].Type)
	}
	bad := tensor.Ones(dev, 2, 3).Gt(tensor.Zeros(dev, 2, 3))
	err = onnx.Export(emb, bad, filepath.Join(t.TempDir(), "bad.onnx"))
	if !errors.Is(err, tensor.ErrDType) {
		t.Fatalf("Export on a %s example: %v, want ErrDType", bad.DType(), err)
	}
}
