package fusion

import "github.com/kiln-ml/kiln/backends"

var _ backends.BatchNormFusion = (*Backend)(nil)

// BatchNormForward implements backends.BatchNormFusion by forwarding,
// after the group.
func (b *Backend) BatchNormForward(y, mean, variance, rstd, x, weight, bias backends.View, eps float64) {
	b.beforeFused()
	defer b.mu.Unlock()
	if f, ok := wrapped[backends.BatchNormFusion](b, "batch norm", "fused batch normalisation"); ok {
		f.BatchNormForward(b.real(y), b.real(mean), b.real(variance), b.real(rstd), b.real(x), b.real(weight), b.real(bias), eps)
	}
}

// BatchNormBackward implements backends.BatchNormFusion by forwarding,
// after the group.
func (b *Backend) BatchNormBackward(dx, dweight, dbias, dy, x, mean, rstd, weight backends.View) {
	b.beforeFused()
	defer b.mu.Unlock()
	if f, ok := wrapped[backends.BatchNormFusion](b, "batch norm grad", "fused batch normalisation"); ok {
		f.BatchNormBackward(b.real(dx), b.real(dweight), b.real(dbias), b.real(dy), b.real(x), b.real(mean), b.real(rstd), b.real(weight))
	}
}
