package nn_test

import (
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

func TestLayerFixtures(t *testing.T) {
	conv2d := func(in, out, k int, c nn.ConvConfig) func(tensor.Device, tensor.DType) any {
		return func(dev tensor.Device, dt tensor.DType) any {
			c.DType = dt
			return nn.NewConv2d(dev, in, out, k, c)
		}
	}
	conv1d := func(in, out, k int, c nn.ConvConfig) func(tensor.Device, tensor.DType) any {
		return func(dev tensor.Device, dt tensor.DType) any {
			c.DType = dt
			return nn.NewConv1d(dev, in, out, k, c)
		}
	}
	convT := func(in, out, k int, c nn.ConvTransposeConfig) func(tensor.Device, tensor.DType) any {
		return func(dev tensor.Device, dt tensor.DType) any {
			c.DType = dt
			return nn.NewConvTranspose2d(dev, in, out, k, c)
		}
	}
	stateless := func(m nn.Module) func(tensor.Device, tensor.DType) any {
		return func(tensor.Device, tensor.DType) any { return m }
	}
	bilinear := func(m any, in []*tensor.Tensor) *tensor.Tensor { return m.(*nn.Bilinear).Forward(in[0], in[1]) }
	runFixtureCases(t, "layers.json", []fixtureCase{
		{name: "linear", build: func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewLinear(dev, 4, 3, nn.LinearConfig{DType: dt})
		}},
		{name: "linear no bias", build: func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewLinear(dev, 3, 2, nn.LinearConfig{NoBias: true, DType: dt})
		}},
		{name: "bilinear", forward: bilinear, build: func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewBilinear(dev, 3, 4, 2, nn.BilinearConfig{DType: dt})
		}},
		{name: "bilinear batch dims no bias", forward: bilinear, build: func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewBilinear(dev, 2, 3, 4, nn.BilinearConfig{NoBias: true, DType: dt})
		}},
		{name: "embedding", build: func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewEmbedding(dev, 7, 3, nn.EmbeddingConfig{DType: dt})
		}},
		{name: "embedding padding", build: func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewEmbedding(dev, 6, 3, nn.EmbeddingConfig{Padded: true, PaddingIndex: 1, DType: dt})
		}},
		{name: "embedding negative padding", build: func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewEmbedding(dev, 5, 2, nn.EmbeddingConfig{Padded: true, PaddingIndex: -1, DType: dt})
		}},
		{name: "conv2d", build: conv2d(3, 4, 3, nn.ConvConfig{})},
		{name: "conv2d stride padding", build: conv2d(2, 3, 3, nn.ConvConfig{Stride: []int{2}, Padding: []int{1}})},
		{name: "conv2d rectangular", build: conv2d(2, 2, 0,
			nn.ConvConfig{Kernel: []int{3, 2}, Stride: []int{2, 1}, Padding: []int{1, 0}})},
		{name: "conv2d same even kernel", build: conv2d(2, 3, 0, nn.ConvConfig{Kernel: []int{4, 2}, Same: true, NoBias: true})},
		{name: "conv2d dilation", build: conv2d(2, 2, 3, nn.ConvConfig{Dilation: []int{2}, Padding: []int{2}})},
		{name: "conv2d groups", build: conv2d(4, 6, 3, nn.ConvConfig{Groups: 2, Padding: []int{1}})},
		{name: "conv2d depthwise", build: conv2d(3, 3, 3, nn.ConvConfig{Groups: 3})},
		{name: "conv2d reflect", build: conv2d(2, 2, 3, nn.ConvConfig{Padding: []int{1}, PaddingMode: "reflect"})},
		{name: "conv2d replicate", build: conv2d(2, 2, 3, nn.ConvConfig{Padding: []int{2, 1}, PaddingMode: "replicate"})},
		{name: "conv2d circular same", build: conv2d(2, 2, 0,
			nn.ConvConfig{Kernel: []int{2, 3}, Same: true, PaddingMode: "circular"})},
		{name: "conv2d unbatched", build: conv2d(2, 3, 2, nn.ConvConfig{})},
		{name: "conv1d", build: conv1d(3, 4, 3, nn.ConvConfig{Stride: []int{2}, Padding: []int{1}})},
		{name: "conv1d same dilation groups", build: conv1d(4, 2, 3,
			nn.ConvConfig{Same: true, Dilation: []int{2}, Groups: 2})},
		{name: "conv1d reflect", build: conv1d(2, 2, 3, nn.ConvConfig{Padding: []int{2}, PaddingMode: "reflect", NoBias: true})},
		{name: "conv_transpose2d", build: convT(3, 2, 3, nn.ConvTransposeConfig{})},
		{name: "conv_transpose2d stride output padding", build: convT(2, 3, 3,
			nn.ConvTransposeConfig{Stride: []int{2}, Padding: []int{1}, OutputPadding: []int{1}})},
		{name: "conv_transpose2d groups dilation no bias", build: convT(4, 2, 2,
			nn.ConvTransposeConfig{Groups: 2, Dilation: []int{2}, NoBias: true})},
		{name: "max_pool2d", build: stateless(nn.NewMaxPool2d(2))},
		{name: "max_pool2d stride padding dilation ceil", build: stateless(nn.NewMaxPool2d(3,
			tensor.PoolConfig{Stride: []int{2}, Padding: []int{1}, CeilMode: true}))},
		{name: "avg_pool2d", build: stateless(nn.NewAvgPool2d(2))},
		{name: "avg_pool2d padding exclude ceil", build: stateless(nn.NewAvgPool2d(3,
			tensor.AvgPoolConfig{Stride: []int{2}, Padding: []int{1}, CeilMode: true, ExcludePad: true}))},
		{name: "avg_pool2d divisor", build: stateless(nn.NewAvgPool2d(0,
			tensor.AvgPoolConfig{Kernel: []int{2, 3}, DivisorOverride: 4}))},
		{name: "adaptive_avg_pool2d", build: stateless(nn.NewAdaptiveAvgPool2d(3, 2))},
		{name: "adaptive_avg_pool2d keep width", build: stateless(nn.NewAdaptiveAvgPool2d(2, 0))},
		{name: "flatten", build: stateless(nn.NewFlatten())},
		{name: "flatten middle", build: stateless(nn.NewFlatten(1, 2))},
		{name: "sequential cnn", build: func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewSequential(
				nn.NewConv2d(dev, 1, 2, 3, nn.ConvConfig{Padding: []int{1}, DType: dt}),
				nn.ReLU{},
				nn.NewMaxPool2d(2),
				nn.NewFlatten(),
				nn.NewLinear(dev, 8, 3, nn.LinearConfig{DType: dt}),
			)
		}},
	})
}

func TestNormFixtures(t *testing.T) {
	runFixtureCases(t, "norm.json", []fixtureCase{
		{name: "layer_norm", build: func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewLayerNorm(dev, []int{5}, nn.LayerNormConfig{DType: dt})
		}},
		{name: "layer_norm two dims", build: func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewLayerNorm(dev, []int{2, 3}, nn.LayerNormConfig{Eps: 1e-3, DType: dt})
		}},
		{name: "layer_norm no affine", build: func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewLayerNorm(dev, []int{4}, nn.LayerNormConfig{NoAffine: true})
		}},
		{name: "group_norm", build: func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewGroupNorm(dev, 2, 4, nn.GroupNormConfig{DType: dt})
		}},
		{name: "group_norm 1d one group eps", build: func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewGroupNorm(dev, 1, 3, nn.GroupNormConfig{Eps: 1e-3, DType: dt})
		}},
		{name: "group_norm instance no affine", build: func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewGroupNorm(dev, 3, 3, nn.GroupNormConfig{NoAffine: true})
		}},
		{name: "rms_norm", build: func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewRMSNorm(dev, []int{6}, nn.RMSNormConfig{Eps: 1e-6, DType: dt})
		}},
		{name: "rms_norm two dims no affine", build: func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewRMSNorm(dev, []int{2, 3}, nn.RMSNormConfig{Eps: 1e-3, NoAffine: true})
		}},
		{name: "rms_norm default eps float32", dtypes: []tensor.DType{tensor.Float32},
			build: func(dev tensor.Device, dt tensor.DType) any { return nn.NewRMSNorm(dev, []int{4}) }},
		{name: "rms_norm default eps float64", dtypes: []tensor.DType{tensor.Float64},
			build: func(dev tensor.Device, dt tensor.DType) any {
				return nn.NewRMSNorm(dev, []int{4}, nn.RMSNormConfig{DType: dt})
			}},
	}, "batch_norm")
}

func TestActivationFixtures(t *testing.T) {
	act := func(name string, m nn.Module) fixtureCase {
		return fixtureCase{name: name, build: func(tensor.Device, tensor.DType) any { return m }}
	}
	runFixtureCases(t, "activations.json", []fixtureCase{
		act("relu", nn.ReLU{}),
		act("leaky_relu", nn.LeakyReLU{}),
		act("leaky_relu 0.2", nn.NewLeakyReLU(0.2)),
		act("relu6", nn.ReLU6{}),
		act("elu", nn.ELU{}),
		act("elu 0.5", nn.NewELU(0.5)),
		act("selu", nn.SELU{}),
		act("celu", nn.CELU{}),
		act("celu 2", nn.NewCELU(2)),
		act("gelu", nn.GELU{}),
		act("gelu tanh", nn.NewGELU("tanh")),
		act("sigmoid", nn.Sigmoid{}),
		act("log_sigmoid", nn.LogSigmoid{}),
		// PyTorch 1.13's hardsigmoid backward multiplies by 1/6 rounded to
		// float32, in float64 too.
		{name: "hardsigmoid", build: func(tensor.Device, tensor.DType) any { return nn.Hardsigmoid{} }, loose64: 1e-7},
		act("silu", nn.SiLU{}),
		act("hardswish", nn.Hardswish{}),
		act("mish", nn.Mish{}),
		act("softplus", nn.Softplus{}),
		act("softplus beta threshold", nn.NewSoftplus(2, 3)),
		act("softsign", nn.Softsign{}),
		act("tanh", nn.Tanh{}),
		act("softmax", nn.NewSoftmax(1)),
		act("softmax dim 0", nn.NewSoftmax(0)),
		act("log_softmax", nn.NewLogSoftmax(-1)),
		act("identity", nn.Identity{}),
	})
}

// TestBatchNormFixtures runs three training steps, checking each step's
// output and gradients, then the running statistics and batch count
// against PyTorch's, then a step in evaluation mode.
func TestBatchNormFixtures(t *testing.T) {
	cases := []struct {
		name  string
		build func(dev tensor.Device, dt tensor.DType) any
	}{
		{"batch_norm1d", func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewBatchNorm1d(dev, 3, nn.BatchNormConfig{DType: dt})
		}},
		{"batch_norm1d 3d momentum", func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewBatchNorm1d(dev, 2, nn.BatchNormConfig{Momentum: 0.3, Eps: 1e-3, DType: dt})
		}},
		{"batch_norm1d cumulative", func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewBatchNorm1d(dev, 3, nn.BatchNormConfig{CumulativeAverage: true, DType: dt})
		}},
		{"batch_norm2d", func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewBatchNorm2d(dev, 3, nn.BatchNormConfig{DType: dt})
		}},
		{"batch_norm2d no affine", func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewBatchNorm2d(dev, 2, nn.BatchNormConfig{NoAffine: true, DType: dt})
		}},
		{"batch_norm2d no running stats", func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewBatchNorm2d(dev, 2, nn.BatchNormConfig{NoTrackRunningStats: true, DType: dt})
		}},
	}
	fixtures := testutil.LoadFixtures(t, "norm.json")
	for _, bc := range cases {
		c, ok := fixtures[bc.name]
		if !ok {
			t.Errorf("no fixture %q", bc.name)
			continue
		}
		t.Run(bc.name, func(t *testing.T) {
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				forEachDType(t, []tensor.DType{tensor.Float32, tensor.Float64}, func(t *testing.T, dt tensor.DType) {
					ad := dev.Autodiff()
					m := bc.build(ad, dt)
					loadFixtureState(t, m, c, "sd.", dev)
					fc := fixtureCase{name: bc.name}
					for _, step := range []string{"train0.", "train1.", "train2."} {
						fixtureStep(t, ad, m, fc, c, step, dt)
					}
					rtol, atol := tolerances(dt)
					after := stateDict(dev, c, "after.")
					sd := nn.StateDict(m)
					if len(sd) != len(after) {
						t.Errorf("state dict has %d keys, PyTorch's %d", len(sd), len(after))
					}
					for k, want := range after {
						got, ok := sd[k]
						if !ok {
							t.Errorf("no %s in the state dict", k)
							continue
						}
						if k == "num_batches_tracked" {
							if got.DType() != tensor.Int64 || got.Dims() != 0 || got.Item() != want.Item() {
								t.Errorf("num_batches_tracked %v, want %v", got, want)
							}
							continue
						}
						testutil.AssertClose(t, "after "+k, got, c["after."+k], rtol, atol)
					}
					nn.Eval(m)
					fixtureStep(t, ad, m, fc, c, "eval.", dt)
				})
			})
		})
	}
}
