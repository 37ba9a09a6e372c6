package metrics

import (
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// PSNR is the peak signal-to-noise ratio in decibels, 10·log10(R² / MSE),
// with R the data range (1 for images in [0, 1], 255 for bytes) and the
// mean squared error pooled over every element fed, as torchmetrics'
// PeakSignalNoiseRatio with dim=None. Outputs and targets are tensors of
// the same number of elements (any shape: images [N, C, H, W], say).
type PSNR struct {
	// DataRange is R, the distance between the smallest and the largest
	// value the data can take.
	DataRange float64
	sse, n    float64
}

// NewPSNR returns a PSNR metric for data spanning dataRange. It panics if
// dataRange is not positive and finite.
func NewPSNR(dataRange float64) *PSNR {
	if !(dataRange > 0) || math.IsInf(dataRange, 0) {
		panic(fmt.Sprintf("metrics.NewPSNR: data range %v must be positive and finite", dataRange))
	}
	return &PSNR{DataRange: dataRange}
}

// Name implements Metric.
func (m *PSNR) Name() string { return "psnr" }

// Update implements Metric; it returns an ErrInput error when outputs and
// targets differ in size.
func (m *PSNR) Update(outputs, targets *tensor.Tensor) error {
	o, t, err := pairs(m.Name(), outputs, targets)
	if err != nil {
		return err
	}
	for i := range o {
		d := o[i] - t[i]
		m.sse += d * d
	}
	m.n += float64(len(o))
	return nil
}

// Value is the PSNR in dB: +Inf for identical data, NaN before any element.
func (m *PSNR) Value() float64 {
	if m.n == 0 {
		return nanValue
	}
	return 10 * math.Log10(m.DataRange*m.DataRange/(m.sse/m.n))
}

// Reset implements Metric.
func (m *PSNR) Reset() { m.sse, m.n = 0, 0 }

// State implements Summable: the sum of squared errors and the element
// count.
func (m *PSNR) State() []float64 { return []float64{m.sse, m.n} }

// SetState implements Summable.
func (m *PSNR) SetState(s []float64) error {
	if err := checkState(m.Name(), s, 2); err != nil {
		return err
	}
	m.sse, m.n = s[0], s[1]
	return nil
}

// SSIM is the mean structural similarity index of images, as
// torchmetrics' StructuralSimilarityIndexMeasure and scikit-image's
// structural_similarity(gaussian_weights=True, sigma=1.5,
// use_sample_covariance=False) compute it: local means, variances and the
// covariance under an 11×11 Gaussian window of σ = 1.5 at every position
// where the window fits inside the image, the SSIM map
//
//	((2·μx·μy + C1)(2·σxy + C2)) / ((μx² + μy² + C1)(σx² + σy² + C2)),
//
// with C1 = (K1·R)², C2 = (K2·R)², K1 = 0.01, K2 = 0.03 and R the data
// range, averaged over each image's channels and positions, and the
// per-image values averaged over every image fed. Outputs and targets
// are [N, C, H, W] (or [C, H, W], one image) of the same shape with H
// and W at least 11.
type SSIM struct {
	// DataRange is R (1 for images in [0, 1], 255 for bytes).
	DataRange float64
	// K1 and K2 are the stabilising constants (0.01 and 0.03 by NewSSIM).
	K1, K2 float64
	sum, n float64
}

// ssimWindow is the side of SSIM's Gaussian window and ssimSigma its
// standard deviation.
const (
	ssimWindow = 11
	ssimSigma  = 1.5
)

// NewSSIM returns an SSIM metric for data spanning dataRange, with K1 =
// 0.01 and K2 = 0.03. It panics if dataRange is not positive and finite.
func NewSSIM(dataRange float64) *SSIM {
	if !(dataRange > 0) || math.IsInf(dataRange, 0) {
		panic(fmt.Sprintf("metrics.NewSSIM: data range %v must be positive and finite", dataRange))
	}
	return &SSIM{DataRange: dataRange, K1: 0.01, K2: 0.03}
}

// Name implements Metric.
func (m *SSIM) Name() string { return "ssim" }

// gaussianWindow returns the normalised 1-D Gaussian of n taps.
func gaussianWindow(n int, sigma float64) []float64 {
	g := make([]float64, n)
	var s float64
	for i := range g {
		d := float64(i) - float64(n-1)/2
		g[i] = math.Exp(-(d / sigma) * (d / sigma) / 2)
		s += g[i]
	}
	for i := range g {
		g[i] /= s
	}
	return g
}

// Update implements Metric; it returns an ErrInput error for shapes that
// differ, are not [N, C, H, W] or [C, H, W], or are smaller than 11×11.
func (m *SSIM) Update(outputs, targets *tensor.Tensor) error {
	o, oshape, err := host(m.Name(), "outputs", outputs)
	if err != nil {
		return err
	}
	t, tshape, err := host(m.Name(), "targets", targets)
	if err != nil {
		return err
	}
	if shapeStr(oshape) != shapeStr(tshape) || (len(oshape) != 3 && len(oshape) != 4) {
		return inputErr(m.Name(), "outputs %s and targets %s must be images of one shape, [N, C, H, W] or [C, H, W]",
			shapeStr(oshape), shapeStr(tshape))
	}
	if len(oshape) == 3 {
		oshape = append([]int{1}, oshape...)
	}
	n, c, h, w := oshape[0], oshape[1], oshape[2], oshape[3]
	if h < ssimWindow || w < ssimWindow {
		return inputErr(m.Name(), "images %s are smaller than the %d×%d window", shapeStr(tshape), ssimWindow, ssimWindow)
	}
	g := gaussianWindow(ssimWindow, ssimSigma)
	c1 := (m.K1 * m.DataRange) * (m.K1 * m.DataRange)
	c2 := (m.K2 * m.DataRange) * (m.K2 * m.DataRange)
	oh, ow := h-ssimWindow+1, w-ssimWindow+1
	// The window is separable: filter the rows into tmp, then the columns.
	planes := [5][]float64{}
	rowsOut := [5][]float64{}
	for k := range planes {
		planes[k] = make([]float64, h*w)
		rowsOut[k] = make([]float64, h*ow)
	}
	var total float64
	for img := range n {
		var acc float64
		for ch := range c {
			off := (img*c + ch) * h * w
			x, y := o[off:off+h*w], t[off:off+h*w]
			for i := range x {
				planes[0][i], planes[1][i] = x[i], y[i]
				planes[2][i], planes[3][i], planes[4][i] = x[i]*x[i], y[i]*y[i], x[i]*y[i]
			}
			for k := range planes {
				for r := range h {
					src, dst := planes[k][r*w:(r+1)*w], rowsOut[k][r*ow:(r+1)*ow]
					for j := range ow {
						var s float64
						for q, gq := range g {
							s += gq * src[j+q]
						}
						dst[j] = s
					}
				}
			}
			for r := range oh {
				for j := range ow {
					var f [5]float64
					for k := range f {
						var s float64
						for q, gq := range g {
							s += gq * rowsOut[k][(r+q)*ow+j]
						}
						f[k] = s
					}
					mx, my := f[0], f[1]
					sxx, syy, sxy := f[2]-mx*mx, f[3]-my*my, f[4]-mx*my
					acc += ((2*mx*my + c1) * (2*sxy + c2)) / ((mx*mx + my*my + c1) * (sxx + syy + c2))
				}
			}
		}
		total += acc / float64(c*oh*ow)
	}
	m.sum += total
	m.n += float64(n)
	return nil
}

// Value is the mean SSIM of the images fed (1 for identical images), NaN
// before any image.
func (m *SSIM) Value() float64 { return nanIfZero(m.sum, m.n) }

// Reset implements Metric.
func (m *SSIM) Reset() { m.sum, m.n = 0, 0 }

// State implements Summable: the sum of the images' SSIM and their count.
func (m *SSIM) State() []float64 { return []float64{m.sum, m.n} }

// SetState implements Summable.
func (m *SSIM) SetState(s []float64) error {
	if err := checkState(m.Name(), s, 2); err != nil {
		return err
	}
	m.sum, m.n = s[0], s[1]
	return nil
}
