package onnx

import (
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// Signal operators (window functions, DFT, STFT, MelWeightMatrix) run on
// the host in float64: they feed audio front ends, whose inputs are small
// next to the network that follows.

func init() {
	window := func(f func(n, size float64) float64) *opDef {
		return hostOp(func(c *call) []*hostTensor {
			size := int(c.scalar(0))
			if size < 0 || size > maxRunElements {
				c.fail(tensor.ErrArgument, "window size %d", size)
			}
			dt := windowDType(c)
			out := newHost(dt, []int{size})
			n := float64(size)
			if c.attrInt("periodic", 1) == 0 {
				n--
			}
			for k := range size {
				out.set(k, f(float64(k), n))
			}
			return hosts(out)
		})
	}
	ops["HannWindow"] = window(func(k, n float64) float64 { return 0.5 - 0.5*math.Cos(2*math.Pi*k/n) })
	ops["HammingWindow"] = window(func(k, n float64) float64 {
		const alpha = 25.0 / 46
		return alpha - (1-alpha)*math.Cos(2*math.Pi*k/n)
	})
	ops["BlackmanWindow"] = window(func(k, n float64) float64 {
		return 0.42 - 0.5*math.Cos(2*math.Pi*k/n) + 0.08*math.Cos(4*math.Pi*k/n)
	})
	ops["DFT"] = hostOp(dft)
	ops["STFT"] = hostOp(stft)
	ops["MelWeightMatrix"] = hostOp(melWeightMatrix)
}

// windowDType reads output_datatype (FLOAT when absent).
func windowDType(c *call) tensor.DType {
	dt, err := kilnDType(int32(c.attrInt("output_datatype", int64(TypeFloat))))
	if err != nil {
		c.fail(tensor.ErrDType, "output_datatype: %v", err)
	}
	return dt
}

// complexAt returns element (outer, k, inner) of a signal whose last
// dimension holds 1 (real) or 2 (real, imaginary) values.
func complexAt(x *hostTensor, comps, n, inner, outer, k, in int) complex128 {
	off := ((outer*n+k)*inner + in) * comps
	if comps == 1 {
		return complex(x.at(off), 0)
	}
	return complex(x.at(off), x.at(off+1))
}

// dftOf transforms the n values of sig into bins output bins (inverse:
// with e^{+i} and divided by n).
func dftOf(sig []complex128, bins int, inverse bool) []complex128 {
	n := len(sig)
	out := make([]complex128, bins)
	sign := -1.0
	if inverse {
		sign = 1
	}
	for f := range bins {
		var acc complex128
		for t, v := range sig {
			a := sign * 2 * math.Pi * float64((f*t)%n) / float64(n)
			acc += v * complex(math.Cos(a), math.Sin(a))
		}
		if inverse {
			acc /= complex(float64(n), 0)
		}
		out[f] = acc
	}
	return out
}

func dft(c *call) []*hostTensor {
	x := c.h(0)
	r := len(x.shape)
	if r < 2 || x.shape[r-1] != 1 && x.shape[r-1] != 2 {
		c.fail(tensor.ErrShape, "input %v: the last dimension must be 1 (real) or 2 (complex)", x.shape)
	}
	// The signal axis: an attribute (default 1) up to opset 19, an
	// optional third input (default -2) from 20. Negative values count
	// from the back of the whole input, whose last dimension holds the
	// real and imaginary parts, so the range is [-r, -2] ∪ [0, r-2].
	a := c.attrInt("axis", 1)
	if c.opset >= 20 {
		a = -2
		if c.has(2) {
			a = int64(c.scalar(2))
		}
	}
	if a < 0 {
		a += int64(r)
	}
	if a < 0 || a > int64(r-2) {
		c.fail(tensor.ErrArgument, "axis %d is out of range for an input of rank %d (the signal axes are 0 to %d)", a, r, r-2)
	}
	axis := int(a)
	comps := x.shape[r-1]
	n := x.shape[axis]
	length := n
	if c.has(1) {
		length = int(c.scalar(1))
		if length <= 0 || length > maxRunElements {
			c.fail(tensor.ErrArgument, "dft_length %d must be positive", length)
		}
	}
	inverse := c.attrInt("inverse", 0) != 0
	bins := length
	if c.attrInt("onesided", 0) != 0 {
		bins = length/2 + 1
	}
	outer, inner := 1, 1
	for _, d := range x.shape[:axis] {
		outer *= d
	}
	for _, d := range x.shape[axis+1 : r-1] {
		inner *= d
	}
	shape := append([]int{}, x.shape...)
	shape[axis], shape[r-1] = bins, 2
	out := newHost(x.dtype, shape)
	sig := make([]complex128, length)
	for o := range outer {
		for in := range inner {
			for k := range length {
				sig[k] = 0
				if k < n {
					sig[k] = complexAt(x, comps, n, inner, o, k, in)
				}
			}
			for f, v := range dftOf(sig, bins, inverse) {
				off := ((o*bins+f)*inner + in) * 2
				out.set(off, real(v))
				out.set(off+1, imag(v))
			}
		}
	}
	return hosts(out)
}

func stft(c *call) []*hostTensor {
	x := c.h(0)
	if len(x.shape) != 3 || x.shape[2] != 1 && x.shape[2] != 2 {
		c.fail(tensor.ErrShape, "signal %v must be [batch, length, 1 or 2]", x.shape)
	}
	step := int(c.scalar(1))
	var win *hostTensor
	length := 0
	if c.has(2) {
		win = c.h(2)
		length = win.size()
	}
	if c.has(3) {
		length = int(c.scalar(3))
	}
	if win != nil && win.size() != length {
		c.fail(tensor.ErrShape, "window of %d values for frame_length %d", win.size(), length)
	}
	batch, n, comps := x.shape[0], x.shape[1], x.shape[2]
	if step <= 0 || length <= 0 || length > n {
		c.fail(tensor.ErrArgument, "frame_step %d and frame_length %d do not fit a signal of %d", step, length, n)
	}
	frames := (n-length)/step + 1
	bins := length
	if c.attrInt("onesided", 1) != 0 {
		bins = length/2 + 1
	}
	out := newHost(x.dtype, []int{batch, frames, bins, 2})
	sig := make([]complex128, length)
	for b := range batch {
		for f := range frames {
			for k := range length {
				v := complexAt(x, comps, n, 1, b, f*step+k, 0)
				if win != nil {
					v *= complex(win.at(k), 0)
				}
				sig[k] = v
			}
			for q, v := range dftOf(sig, bins, false) {
				off := ((b*frames+f)*bins + q) * 2
				out.set(off, real(v))
				out.set(off+1, imag(v))
			}
		}
	}
	return hosts(out)
}

// melWeightMatrix follows the reference implementation of ONNX: triangular
// filters between mel-spaced bin edges, rounded down to DFT bins.
func melWeightMatrix(c *call) []*hostTensor {
	mels, length, rate := int(c.scalar(0)), int(c.scalar(1)), c.scalar(2)
	lower, upper := c.scalar(3), c.scalar(4)
	if mels <= 0 || length <= 0 || rate <= 0 || mels > 1<<16 || length > 1<<24 {
		c.fail(tensor.ErrArgument, "num_mel_bins %d, dft_length %d and sample_rate %v must be positive", mels, length, rate)
	}
	bins := length/2 + 1
	lowMel := 2595 * math.Log10(1+lower/700)
	highMel := 2595 * math.Log10(1+upper/700)
	stepMel := (highMel - lowMel) / float64(mels+2)
	edges := make([]int, mels+2)
	for i := range edges {
		hz := 700 * (math.Pow(10, (float64(i)*stepMel+lowMel)/2595) - 1)
		edges[i] = int(math.Floor(float64(length+1) * hz / rate))
	}
	out := newHost(windowDType(c), []int{bins, mels})
	put := func(j, i int, v float64) {
		if j >= 0 && j < bins {
			out.set(j*mels+i, v)
		}
	}
	for i := range mels {
		// Bins outside the spectrum are not stored: clamp the loops.
		clamp := func(e int) int { return max(-1, min(e, bins+1)) }
		lo, mid, hi := clamp(edges[i]), clamp(edges[i+1]), clamp(edges[i+2])
		if mid == lo {
			put(mid, i, 1)
		} else {
			for j := lo; j <= mid; j++ {
				put(j, i, float64(j-lo)/float64(mid-lo))
			}
		}
		if hi > mid {
			for j := mid; j < hi; j++ {
				put(j, i, float64(hi-j)/float64(hi-mid))
			}
		}
	}
	return hosts(out)
}
