package nn_test

import (
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// TestLayers2Fixtures checks ConvTranspose1d, the 1-D pooling layers,
// InstanceNorm, PixelShuffle, Upsample and Fold/Unfold against PyTorch
// (testdata/gen_layers2.py): outputs and the gradients of inputs and
// parameters, in float32 and float64.
func TestLayers2Fixtures(t *testing.T) {
	convT := func(in, out, k int, c nn.ConvTransposeConfig) func(tensor.Device, tensor.DType) any {
		return func(dev tensor.Device, dt tensor.DType) any {
			c.DType = dt
			return nn.NewConvTranspose1d(dev, in, out, k, c)
		}
	}
	instance := func(spatial, features int, c nn.InstanceNormConfig) func(tensor.Device, tensor.DType) any {
		return func(dev tensor.Device, dt tensor.DType) any {
			c.DType = dt
			switch spatial {
			case 1:
				return nn.NewInstanceNorm1d(dev, features, c)
			case 2:
				return nn.NewInstanceNorm2d(dev, features, c)
			}
			return nn.NewInstanceNorm3d(dev, features, c)
		}
	}
	stateless := func(m nn.Module) func(tensor.Device, tensor.DType) any {
		return func(tensor.Device, tensor.DType) any { return m }
	}
	deform := func(m any, in []*tensor.Tensor) *tensor.Tensor {
		var mask *tensor.Tensor
		if len(in) > 2 {
			mask = in[2]
		}
		return m.(*nn.DeformConv2d).Forward(in[0], in[1], mask)
	}
	up := func(c tensor.InterpolateConfig) func(tensor.Device, tensor.DType) any {
		return stateless(nn.NewUpsample(c))
	}
	runFixtureCases(t, "layers2.json", []fixtureCase{
		{name: "conv_transpose1d", build: convT(3, 2, 3, nn.ConvTransposeConfig{})},
		{name: "conv_transpose1d stride padding output padding dilation", build: convT(2, 3, 3, nn.ConvTransposeConfig{
			Stride: []int{3}, Padding: []int{2}, OutputPadding: []int{1}, Dilation: []int{2}})},
		{name: "conv_transpose1d groups no bias", build: convT(4, 6, 2,
			nn.ConvTransposeConfig{Stride: []int{2}, Groups: 2, NoBias: true})},
		{name: "conv_transpose1d unbatched", build: convT(2, 1, 3, nn.ConvTransposeConfig{Padding: []int{1}})},
		{name: "max_pool1d", build: stateless(nn.NewMaxPool1d(2))},
		{name: "max_pool1d stride padding dilation ceil", build: stateless(nn.NewMaxPool1d(3, tensor.PoolConfig{
			Stride: []int{2}, Padding: []int{1}, Dilation: []int{2}, CeilMode: true}))},
		{name: "max_pool1d unbatched", build: stateless(nn.NewMaxPool1d(3, tensor.PoolConfig{Stride: []int{1}}))},
		{name: "avg_pool1d", build: stateless(nn.NewAvgPool1d(3))},
		{name: "avg_pool1d padding exclude ceil", build: stateless(nn.NewAvgPool1d(3, tensor.AvgPoolConfig{
			Stride: []int{2}, Padding: []int{1}, CeilMode: true, ExcludePad: true}))},
		{name: "avg_pool1d padding include", build: stateless(nn.NewAvgPool1d(4, tensor.AvgPoolConfig{
			Stride: []int{3}, Padding: []int{2}}))},
		{name: "adaptive_avg_pool1d", build: stateless(nn.NewAdaptiveAvgPool1d(4))},
		{name: "adaptive_avg_pool1d larger output", build: stateless(nn.NewAdaptiveAvgPool1d(7))},
		{name: "adaptive_max_pool1d", build: stateless(nn.NewAdaptiveMaxPool1d(3))},
		{name: "adaptive_max_pool1d unbatched", build: stateless(nn.NewAdaptiveMaxPool1d(5))},
		{name: "instance_norm1d", build: instance(1, 3, nn.InstanceNormConfig{})},
		{name: "instance_norm1d affine unbatched", build: instance(1, 3, nn.InstanceNormConfig{Affine: true, Eps: 1e-3})},
		{name: "instance_norm2d", build: instance(2, 2, nn.InstanceNormConfig{})},
		{name: "instance_norm2d affine", build: instance(2, 3, nn.InstanceNormConfig{Affine: true})},
		{name: "instance_norm3d affine", build: instance(3, 2, nn.InstanceNormConfig{Affine: true})},
		{name: "instance_norm3d unbatched", build: instance(3, 2, nn.InstanceNormConfig{})},
		{name: "pixel_shuffle", build: stateless(nn.NewPixelShuffle(2))},
		{name: "pixel_unshuffle", build: stateless(nn.NewPixelUnshuffle(3))},
		{name: "upsample nearest scale", build: up(tensor.InterpolateConfig{ScaleFactor: []float64{2}})},
		{name: "upsample nearest size 1d", build: up(tensor.InterpolateConfig{Size: []int{7}})},
		{name: "upsample linear align corners", build: up(tensor.InterpolateConfig{ScaleFactor: []float64{2.5},
			Mode: "linear", AlignCorners: true})},
		{name: "upsample bilinear", build: up(tensor.InterpolateConfig{Size: []int{5, 7}, Mode: "bilinear"})},
		{name: "upsample bicubic", build: up(tensor.InterpolateConfig{ScaleFactor: []float64{2}, Mode: "bicubic"})},
		{name: "upsample bicubic align corners", build: up(tensor.InterpolateConfig{Size: []int{4, 6}, Mode: "bicubic",
			AlignCorners: true})},
		{name: "unfold", build: stateless(nn.NewUnfold(2, tensor.FoldConfig{Padding: []int{1}, Stride: []int{2}}))},
		{name: "unfold rectangular dilation", build: stateless(nn.NewUnfold(0, tensor.FoldConfig{Kernel: []int{2, 3},
			Dilation: []int{2, 1}}))},
		{name: "fold", build: stateless(nn.NewFold([]int{4, 5}, 2))},
		{name: "fold stride padding", build: stateless(nn.NewFold([]int{5}, 3, tensor.FoldConfig{Padding: []int{1},
			Stride: []int{2}}))},
		{name: "unfold fold round trip", build: stateless(nn.NewSequential(
			nn.NewUnfold(3, tensor.FoldConfig{Padding: []int{1}}),
			nn.NewFold([]int{4, 4}, 3, tensor.FoldConfig{Padding: []int{1}})))},
		{name: "deform_conv2d", forward: deform, build: func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewDeformConv2d(dev, 3, 4, 3, nn.DeformConvConfig{Padding: []int{1}, DType: dt})
		}},
		{name: "deform_conv2d groups offset groups stride dilation v1", forward: deform,
			build: func(dev tensor.Device, dt tensor.DType) any {
				return nn.NewDeformConv2d(dev, 4, 2, 0, nn.DeformConvConfig{Kernel: []int{2, 3}, Stride: []int{1, 2},
					Dilation: []int{2, 1}, Groups: 2, NoBias: true, DType: dt})
			}},
	}, "tracked", "rnn")
}

// TestTrackedInstanceNormFixtures runs instance norms with running
// statistics through training steps, checks the running statistics
// against PyTorch's, then a step in evaluation mode.
func TestTrackedInstanceNormFixtures(t *testing.T) {
	cases := []struct {
		name  string
		build func(dev tensor.Device, dt tensor.DType) any
	}{
		{"tracked instance_norm1d", func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewInstanceNorm1d(dev, 3, nn.InstanceNormConfig{TrackRunningStats: true, DType: dt})
		}},
		{"tracked instance_norm2d affine momentum", func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewInstanceNorm2d(dev, 2, nn.InstanceNormConfig{TrackRunningStats: true, Affine: true, Momentum: 0.3,
				Eps: 1e-3, DType: dt})
		}},
		{"tracked instance_norm3d", func(dev tensor.Device, dt tensor.DType) any {
			return nn.NewInstanceNorm3d(dev, 2, nn.InstanceNormConfig{TrackRunningStats: true, DType: dt})
		}},
	}
	fixtures := testutil.LoadFixtures(t, "layers2.json")
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
						if _, ok := c[step+"x0"]; ok {
							fixtureStep(t, ad, m, fc, c, step, dt)
						}
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

// TestLayers2GradCheck checks input and parameter gradients of the
// composed layers against finite differences.
func TestLayers2GradCheck(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		in := nn.NewInstanceNorm2d(ad, 2, nn.InstanceNormConfig{Affine: true, DType: tensor.Float64})
		testutil.GradCheck(t, dev, func(x []*tensor.Tensor) *tensor.Tensor {
			in.Weight.Tensor, in.Bias.Tensor = x[1], x[2]
			return in.Forward(x[0])
		}, testutil.RandFloat64(dev, 1, -1, 1, 2, 2, 3, 2), testutil.RandFloat64(dev, 2, 0.5, 1.5, 2),
			testutil.RandFloat64(dev, 3, -1, 1, 2))
		in3 := nn.NewInstanceNorm3d(ad, 2, nn.InstanceNormConfig{DType: tensor.Float64})
		testutil.GradCheck(t, dev, func(x []*tensor.Tensor) *tensor.Tensor {
			return in3.Forward(x[0].Transpose(1, 3))
		}, testutil.RandFloat64(dev, 4, -1, 1, 1, 3, 2, 2))
		tracked := nn.NewInstanceNorm1d(ad, 2, nn.InstanceNormConfig{TrackRunningStats: true, DType: tensor.Float64})
		tracked.Forward(testutil.RandFloat64(ad, 5, -1, 1, 3, 2, 4))
		nn.Eval(tracked)
		testutil.GradCheck(t, dev, func(x []*tensor.Tensor) *tensor.Tensor { return tracked.Forward(x[0]) },
			testutil.RandFloat64(dev, 6, -1, 1, 2, 2, 3))
		ct := nn.NewConvTranspose1d(ad, 2, 4, 3, nn.ConvTransposeConfig{Stride: []int{2}, Groups: 2, DType: tensor.Float64})
		testutil.GradCheck(t, dev, func(x []*tensor.Tensor) *tensor.Tensor {
			ct.Weight.Tensor, ct.Bias.Tensor = x[1], x[2]
			return ct.Forward(x[0])
		}, testutil.RandFloat64(dev, 7, -1, 1, 2, 2, 3), testutil.RandFloat64(dev, 8, -1, 1, 2, 2, 3),
			testutil.RandFloat64(dev, 9, -1, 1, 4))
		up := nn.NewUpsample(tensor.InterpolateConfig{ScaleFactor: []float64{1.5}, Mode: "bicubic"})
		testutil.GradCheck(t, dev, func(x []*tensor.Tensor) *tensor.Tensor { return up.Forward(x[0]) },
			testutil.RandFloat64(dev, 10, -1, 1, 1, 1, 3, 2))
	})
}

// TestInstanceNormRunningStatsUpdate checks the running statistics by
// hand: one sample of one channel with values 1, 2, 3, 6 has mean 3 and
// unbiased variance 14/3.
func TestInstanceNormRunningStatsUpdate(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		n := nn.NewInstanceNorm1d(dev, 1, nn.InstanceNormConfig{TrackRunningStats: true, Momentum: 0.5})
		n.Forward(tensor.FromFloat32s(dev, []float32{1, 2, 3, 6}, 1, 1, 4))
		assertValues(t, "running mean", n.RunningMean.Tensor, []float64{1.5})
		assertValues(t, "running var", n.RunningVar.Tensor, []float64{0.5 + 0.5*14.0/3})
		if got := n.NumBatchesTracked.Item(); got != 0 {
			t.Errorf("num_batches_tracked %v, want 0 (PyTorch's InstanceNorm never counts)", got)
		}
		nn.Eval(n)
		y := n.Forward(tensor.FromFloat32s(dev, []float32{1.5, 1.5}, 1, 1, 2))
		assertValues(t, "eval output", y, []float64{0, 0})
	})
}

func TestLayers2StateDictNames(t *testing.T) {
	dev := tensor.CPU()
	cases := []struct {
		name string
		m    any
		keys []string
	}{
		{"conv_transpose1d", nn.NewConvTranspose1d(dev, 2, 3, 3), []string{"bias", "weight"}},
		{"instance_norm default", nn.NewInstanceNorm2d(dev, 3), nil},
		{"deform_conv2d", nn.NewDeformConv2d(dev, 2, 4, 3), []string{"bias", "weight"}},
		{"instance_norm affine tracked", nn.NewInstanceNorm3d(dev, 3, nn.InstanceNormConfig{Affine: true,
			TrackRunningStats: true}), []string{"bias", "num_batches_tracked", "running_mean", "running_var", "weight"}},
		{"pooling", nn.NewSequential(nn.NewMaxPool1d(2), nn.NewAvgPool1d(2), nn.NewAdaptiveAvgPool1d(2),
			nn.NewAdaptiveMaxPool1d(2), nn.NewPixelShuffle(2), nn.NewPixelUnshuffle(2), nn.NewUnfold(2),
			nn.NewFold([]int{2}, 1), nn.NewUpsample(tensor.InterpolateConfig{Size: []int{2}})), nil},
	}
	for _, c := range cases {
		sd := nn.StateDict(c.m)
		if len(sd) != len(c.keys) {
			t.Errorf("%s: state dict has %d keys, want %v", c.name, len(sd), c.keys)
		}
		for _, k := range c.keys {
			if _, ok := sd[k]; !ok {
				t.Errorf("%s: no key %q in %v", c.name, k, sd)
			}
		}
	}
}

func TestLayers2BadInputs(t *testing.T) {
	z := func(d tensor.Device, shape ...int) *tensor.Tensor { return tensor.Zeros(d, shape...) }
	runBadInputs(t, []badInput{
		{"conv_transpose1d output padding", "nn.NewConvTranspose1d", tensor.ErrArgument,
			[]string{"OutputPadding [2] must be smaller than the stride [2]"}, func(d tensor.Device) {
				nn.NewConvTranspose1d(d, 2, 2, 3, nn.ConvTransposeConfig{Stride: []int{2}, OutputPadding: []int{2}})
			}},
		{"conv_transpose1d two strides", "nn.NewConvTranspose1d", tensor.ErrArgument, []string{"Stride [1 2]"},
			func(d tensor.Device) {
				nn.NewConvTranspose1d(d, 2, 2, 3, nn.ConvTransposeConfig{Stride: []int{1, 2}})
			}},
		{"conv_transpose1d channels", "nn.ConvTranspose1d", tensor.ErrShape, []string{"[N, 2, L]", "[1 3 5]"},
			func(d tensor.Device) { nn.NewConvTranspose1d(d, 2, 2, 3).Forward(z(d, 1, 3, 5)) }},
		{"max_pool1d rank", "nn.MaxPool1d", tensor.ErrShape, []string{"[N, C, L] or [C, L]", "[1 1 4 4]"},
			func(d tensor.Device) { nn.NewMaxPool1d(2).Forward(z(d, 1, 1, 4, 4)) }},
		{"max_pool1d padding", "nn.NewMaxPool1d", tensor.ErrArgument, []string{"at most half the kernel"},
			func(tensor.Device) { nn.NewMaxPool1d(2, tensor.PoolConfig{Padding: []int{2}}) }},
		{"avg_pool1d divisor", "nn.NewAvgPool1d", tensor.ErrArgument, []string{"no divisor override"},
			func(tensor.Device) { nn.NewAvgPool1d(2, tensor.AvgPoolConfig{DivisorOverride: 3}) }},
		{"adaptive_max_pool1d negative", "nn.NewAdaptiveMaxPool1d", tensor.ErrArgument, []string{"-2"},
			func(tensor.Device) { nn.NewAdaptiveMaxPool1d(-2) }},
		{"adaptive_avg_pool1d rank", "nn.AdaptiveAvgPool1d", tensor.ErrShape, []string{"[4]"},
			func(d tensor.Device) { nn.NewAdaptiveAvgPool1d(2).Forward(z(d, 4)) }},
		{"instance_norm channels", "nn.InstanceNorm2d", tensor.ErrShape, []string{"expects 3 channels", "[1 2 4 4]"},
			func(d tensor.Device) {
				nn.NewInstanceNorm2d(d, 3, nn.InstanceNormConfig{Affine: true}).Forward(z(d, 1, 2, 4, 4))
			}},
		{"instance_norm rank", "nn.InstanceNorm3d", tensor.ErrShape, []string{"[N, C, D, H, W] or [C, D, H, W]"},
			func(d tensor.Device) { nn.NewInstanceNorm3d(d, 3).Forward(z(d, 3, 4, 4)) }},
		{"instance_norm one position", "nn.InstanceNorm1d", tensor.ErrShape, []string{"more than 1 spatial position"},
			func(d tensor.Device) { nn.NewInstanceNorm1d(d, 2).Forward(z(d, 3, 2, 1)) }},
		{"instance_norm integer", "nn.InstanceNorm1d", tensor.ErrDType, []string{"int64"},
			func(d tensor.Device) { nn.NewInstanceNorm1d(d, 2).Forward(tensor.ZerosOf(d, tensor.Int64, 1, 2, 3)) }},
		{"instance_norm momentum", "nn.NewInstanceNorm1d", tensor.ErrArgument, []string{"Momentum 2"},
			func(d tensor.Device) { nn.NewInstanceNorm1d(d, 2, nn.InstanceNormConfig{Momentum: 2}) }},
		{"pixel_shuffle factor", "nn.NewPixelShuffle", tensor.ErrArgument, []string{"upscale factor 0"},
			func(tensor.Device) { nn.NewPixelShuffle(0) }},
		{"pixel_shuffle channels", "tensor.PixelShuffle", tensor.ErrShape, []string{"5 channels"},
			func(d tensor.Device) { nn.NewPixelShuffle(2).Forward(z(d, 1, 5, 2, 2)) }},
		{"upsample both", "nn.NewUpsample", tensor.ErrArgument, []string{"not both"}, func(tensor.Device) {
			nn.NewUpsample(tensor.InterpolateConfig{Size: []int{2}, ScaleFactor: []float64{2}})
		}},
		{"upsample mode", "nn.NewUpsample", tensor.ErrArgument, []string{"unknown Mode \"trilinear\""}, func(tensor.Device) {
			nn.NewUpsample(tensor.InterpolateConfig{Size: []int{2}, Mode: "trilinear"})
		}},
		{"upsample bicubic 1-D", "tensor.Interpolate", tensor.ErrArgument, []string{"needs a 4-D input"},
			func(d tensor.Device) {
				nn.NewUpsample(tensor.InterpolateConfig{Size: []int{2}, Mode: "bicubic"}).Forward(z(d, 1, 1, 3))
			}},
		{"unfold kernel", "nn.NewUnfold", tensor.ErrArgument, []string{"kernel size must be positive"},
			func(tensor.Device) { nn.NewUnfold(0) }},
		{"fold output size", "nn.NewFold", tensor.ErrArgument, []string{"output size [1 2 3]"},
			func(tensor.Device) { nn.NewFold([]int{1, 2, 3}, 2) }},
		{"deform_conv2d channels", "nn.DeformConv2d", tensor.ErrShape, []string{"[N, 4, H, W]", "[1 3 5 5]"},
			func(d tensor.Device) {
				nn.NewDeformConv2d(d, 4, 2, 3, nn.DeformConvConfig{Groups: 2}).Forward(z(d, 1, 3, 5, 5), z(d, 1, 18, 3, 3), nil)
			}},
		{"deform_conv2d groups", "nn.NewDeformConv2d", tensor.ErrArgument, []string{"Groups 2"},
			func(d tensor.Device) { nn.NewDeformConv2d(d, 3, 2, 3, nn.DeformConvConfig{Groups: 2}) }},
		{"deform_conv2d offsets", "tensor.DeformConv2d", tensor.ErrShape, []string{"offset [1 9 3 3]"},
			func(d tensor.Device) { nn.NewDeformConv2d(d, 3, 2, 3).Forward(z(d, 1, 3, 5, 5), z(d, 1, 9, 3, 3), nil) }},
		{"fold blocks", "tensor.Fold", tensor.ErrShape, []string{"blocks"},
			func(d tensor.Device) { nn.NewFold([]int{3, 3}, 2).Forward(z(d, 1, 4, 5)) }},
	})
}
