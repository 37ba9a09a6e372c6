package tensor_test

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// TestOpsTable builds OPS.md from the code and fails when the committed
// file differs. Regenerate with
//
//	go test ./tensor -run TestOpsTable -update
//
// The list of operations is every exported function of package tensor and
// method of *Tensor that returns tensors (parsed from the source), less the
// few that are not operations (notOps). Each column is measured, not
// declared: every op is called through a probe (probes, or reflection with
// default arguments) on an input of each dtype on the CPU device; the
// dtypes it accepts are those it did not refuse; it has a gradient when a
// float64 input that requires one gets a gradient from the output's sum;
// it exports to ONNX when onnx.Trace accepts a module whose Forward is the
// probe and the exported graph, run on other values, gives the op's
// result for them; it stays on the device when the float32 call copied nothing to the
// host (the CUDA backend then runs it with its own kernels; "host" means
// the data goes to the host and back); its fixture tests are the test
// files that load PyTorch fixtures (loadFixtures) and call it.
var updateOps = flag.Bool("update", false, "rewrite OPS.md from the code (TestOpsTable)")

// notOps are the exported functions and methods that return tensors but are
// not operations on them, with the reason.
var notOps = map[string]string{
	"t.Grad":        "reads a gradient out of a Gradients",
	"t.Keep":        "moves a tensor out of its Scope",
	"t.RequireGrad": "marks a leaf for autodiff",
	"t.TraceInput":  "marks a trace's input so that every op on it records (for export)",
	"t.IsTraced":    "reports whether a tensor is or came from a trace's input",
	"ScopeResult":   "runs a function in a Scope",
	"Gradients.Get": "reads a gradient",
	"t.Assign":      "copies into a tensor in place (its op is Copy)",
}

// probeInput is the probes' input of dtype dt: shape [2, 3, 4] with
// non-integral float values in (-2, 2), no zeros and no ties; bools are
// their signs.
func probeInput(dev tensor.Device, dt tensor.DType) *tensor.Tensor {
	v := make([]float64, 24)
	for i := range v {
		v[i] = 1.9 * math.Sin(1.3*float64(i)+0.4)
	}
	switch {
	case dt.IsFloat():
		return tensor.FromFloat64s(dev, v, 2, 3, 4).To(dt)
	case dt == tensor.Bool:
		return tensor.FromFloat64s(dev, v, 2, 3, 4).GtScalar(0)
	}
	// Integers: ±1 to ±4, never zero (an integer division by zero is an
	// error), non-negative for uint8.
	for i := range v {
		v[i] = math.Copysign(math.Ceil(math.Abs(2*v[i])), v[i])
		if dt == tensor.Uint8 {
			v[i] = math.Abs(v[i])
		}
	}
	return tensor.FromFloat64s(dev, v, 2, 3, 4).To(dt)
}

// probeInput2 is a float32 input of probeInput's shape with other values,
// for checking that an exported graph computes the op rather than
// replaying the traced input.
func probeInput2(dev tensor.Device) *tensor.Tensor {
	v := make([]float64, 24)
	for i := range v {
		v[i] = 1.7 * math.Cos(0.9*float64(i)+0.3)
	}
	return tensor.FromFloat64s(dev, v, 2, 3, 4).To(tensor.Float32)
}

// Helpers for probes: an int64 index tensor, a [4, 4] weight and 1-D views.
func probeIndex(x *tensor.Tensor, v ...int64) *tensor.Tensor {
	return tensor.FromInt64s(x.Device(), v, len(v))
}

func probeMask(x *tensor.Tensor) *tensor.Tensor { return x.To(tensor.Float64).GtScalar(0) }

// probes call the ops that reflection cannot call with its default
// arguments (see defaultProbe): functions, and methods whose arguments need
// valid values.
var probes = map[string]func(x *tensor.Tensor) any{
	"t.Chunk":       func(x *tensor.Tensor) any { return x.Chunk(2, -1) },
	"t.Dot":         func(x *tensor.Tensor) any { f := x.Flatten(0, -1); return f.Dot(f) },
	"t.Outer":       func(x *tensor.Tensor) any { f := x.Flatten(0, -1); return f.Outer(f) },
	"t.Matmul":      func(x *tensor.Tensor) any { return x.Matmul(x.Transpose(-1, -2)) },
	"t.Expand":      func(x *tensor.Tensor) any { return x.Unsqueeze(0).Expand(2, 2, 3, 4) },
	"t.Flip":        func(x *tensor.Tensor) any { return x.Flip(-1) },
	"t.Gather":      func(x *tensor.Tensor) any { return x.Gather(-1, x.To(tensor.Float64).Abs().Floor().To(tensor.Int64)) },
	"t.IndexSelect": func(x *tensor.Tensor) any { return x.IndexSelect(-1, probeIndex(x, 3, 0, 1)) },
	"t.LayerNorm": func(x *tensor.Tensor) any {
		return x.LayerNorm([]int{4}, x.Select(0, 0).Select(0, 0), x.Select(0, 1).Select(0, 1), 1e-5)
	},
	"t.BatchNorm": func(x *tensor.Tensor) any {
		y, _, _ := x.BatchNorm(x.Select(0, 0).Select(1, 0), x.Select(0, 1).Select(1, 1), 1e-5)
		return y
	},
	"t.RMSNorm":      func(x *tensor.Tensor) any { return x.RMSNorm([]int{4}, x.Select(0, 0).Select(0, 0), 1e-5) },
	"t.MaskedFill":   func(x *tensor.Tensor) any { return x.MaskedFill(probeMask(x), 0.5) },
	"t.Narrow":       func(x *tensor.Tensor) any { return x.Narrow(-1, 1, 2) },
	"t.OneHot":       func(x *tensor.Tensor) any { return x.To(tensor.Float64).Abs().Floor().To(tensor.Int64).OneHot(3) },
	"t.Pad":          func(x *tensor.Tensor) any { return x.Pad([]int{1, 2}, "constant", 0.5) },
	"t.Permute":      func(x *tensor.Tensor) any { return x.Permute(2, 0, 1) },
	"t.Repeat":       func(x *tensor.Tensor) any { return x.Repeat(1, 2, 1) },
	"t.Reshape":      func(x *tensor.Tensor) any { return x.Reshape(6, 4) },
	"t.Scatter":      func(x *tensor.Tensor) any { return x.Scatter(-1, probeIndexLike(x), x) },
	"t.ScatterAdd":   func(x *tensor.Tensor) any { return x.ScatterAdd(-1, probeIndexLike(x), x) },
	"t.ScatterValue": func(x *tensor.Tensor) any { return x.ScatterValue(-1, probeIndexLike(x), 0.5) },
	"t.Slice":        func(x *tensor.Tensor) any { return x.Slice(-1, 0, 4, 2) },
	"t.Split":        func(x *tensor.Tensor) any { return x.Split([]int{1, 3}, -1) },
	"t.SplitEvery":   func(x *tensor.Tensor) any { return x.SplitEvery(2, -1) },
	"t.Squeeze":      func(x *tensor.Tensor) any { return x.Unsqueeze(0).Squeeze(0) },
	"t.TopK":         func(x *tensor.Tensor) any { v, _ := x.TopK(2, -1, true); return v },
	"t.Unflatten":    func(x *tensor.Tensor) any { return x.Unflatten(-1, 2, 2) },
	"t.To":           func(x *tensor.Tensor) any { return x.To(tensor.Float64) },
	"t.ToDevice":     func(x *tensor.Tensor) any { return x.ToDevice(x.Device()) },
	"t.StdCorrection": func(x *tensor.Tensor) any {
		return x.StdCorrection(1, false, -1)
	},
	"t.VarCorrection": func(x *tensor.Tensor) any { return x.VarCorrection(1, false, -1) },
	"AdamStep": func(x *tensor.Tensor) any {
		p, _ := tensor.AdamStep(x.Detach(), x, tensor.AdamState{}, tensor.AdamConfig{LR: 1e-3, Step: 1})
		return p
	},
	"SGDStep": func(x *tensor.Tensor) any {
		p, _ := tensor.SGDStep(x.Detach(), x, tensor.SGDState{}, tensor.SGDConfig{LR: 0.1, Momentum: 0.9})
		return p
	},
	"AdaptiveAvgPool1d": func(x *tensor.Tensor) any { return tensor.AdaptiveAvgPool1d(x, 2) },
	"AdaptiveAvgPool2d": func(x *tensor.Tensor) any { return tensor.AdaptiveAvgPool2d(x.Unsqueeze(0), 1, 2) },
	"Arange":            func(x *tensor.Tensor) any { return tensor.Arange(x.Device(), 0, 5, 1) },
	"ArangeOf":          func(x *tensor.Tensor) any { return tensor.ArangeOf(x.Device(), x.DType(), 0, 5, 1) },
	"AvgPool1d":         func(x *tensor.Tensor) any { return tensor.AvgPool1d(x, tensor.AvgPoolConfig{Kernel: []int{2}}) },
	"AvgPool2d": func(x *tensor.Tensor) any {
		return tensor.AvgPool2d(x.Unsqueeze(0), tensor.AvgPoolConfig{Kernel: []int{2, 2}})
	},
	"AvgPool3d": func(x *tensor.Tensor) any {
		return tensor.AvgPool3d(x.Unsqueeze(0).Unsqueeze(0), tensor.AvgPoolConfig{Kernel: []int{2, 2, 2}})
	},
	"Bernoulli": func(x *tensor.Tensor) any { return tensor.Bernoulli(x.Device(), 0.5, 2, 3) },
	"CTCLoss": func(x *tensor.Tensor) any {
		lp := x.Permute(2, 0, 1).LogSoftmax(-1) // T=4, N=2, C=3
		return tensor.CTCLoss(lp, tensor.FromInt64s(x.Device(), []int64{1, 2, 1, 1}, 2, 2), []int{4, 4}, []int{2, 1}, tensor.CTCLossOptions{})
	},
	"Cat": func(x *tensor.Tensor) any { return tensor.Cat([]*tensor.Tensor{x, x}, -1) },
	"Conv1d": func(x *tensor.Tensor) any {
		return tensor.Conv1d(x, x.Narrow(-1, 0, 2).Narrow(0, 0, 1), nil, tensor.ConvConfig{})
	},
	"Conv2d": func(x *tensor.Tensor) any {
		return tensor.Conv2d(x.Unsqueeze(0), x.Narrow(1, 0, 2).Narrow(2, 0, 2).Unsqueeze(0), nil, tensor.ConvConfig{})
	},
	"Conv2dActivation": func(x *tensor.Tensor) any {
		w := x.Narrow(1, 0, 2).Narrow(2, 0, 2).Unsqueeze(0)
		return tensor.Conv2dActivation(x.Unsqueeze(0), w, x.Reshape(-1).Narrow(0, 0, 1), tensor.ConvConfig{}, "relu")
	},
	"Conv3d": func(x *tensor.Tensor) any {
		w := x.Narrow(0, 0, 1).Narrow(1, 0, 2).Narrow(2, 0, 2).Unsqueeze(0).Unsqueeze(0)
		return tensor.Conv3d(x.Unsqueeze(0).Unsqueeze(0), w, nil, tensor.ConvConfig{})
	},
	"ConvTranspose1d": func(x *tensor.Tensor) any {
		return tensor.ConvTranspose1d(x, x.Select(0, 0).Narrow(-1, 0, 2).Unsqueeze(1), nil, tensor.ConvTransposeConfig{})
	},
	"ConvTranspose2d": func(x *tensor.Tensor) any {
		return tensor.ConvTranspose2d(x.Unsqueeze(0), x.Narrow(1, 0, 2).Narrow(2, 0, 2).Unsqueeze(1), nil, tensor.ConvTransposeConfig{})
	},
	"ConvTranspose3d": func(x *tensor.Tensor) any {
		w := x.Narrow(0, 0, 1).Narrow(1, 0, 2).Narrow(2, 0, 2).Unsqueeze(0).Unsqueeze(0)
		return tensor.ConvTranspose3d(x.Unsqueeze(0).Unsqueeze(0), w, nil, tensor.ConvTransposeConfig{})
	},
	"CrossEntropyFromLogits": func(x *tensor.Tensor) any {
		return tensor.CrossEntropyFromLogits(x.Flatten(0, 1), probeIndex(x, 0, 1, 2, 3, 0, 1), tensor.CrossEntropyOptions{})
	},
	"Embedding": func(x *tensor.Tensor) any { return tensor.Embedding(x.Flatten(0, 1), probeIndex(x, 5, 0, 2)) },
	"EmbeddingPadded": func(x *tensor.Tensor) any {
		return tensor.EmbeddingPadded(x.Flatten(0, 1), probeIndex(x, 5, 0, 2), 0)
	},
	"Eye":       func(x *tensor.Tensor) any { return tensor.Eye(x.Device(), 3, 4) },
	"EyeOf":     func(x *tensor.Tensor) any { return tensor.EyeOf(x.Device(), x.DType(), 3, 4) },
	"FromBools": func(x *tensor.Tensor) any { return tensor.FromBools(x.Device(), []bool{true, false}, 2) },
	"FromBytes": func(x *tensor.Tensor) any {
		return tensor.FromBytes(x.Device(), x.DType(), make([]byte, 2*x.DType().Size()), 2)
	},
	"FromFloat32s": func(x *tensor.Tensor) any { return tensor.FromFloat32s(x.Device(), []float32{1, 2}, 2) },
	"FromFloat64s": func(x *tensor.Tensor) any { return tensor.FromFloat64s(x.Device(), []float64{1, 2}, 2) },
	"FromInt32s":   func(x *tensor.Tensor) any { return tensor.FromInt32s(x.Device(), []int32{1, 2}, 2) },
	"FromInt16s":   func(x *tensor.Tensor) any { return tensor.FromInt16s(x.Device(), []int16{1, 2}, 2) },
	"FromInt8s":    func(x *tensor.Tensor) any { return tensor.FromInt8s(x.Device(), []int8{1, 2}, 2) },
	"FromInt64s":   func(x *tensor.Tensor) any { return tensor.FromInt64s(x.Device(), []int64{1, 2}, 2) },
	"Full":         func(x *tensor.Tensor) any { return tensor.Full(x.Device(), 0.5, 2, 3) },
	"FullLike":     func(x *tensor.Tensor) any { return tensor.FullLike(x, 1) },
	"FullOf":       func(x *tensor.Tensor) any { return tensor.FullOf(x.Device(), x.DType(), 1, 2, 3) },
	"Interpolate": func(x *tensor.Tensor) any {
		return tensor.Interpolate(x.Unsqueeze(0), tensor.InterpolateConfig{Size: []int{6, 8}, Mode: "bilinear"})
	},
	"LinearActivation": func(x *tensor.Tensor) any {
		return tensor.LinearActivation(x, x.Select(0, 0), x.Select(0, 1).Select(1, 0), "gelu")
	},
	"Linear": func(x *tensor.Tensor) any {
		return tensor.Linear(x, x.Select(0, 0), x.Select(0, 1).Select(1, 0))
	},
	"Linspace":   func(x *tensor.Tensor) any { return tensor.Linspace(x.Device(), 0, 1, 5) },
	"LinspaceOf": func(x *tensor.Tensor) any { return tensor.LinspaceOf(x.Device(), x.DType(), 0, 4, 5) },
	"MaxPool1d": func(x *tensor.Tensor) any {
		v, _ := tensor.MaxPool1d(x, tensor.PoolConfig{Kernel: []int{2}})
		return v
	},
	"MaxPool2d": func(x *tensor.Tensor) any {
		v, _ := tensor.MaxPool2d(x.Unsqueeze(0), tensor.PoolConfig{Kernel: []int{2, 2}})
		return v
	},
	"MaxPool3d": func(x *tensor.Tensor) any {
		v, _ := tensor.MaxPool3d(x.Unsqueeze(0).Unsqueeze(0), tensor.PoolConfig{Kernel: []int{2, 2, 2}})
		return v
	},
	"Normal":    func(x *tensor.Tensor) any { return tensor.Normal(x.Device(), 0, 1, 2, 3) },
	"Ones":      func(x *tensor.Tensor) any { return tensor.Ones(x.Device(), 2, 3) },
	"OnesLike":  func(x *tensor.Tensor) any { return tensor.OnesLike(x) },
	"OnesOf":    func(x *tensor.Tensor) any { return tensor.OnesOf(x.Device(), x.DType(), 2, 3) },
	"Rand":      func(x *tensor.Tensor) any { return tensor.Rand(x.Device(), 2, 3) },
	"RandInt":   func(x *tensor.Tensor) any { return tensor.RandInt(x.Device(), 0, 5, 2, 3) },
	"RandLike":  func(x *tensor.Tensor) any { return tensor.RandLike(x) },
	"Randn":     func(x *tensor.Tensor) any { return tensor.Randn(x.Device(), 2, 3) },
	"RandnLike": func(x *tensor.Tensor) any { return tensor.RandnLike(x) },
	"Scalar":    func(x *tensor.Tensor) any { return tensor.Scalar(x.Device(), 0.5) },
	"ScalarOf":  func(x *tensor.Tensor) any { return tensor.ScalarOf(x.Device(), x.DType(), 1) },
	"ScalarPow": func(x *tensor.Tensor) any { return tensor.ScalarPow(2, x) },
	"Stack":     func(x *tensor.Tensor) any { return tensor.Stack([]*tensor.Tensor{x, x}, 0) },
	"Uniform":   func(x *tensor.Tensor) any { return tensor.Uniform(x.Device(), -1, 1, 2, 3) },
	"Where":     func(x *tensor.Tensor) any { return tensor.Where(probeMask(x), x, x.Flip(0)) },
	"Zeros":     func(x *tensor.Tensor) any { return tensor.Zeros(x.Device(), 2, 3) },
	"ZerosLike": func(x *tensor.Tensor) any { return tensor.ZerosLike(x) },
	"ZerosOf":   func(x *tensor.Tensor) any { return tensor.ZerosOf(x.Device(), x.DType(), 2, 3) },
	// Linear algebra on [2, 3, 3] matrices cut from the input (random
	// matrices: non-singular), symmetric positive definite ones built from
	// them.
	"t.Det":         func(x *tensor.Tensor) any { return probeSquare(x).Det() },
	"t.Slogdet":     func(x *tensor.Tensor) any { _, l := probeSquare(x).Slogdet(); return l },
	"t.Inv":         func(x *tensor.Tensor) any { return probeSquare(x).Inv() },
	"t.Solve":       func(x *tensor.Tensor) any { return probeSquare(x).Solve(x.Narrow(-1, 1, 3)) },
	"t.Cholesky":    func(x *tensor.Tensor) any { return probeSPD(x).Cholesky(false) },
	"t.QR":          func(x *tensor.Tensor) any { _, r := x.QR("reduced"); return r },
	"t.Eigh":        func(x *tensor.Tensor) any { v, _ := probeSPD(x).Eigh("L"); return v },
	"t.Eigvalsh":    func(x *tensor.Tensor) any { return probeSPD(x).Eigvalsh("L") },
	"t.SVD":         func(x *tensor.Tensor) any { _, sv, _ := x.SVD(false); return sv },
	"t.LUFactor":    func(x *tensor.Tensor) any { lu, _ := probeSquare(x).LUFactor(); return lu },
	"t.LU":          func(x *tensor.Tensor) any { _, _, u := probeSquare(x).LU(); return u },
	"t.MatrixPower": func(x *tensor.Tensor) any { return probeSquare(x).MatrixPower(2) },
	"t.MatrixNorm":  func(x *tensor.Tensor) any { return x.MatrixNorm("fro", false) },
	"t.VectorNorm":  func(x *tensor.Tensor) any { return x.VectorNorm(2, false, -1) },
	"t.Diag":        func(x *tensor.Tensor) any { return x.Select(0, 0).Diag(0) },
	"t.DiagEmbed":   func(x *tensor.Tensor) any { return x.DiagEmbed(0, -2, -1) },
	"t.Diagonal":    func(x *tensor.Tensor) any { return x.Diagonal(0, -2, -1) },
	"t.Cross":       func(x *tensor.Tensor) any { return x.Narrow(-1, 0, 3).Cross(x.Narrow(-1, 1, 3), -1) },
	"Einsum":        func(x *tensor.Tensor) any { return tensor.Einsum("ijk,ijk->ij", x, x) },
	"t.Movedim":     func(x *tensor.Tensor) any { return x.Movedim([]int{0}, []int{-1}) },
	"t.Bincount":    func(x *tensor.Tensor) any { return x.Abs().To(tensor.Int64).Flatten(0, -1).Bincount(nil, 0) },
	"t.Histc":       func(x *tensor.Tensor) any { return x.Histc(4, -2, 2) },
	"t.Quantile":    func(x *tensor.Tensor) any { return x.Quantile(probeQ(x), -1, false, "linear") },
	"t.QuantileAll": func(x *tensor.Tensor) any { return x.QuantileAll(probeQ(x), "linear") },
	"t.Prelu":       func(x *tensor.Tensor) any { return x.Prelu(x.Select(0, 0).Select(1, 0)) },
	"t.HardTanh":    func(x *tensor.Tensor) any { return x.HardTanh(-1, 1) },
	"FFT":           func(x *tensor.Tensor) any { return tensor.FFT(x.Reshape(2, 6, 2), 0, 1, "backward") },
	"IFFT":          func(x *tensor.Tensor) any { return tensor.IFFT(x.Reshape(2, 6, 2), 0, 1, "backward") },
	"RFFT":          func(x *tensor.Tensor) any { return tensor.RFFT(x, 0, -1, "backward") },
	"IRFFT":         func(x *tensor.Tensor) any { return tensor.IRFFT(x.Reshape(2, 6, 2), 0, 1, "backward") },
	"FFT2":          func(x *tensor.Tensor) any { return tensor.FFT2(x.Reshape(3, 4, 2), "backward") },
	"IFFT2":         func(x *tensor.Tensor) any { return tensor.IFFT2(x.Reshape(3, 4, 2), "backward") },
	"FFTN":          func(x *tensor.Tensor) any { return tensor.FFTN(x.Reshape(3, 4, 2), []int{0, 1}, "ortho") },
	"IFFTN":         func(x *tensor.Tensor) any { return tensor.IFFTN(x.Reshape(3, 4, 2), []int{0, 1}, "ortho") },
	"STFT": func(x *tensor.Tensor) any {
		return tensor.STFT(x.Reshape(2, 12), x.Flatten(0, -1).Narrow(0, 0, 4).Abs(), tensor.STFTConfig{NFFT: 4, HopLength: 2})
	},
	"ISTFT": func(x *tensor.Tensor) any {
		w := x.Flatten(0, -1).Narrow(0, 0, 4).Abs().AddScalar(0.5)
		cfg := tensor.STFTConfig{NFFT: 4, HopLength: 1}
		return tensor.ISTFT(tensor.STFT(x.Reshape(2, 12), w, cfg), w, cfg)
	},
	"GridSample": func(x *tensor.Tensor) any {
		return tensor.GridSample(x.Unsqueeze(0), x.Narrow(-1, 0, 2).Tanh().Unsqueeze(0), tensor.GridSampleConfig{})
	},
	"AffineGrid": func(x *tensor.Tensor) any {
		return tensor.AffineGrid(x.Narrow(1, 0, 2).Narrow(2, 0, 3), []int{2, 1, 4, 5}, false)
	},
	"Checkpoint": func(x *tensor.Tensor) any {
		return tensor.Checkpoint(func(in, _ []*tensor.Tensor) *tensor.Tensor { return in[0].Tanh().Mul(in[0]) }, []*tensor.Tensor{x}, nil)
	},
	"Unfold":            func(x *tensor.Tensor) any { return tensor.Unfold(x.Unsqueeze(0), tensor.FoldConfig{Kernel: []int{2}}) },
	"Fold":              func(x *tensor.Tensor) any { return tensor.Fold(x, []int{3, 4}, tensor.FoldConfig{Kernel: []int{3, 1}}) },
	"PixelShuffle":      func(x *tensor.Tensor) any { return tensor.PixelShuffle(x.Reshape(1, 4, 3, 2), 2) },
	"PixelUnshuffle":    func(x *tensor.Tensor) any { return tensor.PixelUnshuffle(x.Reshape(6, 2, 2), 2) },
	"AdaptiveMaxPool1d": func(x *tensor.Tensor) any { v, _ := tensor.AdaptiveMaxPool1d(x, 3); return v },
	"DeformConv2d": func(x *tensor.Tensor) any {
		return tensor.DeformConv2d(x.Reshape(1, 2, 3, 4), tensor.ZerosOf(x.Device(), x.DType(), 1, 8, 2, 3),
			x.Reshape(-1).Narrow(0, 0, 8).Reshape(1, 2, 2, 2), nil, nil, tensor.DeformConvConfig{})
	},
	"PackedSelfAttention": func(x *tensor.Tensor) any {
		return tensor.PackedSelfAttention(x.Reshape(2, 2, 6), 2, tensor.AttentionConfig{Causal: true})
	},
	"ScaledDotProductAttention": func(x *tensor.Tensor) any {
		return tensor.ScaledDotProductAttention(x, x, x, nil, tensor.AttentionConfig{})
	},
}

// probeSquare is the input's [2, 3, 3] leading square matrices.
func probeSquare(x *tensor.Tensor) *tensor.Tensor { return x.Narrow(-1, 0, 3) }

// probeSPD is a batch of symmetric positive definite [3, 3] matrices: a·aᵀ
// plus 3 on the diagonal.
func probeSPD(x *tensor.Tensor) *tensor.Tensor {
	a := probeSquare(x)
	return a.Matmul(a.Transpose(-1, -2)).Add(tensor.EyeOf(x.Device(), x.DType(), 3, 3).MulScalar(3))
}

// probeQ is the quantile levels 0.25 and 0.5 in x's dtype.
func probeQ(x *tensor.Tensor) *tensor.Tensor {
	return tensor.FromFloat64s(x.Device(), []float64{0.25, 0.5}, 2).To(x.DType())
}

// probeIndexLike is an int64 index of x's shape with values in [0, 4).
func probeIndexLike(x *tensor.Tensor) *tensor.Tensor {
	return x.To(tensor.Float64).Abs().Floor().To(tensor.Int64)
}

// defaultProbe calls method name of *Tensor with default arguments: the
// input itself for a tensor, -1 for an int (the last dimension), 0.5 for a
// float, false for a bool, and nothing for variadic dimensions (all of
// them). It returns nil for a signature it cannot fill.
func defaultProbe(name string) func(x *tensor.Tensor) any {
	m, ok := reflect.TypeOf(&tensor.Tensor{}).MethodByName(name)
	if !ok {
		return nil
	}
	ft := m.Type
	for i := 1; i < ft.NumIn(); i++ {
		if ft.IsVariadic() && i == ft.NumIn()-1 {
			break
		}
		switch ft.In(i) {
		case reflect.TypeOf(&tensor.Tensor{}), reflect.TypeOf(0), reflect.TypeOf(int64(0)), reflect.TypeOf(0.0), reflect.TypeOf(false):
		default:
			return nil
		}
	}
	return func(x *tensor.Tensor) any {
		args := []reflect.Value{reflect.ValueOf(x)}
		for i := 1; i < ft.NumIn(); i++ {
			if ft.IsVariadic() && i == ft.NumIn()-1 {
				break
			}
			switch ft.In(i) {
			case reflect.TypeOf(&tensor.Tensor{}):
				args = append(args, reflect.ValueOf(x))
			case reflect.TypeOf(0):
				args = append(args, reflect.ValueOf(-1))
			case reflect.TypeOf(int64(0)):
				args = append(args, reflect.ValueOf(int64(1)))
			case reflect.TypeOf(0.0):
				args = append(args, reflect.ValueOf(0.5))
			case reflect.TypeOf(false):
				args = append(args, reflect.ValueOf(false))
			}
		}
		out := m.Func.Call(args)
		res := make([]any, len(out))
		for i, o := range out {
			res[i] = o.Interface()
		}
		if len(res) == 1 {
			return res[0]
		}
		return res
	}
}

// firstTensor digs the first tensor out of a probe's result.
func firstTensor(v any) *tensor.Tensor {
	switch r := v.(type) {
	case *tensor.Tensor:
		return r
	case []*tensor.Tensor:
		if len(r) > 0 {
			return r[0]
		}
	case []any:
		for _, e := range r {
			if t := firstTensor(e); t != nil {
				return t
			}
		}
	}
	return nil
}

// opDecl is one exported function or method found in the source.
type opDecl struct {
	key    string // "t.Abs" for a method, "Conv2d" for a function
	method string // the method's or function's name
	file   string
	doc    string // the doc comment's first sentence
}

// sourceOps parses the package's non-test files for exported functions and
// *Tensor methods whose results include *Tensor or []*Tensor.
func sourceOps(t *testing.T) []opDecl {
	t.Helper()
	fs := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var ops []opDecl
	for _, e := range entries {
		path := e.Name()
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fs, path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name != "tensor" {
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !fd.Name.IsExported() || fd.Type.Results == nil {
				continue
			}
			returnsTensor := false
			for _, r := range fd.Type.Results.List {
				s := exprString(r.Type)
				if s == "*Tensor" || s == "[]*Tensor" {
					returnsTensor = true
				}
			}
			if !returnsTensor {
				continue
			}
			key := fd.Name.Name
			if fd.Recv != nil {
				recv := exprString(fd.Recv.List[0].Type)
				if recv != "*Tensor" {
					key = strings.TrimPrefix(recv, "*") + "." + key
				} else {
					key = "t." + key
				}
			}
			if _, skip := notOps[key]; skip {
				continue
			}
			doc := ""
			if fd.Doc != nil {
				doc = firstSentence(fd.Doc.Text())
			}
			ops = append(ops, opDecl{key: key, method: fd.Name.Name, file: path, doc: doc})
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].key < ops[j].key })
	return ops
}

func exprString(e ast.Expr) string {
	switch v := e.(type) {
	case *ast.Ident:
		return v.Name
	case *ast.StarExpr:
		return "*" + exprString(v.X)
	case *ast.ArrayType:
		return "[]" + exprString(v.Elt)
	case *ast.SelectorExpr:
		return exprString(v.X) + "." + v.Sel.Name
	}
	return fmt.Sprintf("%T", e)
}

func firstSentence(doc string) string {
	doc = strings.Join(strings.Fields(doc), " ")
	if i := strings.Index(doc, ". "); i >= 0 {
		doc = doc[:i+1]
	}
	return doc
}

// fixtureCallers maps a name to the test files that check values against
// PyTorch fixtures and mention it (a call, or a method value in a table):
// the files that call loadFixtures, or a function of another test file
// that does (a shared fixture runner).
func fixtureCallers(t *testing.T) map[string][]string {
	t.Helper()
	fs := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	var names []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, "_test.go") || name == "ops_table_test.go" {
			continue
		}
		f, err := parser.ParseFile(fs, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
		names = append(names, name)
	}
	calls := func(n ast.Node, fn func(name string) bool) bool {
		found := false
		ast.Inspect(n, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if id, ok := c.Fun.(*ast.Ident); ok && fn(id.Name) {
					found = true
				}
			}
			return !found
		})
		return found
	}
	// The functions that load fixtures, themselves or through another
	// such function (to a fixed point), and the files that call one.
	loaders := map[string]bool{"loadFixtures": true}
	for grown := true; grown; {
		grown = false
		for _, name := range names {
			for _, d := range files[name].Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && !strings.HasPrefix(fd.Name.Name, "Test") &&
					!loaders[fd.Name.Name] && calls(fd, func(n string) bool { return loaders[n] }) {
					loaders[fd.Name.Name], grown = true, true
				}
			}
		}
	}
	callers := map[string][]string{}
	for _, name := range names {
		f := files[name]
		if !calls(f, func(n string) bool { return loaders[n] }) {
			continue
		}
		seen := map[string]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && !seen[sel.Sel.Name] {
				seen[sel.Sel.Name] = true
				callers[sel.Sel.Name] = append(callers[sel.Sel.Name], name)
			}
			return true
		})
	}
	return callers
}

// opFacts is what the probes measured for one op.
type opFacts struct {
	decl     opDecl
	dtypes   []tensor.DType
	grad     bool
	onnx     bool
	host     bool
	fixtures []string
	refused  string // why the probe failed on every dtype
}

// fnModule is an nn.Module whose Forward is a probe.
type fnModule struct{ f func(x *tensor.Tensor) any }

func (m fnModule) Forward(x *tensor.Tensor) *tensor.Tensor { return firstTensor(m.f(x)) }

// try runs f, turning a panic into an error.
func try(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}

func measureOp(dev tensor.Device, d opDecl, probe func(x *tensor.Tensor) any, fixtures map[string][]string) opFacts {
	facts := opFacts{decl: d, fixtures: fixtures[d.method]}
	for _, dt := range tableDTypes {
		var err error
		tensor.Scope(func() {
			x := probeInput(dev, dt)
			before := tensor.HostReads(dev)
			err = try(func() {
				if firstTensor(probe(x)) == nil {
					panic("the probe returned no tensor")
				}
			})
			// A kernel's failure (an integer division by zero) shows at
			// the next sync: it is this op's, not the next one's.
			if serr := dev.Sync(); err == nil && serr != nil {
				err = serr
			}
			if err == nil && dt == tensor.Float32 {
				facts.host = tensor.HostReads(dev) > before
			}
		})
		if err != nil {
			if facts.refused == "" {
				facts.refused = fmt.Sprintf("%s: %v", dt, err)
			}
			continue
		}
		facts.dtypes = append(facts.dtypes, dt)
	}
	_ = dev.Sync()
	tensor.Scope(func() {
		x := probeInput(dev.Autodiff(), tensor.Float64).RequireGrad()
		_ = try(func() {
			out := firstTensor(probe(x))
			if out == nil || !out.DType().IsFloat() || !out.RequiresGrad() {
				return
			}
			grads := out.To(tensor.Float64).Sum().Backward()
			facts.grad = x.Grad(grads) != nil
		})
	})
	_ = dev.Sync()
	tensor.Scope(func() {
		x := probeInput(dev.Autodiff(), tensor.Float32)
		perr := try(func() {
			mp, err := onnx.Trace(fnModule{probe}, x)
			if err != nil {
				if debugOp(d.key) {
					fmt.Println(d.key, "ONNX:", err)
				}
				return
			}
			// The graph must compute the op, not replay this input: run it
			// on other values (an op that reads its data to the host
			// traces this input's selection into the graph).
			m, err := onnx.FromProto(mp, d.key, dev)
			if err != nil {
				if debugOp(d.key) {
					fmt.Println(d.key, "ONNX load:", err)
				}
				return
			}
			defer nn.Release(m)
			x2 := probeInput2(dev)
			want, got := firstTensor(probe(x2)), m.Forward(x2)
			facts.onnx = fmt.Sprint(want.Shape()) == fmt.Sprint(got.Shape()) &&
				want.To(tensor.Float64).AllClose(got.To(tensor.Float64), 1e-4, 1e-5)
			if !facts.onnx && debugOp(d.key) {
				fmt.Println(d.key, "ONNX: the exported graph gives other values for another input")
			}
		})
		if perr != nil && debugOp(d.key) {
			fmt.Println(d.key, "ONNX panic:", perr)
		}
		_ = dev.Sync()
	})
	return facts
}

// tableDTypes lists the dtypes the table probes, in the order it shows
// them: floats, then integers from widest to narrowest, then Bool
// (backends.DTypes is in declaration order, where Int8 and Int16 come last).
var tableDTypes = []tensor.DType{
	tensor.Float32, tensor.Float64, tensor.Float16, tensor.BFloat16,
	tensor.Int64, tensor.Int32, tensor.Int16, tensor.Int8, tensor.Uint8, tensor.Bool,
}

// dtypeShort names dtypes in the table.
var dtypeShort = map[tensor.DType]string{
	tensor.Float32: "f32", tensor.Float64: "f64", tensor.Float16: "f16", tensor.BFloat16: "bf16",
	tensor.Int64: "i64", tensor.Int32: "i32", tensor.Int16: "i16", tensor.Int8: "i8", tensor.Uint8: "u8",
	tensor.Bool: "bool",
}

func TestOpsTable(t *testing.T) {
	if testing.Short() {
		t.Skip("probes every op on every dtype")
	}
	dev := tensor.CPU()
	fixtures := fixtureCallers(t)
	var all []opFacts
	for _, d := range sourceOps(t) {
		probe, listed := probes[d.key]
		if !listed && !strings.HasPrefix(d.key, "t.") {
			probe, listed = probes[d.method], probes[d.method] != nil
		}
		if !listed {
			probe = defaultProbe(d.method)
		}
		if probe == nil && strings.HasPrefix(d.key, "t.") {
			probe = defaultProbe(d.method)
		}
		if probe == nil {
			t.Errorf("%s (%s) has no probe: add one to probes in ops_table_test.go", d.key, d.file)
			continue
		}
		f := measureOp(dev, d, probe, fixtures)
		if len(f.dtypes) == 0 {
			t.Errorf("%s refused every dtype (fix its probe in ops_table_test.go): %s", d.key, f.refused)
		}
		all = append(all, f)
	}
	text := opsMarkdown(all)
	if *updateOps {
		if err := os.WriteFile("OPS.md", []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile("OPS.md")
	if err != nil || string(old) != text {
		t.Errorf("OPS.md is stale: regenerate it with go test ./tensor -run TestOpsTable -update")
	}
}

// burnOps lists Burn 0.22's tensor operations (by the names of its
// reference, ../shared/reference/burn-0.22.md, grouped as there) and the
// Kiln op (a key of the table) that does the same, "" where Kiln has none.
var burnOps = [][2]string{
	// Creation
	{"empty", "Zeros"}, {"zeros", "Zeros"}, {"ones", "Ones"}, {"full", "Full"}, {"zeros_like", "ZerosLike"},
	{"ones_like", "OnesLike"}, {"full_like", "FullLike"}, {"from_data", "FromFloat32s"}, {"random (uniform)", "Uniform"},
	{"random (normal)", "Normal"}, {"random (bernoulli)", "Bernoulli"}, {"eye", "Eye"}, {"arange", "Arange"},
	{"arange_step", "Arange"}, {"tril_mask", "t.Tril"}, {"triu_mask", "t.Triu"}, {"diag_mask", "t.DiagEmbed"},
	// Layout
	{"reshape", "t.Reshape"}, {"flatten", "t.Flatten"}, {"squeeze", "t.Squeeze"}, {"unsqueeze", "t.Unsqueeze"},
	{"permute", "t.Permute"}, {"movedim", "t.Movedim"}, {"swap_dims", "t.Transpose"}, {"transpose", "t.T"},
	{"expand", "t.Expand"}, {"repeat", "t.Repeat"}, {"flip", "t.Flip"}, {"roll", "t.Roll"}, {"narrow", "t.Narrow"},
	{"chunk", "t.Chunk"}, {"split", "t.Split"}, {"cat", "Cat"}, {"stack", "Stack"}, {"unfold", "Unfold"},
	{"pad (constant/reflect/edge)", "t.Pad"},
	// Indexing
	{"slice", "t.Slice"}, {"slice_assign", "t.SliceAssign"}, {"slice_fill", "t.SliceFill"}, {"select", "t.IndexSelect"},
	{"select_assign", "t.IndexAdd"}, {"gather", "t.Gather"}, {"scatter", "t.ScatterAdd"}, {"scatter_nd", "t.ScatterND"},
	{"take", "t.Take"}, {"mask_fill", "t.MaskedFill"}, {"mask_where", "Where"}, {"mask_select", "t.MaskedSelect"},
	{"argwhere", "t.Nonzero"}, {"nonzero", "t.Nonzero"},
	// Math
	{"add", "t.Add"}, {"sub", "t.Sub"}, {"mul", "t.Mul"}, {"div", "t.Div"}, {"remainder", "t.Rem"}, {"neg", "t.Neg"},
	{"abs", "t.Abs"}, {"sign", "t.Sign"}, {"powf", "t.Pow"}, {"powi", "t.PowScalar"}, {"clamp", "t.Clamp"},
	{"exp", "t.Exp"}, {"log", "t.Log"}, {"log1p", "t.Log1p"}, {"sqrt", "t.Sqrt"}, {"recip", "t.Recip"}, {"erf", "t.Erf"},
	{"sin", "t.Sin"}, {"cos", "t.Cos"}, {"tan", "t.Tan"}, {"asin", "t.Asin"}, {"acos", "t.Acos"}, {"atan", "t.Atan"},
	{"atan2", "t.Atan2"}, {"sinh", "t.Sinh"}, {"cosh", "t.Cosh"}, {"tanh", "t.Tanh"}, {"asinh", "t.Asinh"},
	{"acosh", "t.Acosh"}, {"atanh", "t.Atanh"}, {"floor", "t.Floor"}, {"ceil", "t.Ceil"}, {"round", "t.Round"},
	{"is_nan", "t.IsNaN"}, {"is_inf", "t.IsInf"}, {"bitwise_and", "t.BitwiseAnd"}, {"bitwise_or", "t.BitwiseOr"},
	{"bitwise_xor", "t.BitwiseXor"}, {"bitwise_not", "t.BitwiseNot"}, {"bitwise_left_shift", "t.BitwiseLeftShift"},
	{"bitwise_right_shift", "t.BitwiseRightShift"}, {"bool_and", "t.LogicalAnd"}, {"bool_or", "t.LogicalOr"},
	{"bool_not", "t.LogicalNot"}, {"bool_xor", "t.LogicalXor"},
	// Reductions
	{"sum", "t.Sum"}, {"mean", "t.Mean"}, {"prod", "t.Prod"}, {"max", "t.Max"}, {"max_dim_with_indices", "t.MaxDim"},
	{"min", "t.Min"}, {"min_dim_with_indices", "t.MinDim"}, {"argmax", "t.Argmax"}, {"argmin", "t.Argmin"},
	{"var", "t.Var"}, {"median", "t.Median"}, {"cumsum", "t.Cumsum"}, {"cumprod", "t.Cumprod"}, {"any", "t.Any"},
	{"all", "t.All"}, {"sort", "t.Sort"}, {"argsort", "t.Argsort"}, {"topk", "t.TopK"},
	// Comparisons and products
	{"equal", "t.Eq"}, {"not_equal", "t.Ne"}, {"greater", "t.Gt"}, {"greater_equal", "t.Ge"}, {"lower", "t.Lt"},
	{"lower_equal", "t.Le"}, {"all_close", "t.AllClose"}, {"matmul", "t.Matmul"}, {"dot", "t.Dot"}, {"outer", "t.Outer"},
	// Activations
	{"relu", "t.Relu"}, {"relu6", "t.Relu6"}, {"leaky_relu", "t.LeakyRelu"}, {"prelu", "t.Prelu"}, {"gelu", "t.Gelu"},
	{"gelu (tanh)", "t.GeluTanh"}, {"sigmoid", "t.Sigmoid"}, {"hard_sigmoid", "t.HardSigmoid"},
	{"log_sigmoid", "t.LogSigmoid"}, {"silu", "t.Silu"}, {"hard_swish", "t.HardSwish"}, {"mish", "t.Mish"},
	{"tanh", "t.Tanh"}, {"elu", "t.Elu"}, {"celu", "t.Celu"}, {"selu", "t.Selu"}, {"softmax", "t.Softmax"},
	{"softmin", "t.Softmin"}, {"log_softmax", "t.LogSoftmax"}, {"softplus", "t.Softplus"}, {"softsign", "t.Softsign"},
	{"glu", "t.Glu"}, {"hardtanh", "t.HardTanh"}, {"threshold", "t.Threshold"}, {"softshrink", "t.SoftShrink"},
	{"hardshrink", "t.HardShrink"}, {"tanhshrink", "t.TanhShrink"},
	// Module ops
	{"conv1d", "Conv1d"}, {"conv2d", "Conv2d"}, {"conv3d", "Conv3d"}, {"conv_transpose1d", "ConvTranspose1d"},
	{"conv_transpose2d", "ConvTranspose2d"}, {"conv_transpose3d", "ConvTranspose3d"}, {"deform_conv2d", "DeformConv2d"},
	{"max_pool1d", "MaxPool1d"}, {"max_pool2d", "MaxPool2d"}, {"avg_pool1d", "AvgPool1d"}, {"avg_pool2d", "AvgPool2d"},
	{"adaptive_avg_pool1d", "AdaptiveAvgPool1d"}, {"adaptive_avg_pool2d", "AdaptiveAvgPool2d"},
	{"adaptive_avg_pool3d", "AdaptiveAvgPool3d"}, {"interpolate (nearest)", "Interpolate"},
	{"interpolate (bilinear)", "Interpolate"}, {"interpolate (bicubic)", "Interpolate"}, {"grid_sample", "GridSample"},
	{"fold", "Fold"}, {"unfold4d", "Unfold"}, {"embedding", "Embedding"}, {"linear", "Linear"},
	{"batch_norm", "t.BatchNorm"}, {"layer_norm", "t.LayerNorm"}, {"attention", "ScaledDotProductAttention"},
	{"ctc_loss", "CTCLoss"},
	// Linear algebra and signal
	{"det", "t.Det"}, {"lu", "t.LU"}, {"qr", "t.QR"}, {"trace", "t.Trace"}, {"diag", "t.Diag"}, {"vector_norm", "t.VectorNorm"},
	{"matrix_norm", "t.MatrixNorm"}, {"cosine_similarity", "CosineSimilarity"}, {"rfft", "RFFT"}, {"irfft", "IRFFT"},
	{"stft", "STFT"},
}

func opsMarkdown(all []opFacts) string {
	var b strings.Builder
	have := map[string]bool{}
	var nGrad, nONNX, nDevice, nFixture int
	for _, f := range all {
		have[f.decl.key] = true
		if f.grad {
			nGrad++
		}
		if f.onnx {
			nONNX++
		}
		if !f.host {
			nDevice++
		}
		if len(f.fixtures) > 0 {
			nFixture++
		}
	}
	// Burn's all_close returns a bool, as Kiln's AllClose does: any method
	// counts as a counterpart, not only those returning tensors.
	methods := reflect.TypeOf(&tensor.Tensor{})
	for i := 0; i < methods.NumMethod(); i++ {
		have["t."+methods.Method(i).Name] = true
	}
	burnFor := map[string][]string{}
	for _, p := range burnOps {
		if have[p[1]] {
			burnFor[p[1]] = append(burnFor[p[1]], p[0])
		}
	}
	fmt.Fprintf(&b, "# Kiln's tensor operations\n\n")
	fmt.Fprintf(&b, "Generated from the code by `go test ./tensor -run TestOpsTable -update` (ops_table_test.go); the test fails when this file is stale.\n\n")
	fmt.Fprintf(&b, "Every exported function of package tensor and method of `*Tensor` that returns tensors is listed (methods as `t.Name`). "+
		"Each column is measured by calling the op, not declared: **dtypes** are those it accepts on the CPU device; **grad** is yes when a float64 input gets a gradient through it; "+
		"**ONNX** is yes when `onnx.Trace` exports a module that applies it to its input; **device** is `kernels` when the op runs through the backend contract alone "+
		"(so the CUDA backend runs it with its own kernels) and `host` when its data goes to the host and back; **PyTorch fixtures** names the test files that check it against PyTorch 1.13 values; "+
		"**Burn 0.22** is Burn's name for the same operation.\n\n")
	fmt.Fprintf(&b, "%d operations: %d with gradients, %d exported to ONNX, %d on the device, %d checked against PyTorch fixtures.\n\n", len(all), nGrad, nONNX, nDevice, nFixture)
	fmt.Fprintf(&b, "| Op | File | dtypes | grad | ONNX | device | PyTorch fixtures | Burn 0.22 | What it does |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|\n")
	yes := func(v bool) string {
		if v {
			return "yes"
		}
		return "—"
	}
	for _, f := range all {
		var dts []string
		for _, dt := range f.dtypes {
			dts = append(dts, dtypeShort[dt])
		}
		device := "kernels"
		if f.host {
			device = "host"
		}
		fix := "—"
		if len(f.fixtures) > 0 {
			fix = strings.Join(f.fixtures, ", ")
		}
		burn := "—"
		if bs := burnFor[f.decl.key]; len(bs) > 0 {
			burn = strings.Join(bs, ", ")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s | %s | %s |\n", f.decl.key, f.decl.file, strings.Join(dts, " "),
			yes(f.grad), yes(f.onnx), device, fix, burn, strings.ReplaceAll(f.decl.doc, "|", "\\|"))
	}
	var missing []string
	for _, p := range burnOps {
		if !have[p[1]] {
			missing = append(missing, "`"+p[0]+"`")
		}
	}
	fmt.Fprintf(&b, "\n## Burn 0.22 operations Kiln's tensor package lacks\n\n")
	fmt.Fprintf(&b, "Of the %d operations named in Burn 0.22's list, %d have no counterpart here (some live in `nn` as layers instead): %s.\n",
		len(burnOps), len(missing), strings.Join(missing, ", "))
	return b.String()
}

// debugOp says whether to print why op failed a probe: KILN_OPS_DEBUG
// names the op, or is "all".
func debugOp(op string) bool {
	v := os.Getenv("KILN_OPS_DEBUG")
	return v == op || v == "all"
}
