package tensor

import (
	"encoding/binary"
	"math"
	"math/cmplx"
	"runtime"
	"sync"
	"unsafe"
)

// Complex tensors. Kiln has no complex dtype: a complex tensor is a float
// tensor whose last dimension has size 2 and holds (real, imaginary), the
// layout torch.view_as_real gives. FFT, IFFT and IRFFT take that layout,
// FFT, IFFT, RFFT and STFT return it, and their dim arguments count the
// dimensions of the complex tensor, without the trailing 2: dim -1 of a
// [B, N, 2] tensor is N.
//
// The transforms run on the host, in float64 whatever the dtype: the input
// is read back (a synchronisation point), each line is transformed by a
// mixed-radix Stockham FFT (radices 4, 2, 3, 5 and any other prime up to
// fftMaxRadix as a direct DFT) or, for lengths with a larger prime factor,
// by Bluestein's chirp-z algorithm over a power-of-two FFT, and the result
// is written back to the device. Twiddle factors are computed directly
// from sin and cos (no recurrences), so errors grow like O(ε·log n). A
// device kernel can replace the host pass later without changing the API;
// on a GPU today every FFT is two transfers.

// fftMaxRadix is the largest prime factor transformed as a direct DFT
// inside the mixed-radix FFT; a length with a larger prime factor uses
// Bluestein's algorithm.
const fftMaxRadix = 31

// fftPlan holds what transforming lines of one length needs: its radices
// and twiddle factors, or Bluestein's chirp and the transformed filter.
type fftPlan struct {
	n       int
	radices []int
	// twiddles[s] holds, for stage s with radix p and sub-length m·p, the
	// factors ω^(j·k), j < m, k < p, of ω = exp(−2πi/(m·p)).
	twiddles [][]complex128
	// roots[p] holds exp(−2πi·k/p), k < p, for the direct DFT of radix p.
	roots map[int][]complex128

	// Bluestein: chirp[k] = exp(−iπ·k²/n), the length m of the inner
	// power-of-two FFT and the transform of its filter.
	chirp  []complex128
	inner  *fftPlan
	filter []complex128
}

var fftPlans sync.Map // int → *fftPlan

// planFFT returns the (cached) plan for length n ≥ 1.
func planFFT(n int) *fftPlan {
	if p, ok := fftPlans.Load(n); ok {
		return p.(*fftPlan)
	}
	p := newFFTPlan(n)
	actual, _ := fftPlans.LoadOrStore(n, p)
	return actual.(*fftPlan)
}

func newFFTPlan(n int) *fftPlan {
	p := &fftPlan{n: n, roots: map[int][]complex128{}}
	var radices []int
	rest := n
	for rest%4 == 0 {
		radices = append(radices, 4)
		rest /= 4
	}
	for _, f := range []int{2, 3, 5} {
		for rest%f == 0 {
			radices = append(radices, f)
			rest /= f
		}
	}
	for f := 7; f*f <= rest; f += 2 {
		for rest%f == 0 {
			if f > fftMaxRadix {
				return newBluesteinPlan(p)
			}
			radices = append(radices, f)
			rest /= f
		}
	}
	if rest > 1 {
		if rest > fftMaxRadix {
			return newBluesteinPlan(p)
		}
		radices = append(radices, rest)
	}
	p.radices = radices
	sub := n
	for _, r := range radices {
		m := sub / r
		tw := make([]complex128, m*r)
		for j := range m {
			for k := range r {
				tw[j*r+k] = fftRoot(j*k, sub)
			}
		}
		p.twiddles = append(p.twiddles, tw)
		if _, ok := p.roots[r]; !ok && r > 5 {
			roots := make([]complex128, r)
			for k := range r {
				roots[k] = fftRoot(k, r)
			}
			p.roots[r] = roots
		}
		sub = m
	}
	return p
}

// fftRoot returns exp(−2πi·k/n), reducing k first so that the angle, and
// its rounding error, stay small.
func fftRoot(k, n int) complex128 {
	k %= n
	if k == 0 {
		return 1
	}
	s, c := math.Sincos(-2 * math.Pi * float64(k) / float64(n))
	return complex(c, s)
}

func newBluesteinPlan(p *fftPlan) *fftPlan {
	n := p.n
	m := 1
	for m < 2*n-1 {
		m <<= 1
	}
	p.inner = planFFT(m)
	p.chirp = make([]complex128, n)
	for k := range n {
		// k² mod 2n keeps the angle exact for large k.
		q := int((int64(k) * int64(k)) % int64(2*n))
		s, c := math.Sincos(-math.Pi * float64(q) / float64(n))
		p.chirp[k] = complex(c, s)
	}
	b := make([]complex128, m)
	b[0] = cmplx.Conj(p.chirp[0])
	for k := 1; k < n; k++ {
		b[k] = cmplx.Conj(p.chirp[k])
		b[m-k] = b[k]
	}
	p.inner.transform(b, make([]complex128, p.inner.scratchLen()), false)
	p.filter = b
	return p
}

// scratchLen is the length of the scratch slice transform needs.
func (p *fftPlan) scratchLen() int {
	if p.inner != nil {
		return 2*p.inner.n + p.inner.scratchLen()
	}
	return p.n
}

// transform replaces x (length p.n) by its unnormalised DFT, with the
// kernel exp(−2πi·jk/n), or exp(+2πi·jk/n) when inverse.
func (p *fftPlan) transform(x, scratch []complex128, inverse bool) {
	if inverse {
		for i, v := range x {
			x[i] = cmplx.Conj(v)
		}
		p.transform(x, scratch, false)
		for i, v := range x {
			x[i] = cmplx.Conj(v)
		}
		return
	}
	if p.inner != nil {
		p.bluestein(x, scratch)
		return
	}
	if p.n == 1 {
		return
	}
	src, dst := x, scratch[:p.n]
	stride := 1
	sub := p.n
	for s, r := range p.radices {
		m := sub / r
		fftStage(r, m, stride, src, dst, p.twiddles[s], p.roots[r])
		src, dst = dst, src
		stride *= r
		sub = m
	}
	if &src[0] != &x[0] {
		copy(x, src)
	}
}

// bluestein computes the DFT of x as a convolution with a chirp, through
// the power-of-two FFT of p.inner.
func (p *fftPlan) bluestein(x, scratch []complex128) {
	m := p.inner.n
	a := scratch[:m]
	rest := scratch[m:]
	for k, v := range x {
		a[k] = v * p.chirp[k]
	}
	clear(a[len(x):])
	p.inner.transform(a, rest, false)
	for k := range a {
		a[k] *= p.filter[k]
	}
	p.inner.transform(a, rest, true)
	scale := 1 / float64(m)
	for k := range x {
		x[k] = a[k] * p.chirp[k] * complex(scale, 0)
	}
}

// fftStage is one decimation-in-frequency Stockham stage of radix r: src
// holds r·m groups of stride elements; for each j < m and q < stride the r
// values src[q + stride·(j + k·m)] are combined by a length-r DFT and
// written, multiplied by the twiddles ω^(j·k), to dst[q + stride·(r·j + k)].
func fftStage(r, m, stride int, src, dst, tw, roots []complex128) {
	switch r {
	case 2:
		// Sub-slices of one stride each let the compiler drop bounds checks.
		for j := range m {
			w1 := tw[j*2+1]
			s0 := src[stride*j : stride*(j+1)]
			s1 := src[stride*(j+m) : stride*(j+m+1)][:len(s0)]
			d0 := dst[stride*2*j : stride*(2*j+1)][:len(s0)]
			d1 := dst[stride*(2*j+1) : stride*(2*j+2)][:len(s0)]
			for q, a := range s0 {
				b := s1[q]
				d0[q] = a + b
				d1[q] = (a - b) * w1
			}
		}
	case 4:
		for j := range m {
			w1, w2, w3 := tw[j*4+1], tw[j*4+2], tw[j*4+3]
			s0 := src[stride*j : stride*(j+1)]
			s1 := src[stride*(j+m) : stride*(j+m+1)][:len(s0)]
			s2 := src[stride*(j+2*m) : stride*(j+2*m+1)][:len(s0)]
			s3 := src[stride*(j+3*m) : stride*(j+3*m+1)][:len(s0)]
			d := dst[stride*4*j : stride*4*(j+1)]
			d0 := d[:stride][:len(s0)]
			d1 := d[stride : 2*stride][:len(s0)]
			d2 := d[2*stride : 3*stride][:len(s0)]
			d3 := d[3*stride : 4*stride][:len(s0)]
			for q, a0 := range s0 {
				a1, a2, a3 := s1[q], s2[q], s3[q]
				t0, t1 := a0+a2, a0-a2
				t2, t3 := a1+a3, a1-a3
				// −i·t3
				t3 = complex(imag(t3), -real(t3))
				d0[q] = t0 + t2
				d1[q] = (t1 + t3) * w1
				d2[q] = (t0 - t2) * w2
				d3[q] = (t1 - t3) * w3
			}
		}
	case 3:
		const s3 = 0.86602540378443864676 // sin(2π/3)
		for j := range m {
			w1, w2 := tw[j*3+1], tw[j*3+2]
			for q := range stride {
				a0 := src[q+stride*j]
				a1 := src[q+stride*(j+m)]
				a2 := src[q+stride*(j+2*m)]
				t1 := a1 + a2
				t2 := a0 - 0.5*t1
				d := a1 - a2
				// −i·sin(2π/3)·(a1 − a2)
				t3 := complex(s3*imag(d), -s3*real(d))
				o := q + stride*3*j
				dst[o] = a0 + t1
				dst[o+stride] = (t2 + t3) * w1
				dst[o+2*stride] = (t2 - t3) * w2
			}
		}
	case 5:
		c1, s1 := math.Cos(2*math.Pi/5), math.Sin(2*math.Pi/5)
		c2, s2 := math.Cos(4*math.Pi/5), math.Sin(4*math.Pi/5)
		for j := range m {
			w1, w2, w3, w4 := tw[j*5+1], tw[j*5+2], tw[j*5+3], tw[j*5+4]
			for q := range stride {
				a0 := src[q+stride*j]
				a1 := src[q+stride*(j+m)]
				a2 := src[q+stride*(j+2*m)]
				a3 := src[q+stride*(j+3*m)]
				a4 := src[q+stride*(j+4*m)]
				b1, b4 := a1+a4, a1-a4
				b2, b3 := a2+a3, a2-a3
				r1 := a0 + complex(c1, 0)*b1 + complex(c2, 0)*b2
				r2 := a0 + complex(c2, 0)*b1 + complex(c1, 0)*b2
				// −i·(s1·b4 + s2·b3) and −i·(s2·b4 − s1·b3)
				u1 := complex(s1, 0)*b4 + complex(s2, 0)*b3
				u2 := complex(s2, 0)*b4 - complex(s1, 0)*b3
				i1 := complex(imag(u1), -real(u1))
				i2 := complex(imag(u2), -real(u2))
				o := q + stride*5*j
				dst[o] = a0 + b1 + b2
				dst[o+stride] = (r1 + i1) * w1
				dst[o+2*stride] = (r2 + i2) * w2
				dst[o+3*stride] = (r2 - i2) * w3
				dst[o+4*stride] = (r1 - i1) * w4
			}
		}
	default:
		var buf [fftMaxRadix]complex128
		for j := range m {
			for q := range stride {
				for k := range r {
					buf[k] = src[q+stride*(j+k*m)]
				}
				o := q + stride*r*j
				for k := range r {
					var sum complex128
					idx := 0
					for t := range r {
						sum += buf[t] * roots[idx]
						idx += k
						if idx >= r {
							idx -= r
						}
					}
					dst[o+stride*k] = sum * tw[j*r+k]
				}
			}
		}
	}
}

// fftLineSpec says how one line of a tensor is transformed: which input
// entries are read, how the length-n transform is filled and what is
// stored. Every FFT op and every gradient rule is one spec.
type fftLineSpec struct {
	inComplex, outComplex bool
	inverse               bool    // kernel exp(+2πi·jk/n)
	n                     int     // transform length
	keep                  int     // input entries read (the rest of the n are zero)
	hermitian             bool    // fill entry n−k with conj(entry k) for 0 < k < keep
	nOut                  int     // entries stored (zero past n)
	double                int     // stored entries 1…double are doubled
	scale                 float64 // multiplies every stored entry
}

// fftNormScale returns the factor norm applies to a transform of length n
// in the forward direction (inverse false) or the inverse one.
func fftNormScale(op, norm string, n int, inverse bool) float64 {
	switch norm {
	case "", "backward":
		if inverse {
			return 1 / float64(n)
		}
		return 1
	case "forward":
		if inverse {
			return 1
		}
		return 1 / float64(n)
	case "ortho":
		return 1 / math.Sqrt(float64(n))
	}
	fail(op, ErrArgument, "unknown norm %q (want \"backward\", \"forward\" or \"ortho\")", norm)
	return 0
}

// fftHost applies spec to every line along axis a of x, host data in
// row-major order with logical shape shape (the complex shape when
// spec.inComplex), and returns the result and its logical shape. Lines are
// split among goroutines; each is computed alone, so results do not depend
// on their number.
func fftHost[I, O float32 | float64](x []I, shape []int, a int, spec fftLineSpec) ([]O, []int) {
	outer := 1
	for _, s := range shape[:a] {
		outer *= s
	}
	inner := 1
	for _, s := range shape[a+1:] {
		inner *= s
	}
	nIn := shape[a]
	outShape := append([]int(nil), shape...)
	outShape[a] = spec.nOut
	ci, co := 1, 1
	if spec.inComplex {
		ci = 2
	}
	if spec.outComplex {
		co = 2
	}
	out := make([]O, outer*spec.nOut*inner*co)
	lines := outer * inner
	if lines == 0 || spec.nOut == 0 {
		return out, outShape
	}
	plan := planFFT(spec.n)
	keep := min(spec.keep, nIn, spec.n)
	work := func(lo, hi int) {
		buf := make([]complex128, spec.n)
		scratch := make([]complex128, plan.scratchLen())
		for line := lo; line < hi; line++ {
			o, i := line/inner, line%inner
			base := o*nIn*inner + i
			for k := range keep {
				p := (base + k*inner) * ci
				if spec.inComplex {
					buf[k] = complex(float64(x[p]), float64(x[p+1]))
				} else {
					buf[k] = complex(float64(x[p]), 0)
				}
			}
			clear(buf[keep:])
			if spec.hermitian {
				for k := max(keep, 1); k < spec.n; k++ {
					if m := spec.n - k; m < keep {
						buf[k] = cmplx.Conj(buf[m])
					}
				}
			}
			plan.transform(buf, scratch, spec.inverse)
			obase := o*spec.nOut*inner + i
			stored := min(spec.nOut, spec.n)
			for k := range stored {
				v := buf[k] * complex(spec.scale, 0)
				if k >= 1 && k <= spec.double {
					v *= 2
				}
				p := (obase + k*inner) * co
				out[p] = O(real(v))
				if spec.outComplex {
					out[p+1] = O(imag(v))
				}
			}
		}
	}
	workers := min(runtime.GOMAXPROCS(0), lines, max(1, lines*spec.n/(1<<14)))
	if workers <= 1 {
		work(0, lines)
		return out, outShape
	}
	var wg sync.WaitGroup
	chunk := (lines + workers - 1) / workers
	for lo := 0; lo < lines; lo += chunk {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			work(lo, hi)
		}(lo, min(lo+chunk, lines))
	}
	wg.Wait()
	return out, outShape
}

// fftReadHost reads t (any dtype) into float64s in row-major order, with
// fast paths for Float32 and Float64.
func fftReadHost(op string, t *Tensor) []float64 {
	raw := t.hostBytes(op)
	out := make([]float64, t.NumElements())
	switch {
	case len(out) == 0:
	case t.dtype == Float32 && hostLittleEndian:
		for i, v := range unsafe.Slice((*float32)(unsafe.Pointer(&raw[0])), len(out)) {
			out[i] = float64(v)
		}
	case t.dtype == Float64 && hostLittleEndian:
		copy(out, unsafe.Slice((*float64)(unsafe.Pointer(&raw[0])), len(out)))
	default:
		for i := range out {
			out[i] = decode(t.dtype, raw, i)
		}
	}
	return out
}

// fftUpload returns vals as a new tensor of dtype on dev.
func fftUpload(op string, dev Device, vals []float64, shape []int, dtype DType) *Tensor {
	switch dtype {
	case Float32:
		f := make([]float32, len(vals))
		for i, v := range vals {
			f[i] = float32(v)
		}
		return fromBytes(op, dev, Float32, shape, leBytes(f, func(b []byte, v float32) {
			binary.LittleEndian.PutUint32(b, math.Float32bits(v))
		}))
	case Float64:
		return fromBytes(op, dev, Float64, shape, leBytes(vals, func(b []byte, v float64) {
			binary.LittleEndian.PutUint64(b, math.Float64bits(v))
		}))
	}
	t := fftUpload(op, dev, vals, shape, Float64)
	out := rawCast(op, t, dtype)
	t.Release()
	return out
}

// fftApply runs spec over axis a of x's logical shape (x's shape without
// the trailing 2 when spec.inComplex) with no graph, and returns the result
// in dtype (with a trailing 2 when spec.outComplex).
func fftApply(op string, x *Tensor, a int, spec fftLineSpec, dtype DType) *Tensor {
	shape := x.shape
	if spec.inComplex {
		shape = shape[:len(shape)-1]
	}
	dev := x.dev.Inner()
	if !hostLittleEndian || (x.dtype != Float32 && x.dtype != Float64) || (dtype != Float32 && dtype != Float64) {
		vals, outShape := fftHost[float64, float64](fftReadHost(op, x), shape, a, spec)
		return fftUpload(op, dev, vals, fftShape(outShape, spec), dtype)
	}
	// Float32 and Float64 are read and written in place of their bytes.
	raw := x.hostBytes(op)
	n := x.NumElements()
	switch {
	case x.dtype == Float32 && dtype == Float32:
		vals, outShape := fftHost[float32, float32](fftBytesAs[float32](raw, n), shape, a, spec)
		return fromBytes(op, dev, dtype, fftShape(outShape, spec), fftAsBytes(vals))
	case x.dtype == Float64 && dtype == Float64:
		vals, outShape := fftHost[float64, float64](fftBytesAs[float64](raw, n), shape, a, spec)
		return fromBytes(op, dev, dtype, fftShape(outShape, spec), fftAsBytes(vals))
	case x.dtype == Float32:
		vals, outShape := fftHost[float32, float64](fftBytesAs[float32](raw, n), shape, a, spec)
		return fromBytes(op, dev, dtype, fftShape(outShape, spec), fftAsBytes(vals))
	default:
		vals, outShape := fftHost[float64, float32](fftBytesAs[float64](raw, n), shape, a, spec)
		return fromBytes(op, dev, dtype, fftShape(outShape, spec), fftAsBytes(vals))
	}
}

// fftShape appends the trailing 2 of a complex result to its logical shape.
func fftShape(shape []int, spec fftLineSpec) []int {
	if spec.outComplex {
		return append(shape, 2)
	}
	return shape
}

// fftBytesAs views n little-endian elements in raw as a slice of T (on a
// little-endian host).
func fftBytesAs[T float32 | float64](raw []byte, n int) []T {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&raw[0])), n)
}

// fftAsBytes views v as its bytes (on a little-endian host).
func fftAsBytes[T float32 | float64](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(v[0])))
}

// fftCheck validates the input of an FFT op and returns the axis of the
// transform in the logical (complex when complexIn) shape, and the result
// dtype.
func fftCheck(op string, x *Tensor, n, dim int, complexIn bool) (int, DType) {
	x.live(op)
	shape := x.shape
	if complexIn {
		if len(shape) < 2 || shape[len(shape)-1] != 2 {
			fail(op, ErrShape, "input %s is not a complex tensor: want at least 2 dimensions, the last of size 2 "+
				"(real, imaginary)", shapeString(shape))
		}
		shape = shape[:len(shape)-1]
	} else if len(shape) == 0 {
		fail(op, ErrShape, "input is 0-d; the transform needs at least one dimension")
	}
	if n < 0 {
		fail(op, ErrArgument, "n = %d: the transform length must be positive (0 for the default)", n)
	}
	a := normAxis(op, dim, len(shape))
	if n == 0 && shape[a] == 0 {
		fail(op, ErrArgument, "dimension %d of %s is empty: give a transform length n", dim, shapeString(x.shape))
	}
	return a, floatType(x.dtype)
}

// fftAttrs returns the graph attributes of a one-dimensional transform.
func fftAttrs(n, dim int, norm string) map[string]any {
	return map[string]any{"n": n, "dim": dim, "norm": norm}
}

// FFT returns the one-dimensional discrete Fourier transform of the
// complex tensor x along dim, as torch.fft.fft: X[k] = Σ_j x[j]·e^(−2πi·jk/n).
// x and the result use the view_as_real layout (a trailing dimension of
// size 2, see the package's note on complex tensors), and dim counts the
// complex dimensions (−1 is the last one before the 2). The signal is
// zero-padded or truncated to n along dim (n = 0 keeps its length). norm is
// "backward" (or "", no scaling), "forward" (scale by 1/n) or "ortho"
// (1/√n). The result has x's dtype (Float32 for integer input); gradients
// flow to x.
//
// It panics with ErrShape when the last dimension of x is not 2,
// ErrArgument for a negative n, an empty dimension without n, an unknown
// norm or a dim out of range.
func FFT(x *Tensor, n, dim int, norm string) *Tensor {
	return fftC2C("FFT", "fft", x, n, dim, norm, false)
}

// IFFT returns the inverse discrete Fourier transform of the complex
// tensor x along dim, as torch.fft.ifft: x[j] = s·Σ_k X[k]·e^(+2πi·jk/n)
// with s = 1/n for norm "backward" (or ""), 1 for "forward" and 1/√n for
// "ortho". Layout, n, dim, gradients and failures are FFT's.
func IFFT(x *Tensor, n, dim int, norm string) *Tensor {
	return fftC2C("IFFT", "ifft", x, n, dim, norm, true)
}

func fftC2C(op, name string, x *Tensor, n, dim int, norm string, inverse bool) *Tensor {
	a, dtype := fftCheck(op, x, n, dim, true)
	nIn := x.shape[a]
	if n == 0 {
		n = nIn
	}
	scale := fftNormScale(op, norm, n, inverse)
	spec := fftLineSpec{inComplex: true, outComplex: true, inverse: inverse, n: n, keep: nIn, nOut: n, scale: scale}
	out := fftApply(op, x, a, spec, dtype)
	return record(name, fftAttrs(n, dim, norm), out, []*Tensor{x}, func(g *Tensor) []*Tensor {
		// The adjoint of s·F is s·F̄: the other direction, same scale,
		// mapped back to the input's length.
		back := fftLineSpec{inComplex: true, outComplex: true, inverse: !inverse, n: n, keep: n, nOut: nIn, scale: scale}
		return []*Tensor{fftApply(op, g, a, back, g.dtype)}
	})
}

// RFFT returns the discrete Fourier transform of the real tensor x along
// dim, keeping the n/2+1 non-negative frequencies (the others are their
// complex conjugates), as torch.fft.rfft. The result uses the view_as_real
// layout: x's shape with dim replaced by n/2+1 and a trailing 2. n, norm,
// dtypes and gradients are FFT's; dim counts x's own dimensions.
//
// It panics with ErrShape for a 0-d x and ErrArgument as FFT does.
func RFFT(x *Tensor, n, dim int, norm string) *Tensor {
	const op = "RFFT"
	a, dtype := fftCheck(op, x, n, dim, false)
	nIn := x.shape[a]
	if n == 0 {
		n = nIn
	}
	scale := fftNormScale(op, norm, n, false)
	bins := n/2 + 1
	spec := fftLineSpec{outComplex: true, n: n, keep: nIn, nOut: bins, scale: scale}
	out := fftApply(op, x, a, spec, dtype)
	return record("rfft", fftAttrs(n, dim, norm), out, []*Tensor{x}, func(g *Tensor) []*Tensor {
		// Zero-pad the half spectrum to n bins, transform back, keep the
		// real part.
		back := fftLineSpec{inComplex: true, inverse: true, n: n, keep: bins, nOut: nIn, scale: scale}
		return []*Tensor{fftApply(op, g, a, back, g.dtype)}
	})
}

// IRFFT returns the real signal of length n whose RFFT is the complex
// tensor x (the non-negative frequencies of a Hermitian spectrum) along
// dim, as torch.fft.irfft. The input is truncated or zero-padded to n/2+1
// frequencies; n = 0 means 2·(m−1) for m input frequencies. The imaginary
// parts of the zero frequency (and, for even n, of the Nyquist frequency)
// are ignored. The result is real, with dim of size n and no trailing 2.
// norm, dtypes and gradients are FFT's (the gradient is PyTorch's: an RFFT
// of the output gradient with the frequencies that stand for two doubled).
//
// It panics as FFT does, and with ErrArgument when n = 0 and x has a single
// frequency.
func IRFFT(x *Tensor, n, dim int, norm string) *Tensor {
	const op = "IRFFT"
	a, dtype := fftCheck(op, x, n, dim, true)
	m := x.shape[a]
	if n == 0 {
		n = 2 * (m - 1)
		if n <= 0 {
			fail(op, ErrArgument, "input %s has %d frequencies along dim %d: give the output length n", shapeString(x.shape), m, dim)
		}
	}
	scale := fftNormScale(op, norm, n, true)
	bins := n/2 + 1
	spec := fftLineSpec{inComplex: true, inverse: true, n: n, keep: bins, hermitian: true, nOut: n, scale: scale}
	out := fftApply(op, x, a, spec, dtype)
	return record("irfft", fftAttrs(n, dim, norm), out, []*Tensor{x}, func(g *Tensor) []*Tensor {
		back := fftLineSpec{outComplex: true, n: n, keep: n, nOut: min(m, bins), double: n - bins, scale: scale}
		gx := fftApply(op, g, a, back, g.dtype)
		if m <= bins {
			return []*Tensor{gx}
		}
		// Frequencies past n/2 were dropped: their gradient is zero.
		pads := make([]int, 2*(len(x.shape)-a))
		pads[len(pads)-1] = m - bins
		padded := gx.Pad(pads, "constant", 0)
		gx.Release()
		return []*Tensor{padded}
	})
}

// FFT2 returns the two-dimensional discrete Fourier transform of the
// complex tensor x over its last two complex dimensions, as
// torch.fft.fft2 with default sizes: FFT along −2, then along −1. norm,
// layout, gradients and failures are FFT's.
func FFT2(x *Tensor, norm string) *Tensor {
	return FFTN(x, []int{-2, -1}, norm)
}

// IFFT2 is the inverse of FFT2, as torch.fft.ifft2 with default sizes.
func IFFT2(x *Tensor, norm string) *Tensor {
	return IFFTN(x, []int{-2, -1}, norm)
}

// FFTN returns the discrete Fourier transform of the complex tensor x over
// the complex dimensions dims (all of them when dims is empty), as
// torch.fft.fftn without sizes: one FFT per dimension. norm applies to the
// whole transform, as in PyTorch. It panics as FFT does, and with
// ErrArgument for a repeated dimension.
func FFTN(x *Tensor, dims []int, norm string) *Tensor { return fftN("FFTN", x, dims, norm, false) }

// IFFTN is the inverse of FFTN, as torch.fft.ifftn without sizes.
func IFFTN(x *Tensor, dims []int, norm string) *Tensor { return fftN("IFFTN", x, dims, norm, true) }

func fftN(op string, x *Tensor, dims []int, norm string, inverse bool) *Tensor {
	x.live(op)
	if len(x.shape) < 2 || x.shape[len(x.shape)-1] != 2 {
		fail(op, ErrShape, "input %s is not a complex tensor: want at least 2 dimensions, the last of size 2 "+
			"(real, imaginary)", shapeString(x.shape))
	}
	rank := len(x.shape) - 1
	if len(dims) == 0 {
		for d := range rank {
			dims = append(dims, d)
		}
	}
	seen := map[int]bool{}
	for _, d := range dims {
		a := normAxis(op, d, rank)
		if seen[a] {
			fail(op, ErrArgument, "dimension %d appears twice in %v", d, dims)
		}
		seen[a] = true
	}
	fftNormScale(op, norm, 1, inverse)
	// The scale of an n-dimensional transform is the product of the scales
	// of its one-dimensional ones, so each 1-D pass applies its own.
	out := x
	for _, d := range dims {
		next := fftC2C(op, map[bool]string{false: "fft", true: "ifft"}[inverse], out, 0, d, norm, inverse)
		if out != x {
			out.Release()
		}
		out = next
	}
	return out
}
