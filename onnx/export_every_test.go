package onnx_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// bilinearSelf applies a Bilinear layer to its input twice over.
type bilinearSelf struct{ Bilinear *nn.Bilinear }

func (m *bilinearSelf) Forward(x *tensor.Tensor) *tensor.Tensor {
	return m.Bilinear.Forward(x, x.Neg())
}

// decoderSelf runs a transformer decoder with the input as its memory.
type decoderSelf struct{ Decoder *nn.TransformerDecoder }

func (m *decoderSelf) Forward(x *tensor.Tensor) *tensor.Tensor {
	return m.Decoder.Forward(x, x.MulScalar(0.5))
}

// TestExportEveryLayer exports, checks (onnx.checker) and re-imports every
// nn layer that the other export tests do not, and fails when a layer of
// package nn is in none of them and not listed here as unexportable with
// its reason, so a new layer cannot go without an export test.
func TestExportEveryLayer(t *testing.T) {
	dev := tensor.CPU()
	dev.Seed(13)
	decoder := nn.NewTransformerDecoder(nn.NewTransformerDecoderLayer(dev, 8, 2, nn.TransformerLayerConfig{DimFeedforward: 16, BatchFirst: true}), 2, nil)
	encoder := nn.NewTransformerEncoder(nn.NewTransformerEncoderLayer(dev, 8, 2, nn.TransformerLayerConfig{DimFeedforward: 16, BatchFirst: true}), 2, nil)
	cases := []exportCase{
		{"Conv1d AdaptiveAvgPool1d", nn.NewSequential(nn.NewConv1d(dev, 2, 4, 3), nn.NewAdaptiveAvgPool1d(2)), []int{2, 8}, []string{"Conv", "AveragePool"}},
		{"Conv2d MaxPool2d AvgPool2d Dropout2d AdaptiveAvgPool2d Flatten", nn.NewSequential(nn.NewConv2d(dev, 2, 4, 3), nn.NewMaxPool2d(2),
			nn.NewAvgPool2d(1), nn.NewDropout2d(0.5), nn.NewAdaptiveAvgPool2d(1, 1), nn.NewFlatten()), []int{2, 8, 8}, []string{"MaxPool", "GlobalAveragePool"}},
		{"InstanceNorm1d", nn.NewInstanceNorm1d(dev, 3, nn.InstanceNormConfig{Affine: true}), []int{3, 6}, nil},
		{"InstanceNorm3d", nn.NewInstanceNorm3d(dev, 2), []int{2, 3, 3, 3}, nil},
		{"Linear LayerNorm Identity", nn.NewSequential(nn.NewLinear(dev, 6, 8), nn.NewLayerNorm(dev, []int{8}), nn.Identity{}), []int{6}, []string{"LayerNormalization"}},
		{"activations", nn.NewSequential(nn.NewLinear(dev, 6, 6), nn.ReLU{}, nn.NewLinear(dev, 6, 6), nn.ReLU6{}, nn.NewLeakyReLU(0.2),
			nn.NewELU(0.7), nn.NewCELU(1.3), nn.SELU{}, nn.Sigmoid{}, nn.Tanh{}, nn.LogSigmoid{}, nn.Hardsigmoid{}, nn.SiLU{},
			nn.Hardswish{}, nn.Mish{}, nn.NewSoftplus(2, 5), nn.Softsign{}, nn.Tanhshrink{}), []int{6}, []string{"Relu", "Elu", "Celu", "Selu"}},
		{"Softmax LogSoftmax", nn.NewSequential(nn.NewLinear(dev, 5, 4), nn.NewSoftmax(-1), nn.NewLinear(dev, 4, 4), nn.NewLogSoftmax(1)), []int{5}, []string{"Softmax", "LogSoftmax"}},
		{"Bilinear", &bilinearSelf{nn.NewBilinear(dev, 4, 4, 3)}, []int{4}, nil},
		{"TransformerDecoder", &decoderSelf{decoder}, []int{3, 8}, []string{"Softmax", "LayerNormalization"}},
		{"CheckpointedEncoder", nn.NewCheckpointedEncoder(encoder), []int{3, 8}, []string{"Softmax"}},
		{"CheckpointedSequential", nn.CheckpointedSequential{nn.NewLinear(dev, 4, 4), nn.NewDropout(0.1), nn.NewLinear(dev, 4, 2)}, []int{4}, []string{"Gemm"}},
	}
	checkExports(t, dev, cases, 1e-5, 1e-5)
	// 3-D convolution and pooling are composed of 2-D ones with the batch
	// folded into reshapes: their graphs run at the traced batch size only.
	checkExportsAt(t, dev, []exportCase{
		{"Conv3d MaxPool3d AvgPool3d", nn.NewSequential(nn.NewConv3d(dev, 1, 2, 2), nn.NewMaxPool3d(2), nn.NewAvgPool3d(1)), []int{1, 5, 5, 5}, []string{"Conv", "MaxPool"}},
		{"ConvTranspose3d", nn.NewConvTranspose3d(dev, 2, 1, 2), []int{2, 3, 3, 3}, nil},
	}, 1e-5, 1e-5, []int{3})

	// Layers exported by the other tests of this package.
	elsewhere := map[string]string{
		"AdaptiveMaxPool1d": "TestExportLayers", "AvgPool1d": "TestExportLayers", "BatchNorm1d": "TestExportLayersWithConstants",
		"BatchNorm2d": "TestExportLayersWithConstants", "Checkpointed": "TestExportCheckpointedAndLoRA", "Conv2d": "TestExportRoundTrip",
		"ConvTranspose1d": "TestExportLayers", "ConvTranspose2d": "TestExportCoreOps", "Dropout": "TestExportActivations",
		"GELU": "TestExportActivations", "GLU": "TestExportActivations", "GroupNorm": "TestExportLayersWithConstants",
		"Hardshrink": "TestExportActivations", "Hardtanh": "TestExportActivations", "InstanceNorm2d": "TestExportLayers",
		"Linear": "TestExportRoundTrip", "LoRA": "TestExportCheckpointedAndLoRA", "MaxPool1d": "TestExportLayers",
		"PReLU": "TestExportActivations", "PixelShuffle": "TestExportLayers", "PixelUnshuffle": "TestExportLayers",
		"PositionalEncoding": "TestExportLayersWithConstants", "RMSNorm": "TestExportCoreOps", "RReLU": "TestExportActivations",
		"RotaryEncoding": "TestExportLayersWithConstants", "Sequential": "TestExportActivations", "Softmin": "TestExportActivations",
		"Softshrink": "TestExportActivations", "SwiGLU": "TestExportLayersWithConstants", "Threshold": "TestExportActivations",
		"TransformerEncoder": "TestExportLayersWithConstants", "TransformerEncoderLayer": "TestExportLayersWithConstants",
		"Upsample": "TestExportLayers", "LSTM": "TestExportLayersWithConstants", "GRU": "TestExportLayersWithConstants",
		"RNN": "TestExportLayers", "MultiHeadAttention": "TestExportLayersWithConstants",
		"Embedding": "TestExportEmbedding",
	}
	// Layers Export cannot write, and why.
	unexportable := map[string]string{
		"DeformConv2d": "ONNX's DeformConv comes with opset 19; Export writes opset 17",
		"Fold":         "ONNX's Col2Im comes with opset 18; Export writes opset 17",
		"Unfold":       "no ONNX 17 operator extracts sliding blocks (Col2Im, its inverse, is opset 18)",
	}
	// The layers the cases above export.
	for _, n := range []string{"Conv1d", "AdaptiveAvgPool1d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "Flatten", "Conv3d",
		"MaxPool3d", "AvgPool3d", "ConvTranspose3d", "InstanceNorm1d", "InstanceNorm3d", "LayerNorm", "Dropout2d", "Identity",
		"ReLU", "ReLU6", "LeakyReLU", "ELU", "CELU", "SELU", "Sigmoid", "Tanh", "LogSigmoid", "Hardsigmoid", "SiLU", "Hardswish",
		"Mish", "Softplus", "Softsign", "Tanhshrink", "Softmax", "LogSoftmax", "Bilinear", "TransformerDecoder",
		"TransformerDecoderLayer", "CheckpointedEncoder", "CheckpointedSequential"} {
		elsewhere[n] = "TestExportEveryLayer"
	}
	var missing []string
	for _, layer := range nnLayers(t) {
		if elsewhere[layer] == "" && unexportable[layer] == "" {
			missing = append(missing, layer)
		}
	}
	if len(missing) > 0 {
		t.Errorf("nn layers with no export test (add them to TestExportEveryLayer, or to unexportable with the reason): %s", strings.Join(missing, ", "))
	}
}

// nnFuncs returns the function and method declarations of package nn's
// source files (tests left out).
func nnFuncs(t *testing.T) []*ast.FuncDecl {
	t.Helper()
	fs := token.NewFileSet()
	paths, err := filepath.Glob("../nn/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []*ast.FuncDecl
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fs, p, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				out = append(out, fd)
			}
		}
	}
	return out
}

// nnLayers lists package nn's exported types with a Forward method.
func nnLayers(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	for _, fd := range nnFuncs(t) {
		if fd.Recv == nil || fd.Name.Name != "Forward" {
			continue
		}
		typ := fd.Recv.List[0].Type
		if s, ok := typ.(*ast.StarExpr); ok {
			typ = s.X
		}
		if id, ok := typ.(*ast.Ident); ok && id.IsExported() {
			seen[id.Name] = true
		}
	}
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
