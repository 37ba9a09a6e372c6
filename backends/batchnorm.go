package backends

// BatchNormFusion is an optional interface for batch normalisation in
// training mode over x [N, C, S] (a batch of N samples of C channels of S
// positions each: S = H·W for images, 1 for plain features), Float32 or
// Float64: each channel is normalised by the mean and biased variance of
// its N·S values. The forward pass reads x twice (statistics, then output)
// and the backward pass reads x and dy twice (two sums per channel, then
// dx), instead of the many passes and temporaries of a composition. Every
// view is contiguous and of x's dtype; y, dx and dy are shaped as x;
// weight, bias, mean, variance, rstd and the parameters' gradients are
// [C], and an optional view with no Buf means none. Statistics accumulate
// in float64, each channel's in one fixed order, so that results do not
// depend on the number of workers.
type BatchNormFusion interface {
	// BatchNormForward writes y = (x − mean)·rstd·weight + bias and the
	// per-channel mean, biased variance (optional) and rstd = 1/√(variance
	// + eps). weight and bias are optional (1 and 0).
	BatchNormForward(y, mean, variance, rstd, x, weight, bias View, eps float64)
	// BatchNormBackward overwrites dx, dweight and dbias (each skipped
	// when it has no Buf) with the gradients of BatchNormForward for the
	// output gradient dy, given its mean and rstd; weight is optional.
	BatchNormBackward(dx, dweight, dbias, dy, x, mean, rstd, weight View)
}
