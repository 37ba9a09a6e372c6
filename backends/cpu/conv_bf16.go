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
// runs faster on the GEMM path with bfloat16 products than on this
// machine's float32 paths: with AVX-512 BF16, at least 32 input and 64
// output channels, and not where the Winograd path takes the layer (then
// it runs with bfloat16 products itself: convBF16Wino).
func convBF16Pays(g backends.ConvGeometry, o int) bool {
	return convBF16Force || convBF16Hardware && g.C >= 32 && o >= 64 && !useConvWino(g, o)
}

// convBF16Wino reports whether a convolution g with o output channels
// takes the Winograd path with bfloat16 products (the 16 GEMMs' operands,
// the transformed tiles and filters, rounded to bfloat16): with AVX-512
// BF16 where useConvWino takes the layer. On a Zen 4 core that ran
// ResNet-18's 3×3 layers with 64 to 256 channels 1.35 to 2.1 times as
// fast as the float32 Winograd path (BenchmarkResNetConvs, paths default
// and autocast, one quiet run), and faster than the bfloat16 GEMM path
// on each layer and direction (1.1 to 2.4 times, one run beside other
// load).
func convBF16Wino(g backends.ConvGeometry, o int) bool {
	return !convBF16Force && convBF16Hardware && useConvWino(g, o)
}

// The ways a BF16 method computes a call (convBF16Path).
const (
	convF32Path      = iota // the float32 method
	convBF16GEMM            // the GEMM path with bfloat16 products
	convBF16Winograd        // the Winograd path with bfloat16 products
)

// convBF16Path returns how a BF16 method computes a call: on Float32
// views (out and the view with o's channels, dy or out) as convBF16Pays
// and convBF16Wino say; other dtypes take the float32 methods, which
// refuse what they do not take.
func (b *Backend) convBF16Path(out, withO backends.View, g backends.ConvGeometry, o int) int {
	switch {
	case out.DType != backends.Float32 || withO.DType != backends.Float32 || o <= 0:
		return convF32Path
	case convBF16Pays(g, o):
		return convBF16GEMM
	case convBF16Wino(g, o):
		return convBF16Winograd
	}
	return convF32Path
}

// convF32Kernel is a fused convolution kernel on float32 slices (one of
// convKernels's f32 functions).
type convF32Kernel = func(b *Backend, out, a, c []float32, g backends.ConvGeometry, o int)

// convBF16Run runs a BF16 method's call: gemm or wino (each with bfloat16
// products) as convBF16Path says for out and withO (the view with the o
// output channels), else the float32 method f32.
func (b *Backend) convBF16Run(op string, out, withO, a, c backends.View, g backends.ConvGeometry,
	gemm, wino convF32Kernel, f32 func(out, a, c backends.View, g backends.ConvGeometry)) {
	o := dim(withO, 1)
	switch b.convBF16Path(out, withO, g, o) {
	case convBF16GEMM:
		convKernels{f32: gemm}.run(b, op, out, a, c, g, o)
	case convBF16Winograd:
		convKernels{f32: wino}.run(b, op, out, a, c, g, o)
	default:
		f32(out, a, c, g)
	}
}

// Conv2dBF16 is Conv2d for bfloat16 autocast on Float32 views: the
// products of x and w rounded to bfloat16, summed in float32, where
// convBF16Pays (each output element the bfloat16 GEMM's sum over the
// unfolded window, whose order depends only on the shapes), or the
// Winograd path's products of transformed tiles and filters rounded to
// bfloat16 where convBF16Wino; elsewhere Conv2d itself.
func (b *Backend) Conv2dBF16(out, x, w backends.View, g backends.ConvGeometry) {
	b.convBF16Run("conv2d", out, out, x, w, g,
		func(b *Backend, out, x, w []float32, g backends.ConvGeometry, o int) {
			convForwardCols(b, out, x, w, g, o, true)
		},
		func(b *Backend, out, x, w []float32, g backends.ConvGeometry, o int) {
			convWinoForward(b, out, x, w, g, o, true)
		},
		b.Conv2d)
}

// Conv2dInputGradBF16 is Conv2dInputGrad for bfloat16 autocast, as
// Conv2dBF16 is Conv2d's: dy and w (or their transforms) rounded to
// bfloat16 where convBF16Pays or convBF16Wino.
func (b *Backend) Conv2dInputGradBF16(dx, dy, w backends.View, g backends.ConvGeometry) {
	b.convBF16Run("conv2d input grad", dx, dy, dy, w, g,
		func(b *Backend, dx, dy, w []float32, g backends.ConvGeometry, o int) {
			convInputGradCols(b, dx, dy, w, g, o, true)
		},
		func(b *Backend, dx, dy, w []float32, g backends.ConvGeometry, o int) {
			convWinoInputGrad(b, dx, dy, w, g, o, true)
		},
		b.Conv2dInputGrad)
}

// Conv2dWeightGradBF16 is Conv2dWeightGrad for bfloat16 autocast, as
// Conv2dBF16 is Conv2d's: dy and the unfolded x (or their transforms)
// rounded to bfloat16 where convBF16Pays or convBF16Wino; the chunks'
// partial sums are added in float32.
func (b *Backend) Conv2dWeightGradBF16(dw, dy, x backends.View, g backends.ConvGeometry) {
	b.convBF16Run("conv2d weight grad", dw, dy, dy, x, g,
		func(b *Backend, dw, dy, x []float32, g backends.ConvGeometry, o int) {
			convWeightGradCols(b, dw, dy, x, g, o, true)
		},
		func(b *Backend, dw, dy, x []float32, g backends.ConvGeometry, o int) {
			convWinoWeightGrad(b, dw, dy, x, g, o, true)
		},
		b.Conv2dWeightGrad)
}
