package cpu

import "github.com/kiln-ml/kiln/backends"

// Convolutions for bfloat16 autocast. A BFloat16 Autocast view keeps a
// convolution's tensors in float32 on this backend (tensor's
// autocastConvF32) and calls these: Conv2d, Conv2dInputGrad and
// Conv2dWeightGrad on Float32 views whose GEMMs round their operands to
// bfloat16 as they pack them and sum the exact products in float32 (the
// bfloat16 GEMM of MatmulBF16, VDPBF16PS), where that is faster than this
// machine's float32 paths; elsewhere they are the float32 kernels
// themselves. On a Zen 4 core (BenchmarkResNetConvs, path=bf16 against
// path=new, one run) the bfloat16 GEMM path ran the forward pass and both
// gradients of ResNet-18's layers with 64 to 512 channels 1.05 to 1.83
// times as fast as the float32 direct and tap paths, but for one (0.92,
// a 3×3 weight gradient with 256 channels); the stem (3 input channels)
// and the MNIST CNN's layers (1 and 16) ran slower in most directions
// (0.38 to 0.95; their input gradients 1.03 to 1.47), hence
// convBF16Pays.

// convBF16Hardware: the CPU has AVX-512 BF16 (gemm_bf16_amd64.go), so
// the bfloat16 GEMM runs at up to twice the float32 one's rate.
var convBF16Hardware bool

// convBF16Force makes every Float32 convolution of the BF16 methods take
// the bfloat16 GEMM path (the tests', on any machine).
var convBF16Force bool

// convBF16Pays reports whether a convolution g with o output channels
// runs faster with bfloat16 products than on this machine's float32 paths:
// with AVX-512 BF16, at least 32 input and 64 output channels, and not on
// the Winograd path, which ran faster in float32 than the bfloat16 GEMM
// path on every layer it takes (ResNet-18's 3×3 layers with 64 to 256
// channels: 1.03 to 1.69 times as fast on a Zen 4, BenchmarkResNetConvs
// paths bf16 and wino, one run).
func convBF16Pays(g backends.ConvGeometry, o int) bool {
	return convBF16Force || convBF16Hardware && g.C >= 32 && o >= 64 && !useConvWino(g, o)
}

// Conv2dBF16 is Conv2d for bfloat16 autocast on Float32 views: the
// products of x and w rounded to bfloat16, summed in float32, where
// convBF16Pays; elsewhere Conv2d itself. Each output element is then the
// bfloat16 GEMM's sum over the unfolded window, whose order depends only
// on the shapes.
func (b *Backend) Conv2dBF16(out, x, w backends.View, g backends.ConvGeometry) {
	if !b.convBF16(out, out, g, dim(out, 1)) {
		b.Conv2d(out, x, w, g)
		return
	}
	convKernels{f32: func(b *Backend, out, x, w []float32, g backends.ConvGeometry, o int) {
		convForwardCols(b, out, x, w, g, o, true)
	}}.run(b, "conv2d", out, x, w, g, dim(out, 1))
}

// Conv2dInputGradBF16 is Conv2dInputGrad for bfloat16 autocast, as
// Conv2dBF16 is Conv2d's: dy and w rounded to bfloat16 where
// convBF16Pays.
func (b *Backend) Conv2dInputGradBF16(dx, dy, w backends.View, g backends.ConvGeometry) {
	if !b.convBF16(dx, dy, g, dim(dy, 1)) {
		b.Conv2dInputGrad(dx, dy, w, g)
		return
	}
	convKernels{f32: func(b *Backend, dx, dy, w []float32, g backends.ConvGeometry, o int) {
		convInputGradCols(b, dx, dy, w, g, o, true)
	}}.run(b, "conv2d input grad", dx, dy, w, g, dim(dy, 1))
}

// Conv2dWeightGradBF16 is Conv2dWeightGrad for bfloat16 autocast, as
// Conv2dBF16 is Conv2d's: dy and the unfolded x rounded to bfloat16 where
// convBF16Pays; the chunks' partial sums are added in float32.
func (b *Backend) Conv2dWeightGradBF16(dw, dy, x backends.View, g backends.ConvGeometry) {
	if !b.convBF16(dw, dy, g, dim(dy, 1)) {
		b.Conv2dWeightGrad(dw, dy, x, g)
		return
	}
	convKernels{f32: func(b *Backend, dw, dy, x []float32, g backends.ConvGeometry, o int) {
		convWeightGradCols(b, dw, dy, x, g, o, true)
	}}.run(b, "conv2d weight grad", dw, dy, x, g, dim(dy, 1))
}

// convBF16 reports whether a BF16 method's call takes the bfloat16 path:
// Float32 views (out and the view with o's channels, dy or out) and
// convBF16Pays. Other dtypes take the float32 methods, which refuse what
// they do not take.
func (b *Backend) convBF16(out, withO backends.View, g backends.ConvGeometry, o int) bool {
	return out.DType == backends.Float32 && withO.DType == backends.Float32 && o > 0 && convBF16Pays(g, o)
}
