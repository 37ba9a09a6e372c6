package tensor_test

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// signalFunc computes a case of testdata/signal.json from its named inputs.
type signalFunc func(in map[string]*tensor.Tensor) *tensor.Tensor

// signalNonContiguous returns a view of x with x's values whose first and
// last dimensions are transposed in memory (not contiguous when both are
// longer than 1).
func signalNonContiguous(x *tensor.Tensor) *tensor.Tensor {
	r := x.Dims()
	if r < 2 {
		return x.Unsqueeze(0).Expand(2, x.Dim(0)).Select(0, 1).Slice(0, 0, x.Dim(0), 1)
	}
	return x.Transpose(0, r-1).Contiguous().Transpose(0, r-1)
}

// signalRunFixtures checks every case of table against signal.json on every
// test device: values in Float64 and Float32, from contiguous and
// non-contiguous inputs, and (in Float64) the gradients of sum(out·w)
// against PyTorch's.
func signalRunFixtures(t *testing.T, table map[string]signalFunc) {
	t.Helper()
	fixtures := loadFixtures(t, "signal.json")
	names := make([]string, 0, len(table))
	for name := range table {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c, ok := fixtures[name]
		if !ok {
			t.Errorf("no fixture %q in signal.json (regenerate with /usr/bin/python3 testdata/gen_signal.py)", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
					for _, strided := range []bool{false, true} {
						what := fmt.Sprintf("%s strided=%v", dt, strided)
						ad := dev.Autodiff()
						leaves := map[string]*tensor.Tensor{}
						in := map[string]*tensor.Tensor{}
						for key, f := range c {
							if key == "out" || key == "w" || strings.HasPrefix(key, "grad_") {
								continue
							}
							leaf := f.Tensor(ad).To(dt)
							if dt == tensor.Float64 && leaf.NumElements() > 0 {
								leaf.RequireGrad()
							}
							leaves[key] = leaf
							in[key] = leaf
							if strided {
								in[key] = signalNonContiguous(leaf)
							}
						}
						out := table[name](in)
						rtol, atol := 1e-6, 1e-6
						if dt == tensor.Float32 {
							rtol, atol = 1e-4, 2e-4
						}
						if out.DType() != dt {
							t.Errorf("%s: result dtype %s", what, out.DType())
						}
						assertClose(t, what+" out", out, c["out"], rtol, atol)
						if dt != tensor.Float64 || out.NumElements() == 0 {
							continue
						}
						w := c["w"].Tensor(dev)
						grads := out.Mul(w).Sum().Backward()
						for key, leaf := range leaves {
							want, ok := c["grad_"+key]
							if !ok {
								continue
							}
							g := grads.Get(leaf)
							if g == nil {
								t.Errorf("%s: no gradient for %s", what, key)
								continue
							}
							assertClose(t, what+" grad_"+key, g, want, rtol, atol)
						}
					}
				}
			})
		})
	}
}

func fftCase(f func(x *tensor.Tensor) *tensor.Tensor) signalFunc {
	return func(in map[string]*tensor.Tensor) *tensor.Tensor { return f(in["x"]) }
}

func signalFFTFixtures() map[string]signalFunc {
	table := map[string]signalFunc{
		"fft dim 0":             fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.FFT(x, 0, 0, "") }),
		"fft dim 1 of 3":        fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.FFT(x, 0, -2, "backward") }),
		"fft pad n":             fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.FFT(x, 8, -1, "") }),
		"fft truncate n":        fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.FFT(x, 3, -1, "") }),
		"fft norm forward":      fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.FFT(x, 0, -1, "forward") }),
		"fft norm ortho":        fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.FFT(x, 0, -1, "ortho") }),
		"ifft norm ortho":       fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.IFFT(x, 0, 0, "ortho") }),
		"ifft norm forward pad": fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.IFFT(x, 9, 1, "forward") }),
		"rfft dim 0":            fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.RFFT(x, 0, 0, "") }),
		"rfft pad odd n":        fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.RFFT(x, 11, -1, "") }),
		"rfft truncate ortho":   fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.RFFT(x, 4, 1, "ortho") }),
		"irfft default n":       fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.IRFFT(x, 0, -1, "") }),
		"irfft odd n":           fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.IRFFT(x, 9, -1, "") }),
		"irfft n beyond input":  fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.IRFFT(x, 12, -1, "") }),
		"irfft n below input":   fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.IRFFT(x, 4, -1, "forward") }),
		"irfft dim 0 ortho":     fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.IRFFT(x, 6, 0, "ortho") }),
		"fft2":                  fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.FFT2(x, "") }),
		"ifft2 ortho":           fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.IFFT2(x, "ortho") }),
		"fftn all dims":         fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.FFTN(x, nil, "") }),
		"fft empty batch":       fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.FFT(x, 0, -1, "") }),
	}
	for _, n := range []int{1, 2, 5, 7, 12, 17, 64, 97, 100, 1000} {
		table[fmt.Sprintf("fft n%d", n)] = fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.FFT(x, 0, -1, "") })
		table[fmt.Sprintf("ifft n%d", n)] = fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.IFFT(x, 0, -1, "") })
		table[fmt.Sprintf("rfft n%d", n)] = fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.RFFT(x, 0, -1, "") })
		if n > 1 {
			table[fmt.Sprintf("irfft n%d", n)] = fftCase(func(x *tensor.Tensor) *tensor.Tensor { return tensor.IRFFT(x, n, -1, "") })
		}
	}
	return table
}

func TestFFTFixtures(t *testing.T) { signalRunFixtures(t, signalFFTFixtures()) }

func TestFFTGradients(t *testing.T) {
	runGradCases(t, []gradCase{
		{"fft pad", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.FFT(in[0], 7, -1, "") }, nnInputs(nnRand(1, 2, 5, 2))},
		{"fft truncate dim 0", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.FFT(in[0], 3, 0, "ortho") },
			nnInputs(nnRand(2, 5, 2, 2))},
		{"ifft bluestein", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.IFFT(in[0], 37, -1, "forward") },
			nnInputs(nnRand(3, 1, 37, 2))},
		{"rfft odd", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.RFFT(in[0], 0, -1, "") }, nnInputs(nnRand(4, 2, 7))},
		{"rfft pad transposed", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.RFFT(in[0].T(), 8, 0, "ortho") },
			nnInputs(nnRand(5, 3, 5))},
		{"irfft even", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.IRFFT(in[0], 0, -1, "") }, nnInputs(nnRand(6, 2, 5, 2))},
		{"irfft odd beyond", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.IRFFT(in[0], 11, -1, "") },
			nnInputs(nnRand(7, 2, 4, 2))},
		{"irfft below", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.IRFFT(in[0], 4, 0, "forward") },
			nnInputs(nnRand(8, 6, 2))},
		{"fft2", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.FFT2(in[0], "") }, nnInputs(nnRand(9, 3, 4, 2))},
	})
}

func TestFFTRoundTrip(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		for _, n := range []int{1, 6, 97, 1000, 1024, 2310} {
			x := randFloat64(dev, uint64(n), -1, 1, 3, n, 2)
			back := tensor.IFFT(tensor.FFT(x, 0, -1, ""), 0, -1, "")
			if !back.AllClose(x, 1e-12, 1e-12) {
				t.Errorf("n=%d: IFFT(FFT(x)) differs from x", n)
			}
			r := randFloat64(dev, uint64(n)+1, -1, 1, 2, n)
			if n > 1 && !tensor.IRFFT(tensor.RFFT(r, 0, -1, ""), n, -1, "").AllClose(r, 1e-12, 1e-12) {
				t.Errorf("n=%d: IRFFT(RFFT(x)) differs from x", n)
			}
		}
	})
}

func TestFFTBadInputs(t *testing.T) {
	nnRunBadInputs(t, []nnBadCase{
		{"not complex", func(d tensor.Device) { tensor.FFT(tensor.Zeros(d, 4, 3), 0, -1, "") },
			tensor.ErrShape, "tensor.FFT: input [4 3] is not a complex tensor"},
		{"dim out of range", func(d tensor.Device) { tensor.IFFT(tensor.Zeros(d, 4, 2), 0, 1, "") },
			tensor.ErrArgument, "dimension 1 out of range for a tensor of rank 1"},
		{"bad norm", func(d tensor.Device) { tensor.RFFT(tensor.Zeros(d, 4), 0, -1, "unitary") },
			tensor.ErrArgument, "unknown norm \"unitary\""},
		{"negative n", func(d tensor.Device) { tensor.RFFT(tensor.Zeros(d, 4), -2, -1, "") },
			tensor.ErrArgument, "n = -2"},
		{"empty dim", func(d tensor.Device) { tensor.FFT(tensor.Zeros(d, 3, 0, 2), 0, -1, "") },
			tensor.ErrArgument, "is empty"},
		{"irfft one frequency", func(d tensor.Device) { tensor.IRFFT(tensor.Zeros(d, 1, 2), 0, -1, "") },
			tensor.ErrArgument, "give the output length n"},
		{"0-d rfft", func(d tensor.Device) { tensor.RFFT(tensor.Scalar(d, 1), 0, 0, "") },
			tensor.ErrShape, "0-d"},
		{"fftn repeated dim", func(d tensor.Device) { tensor.FFTN(tensor.Zeros(d, 3, 4, 2), []int{0, -2}, "") },
			tensor.ErrArgument, "appears twice"},
	})
}

// BenchmarkFFT times complex FFTs of a batch of 64 Float32 signals along
// their last dimension, for power-of-two and mixed-radix lengths, through
// the tensor API (host read, transform, upload). The metric counts the
// conventional 5·n·log2(n) flops per transform.
func BenchmarkFFT(b *testing.B) {
	for _, n := range []int{1024, 4096, 1000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			dev := tensor.CPU()
			tensor.Scope(func() {
				x := tensor.Randn(dev, 64, n, 2)
				for b.Loop() {
					y := tensor.FFT(x, 0, -1, "")
					if err := dev.Sync(); err != nil {
						b.Fatal(err)
					}
					y.Release()
				}
			})
			flops := 5 * float64(n) * math.Log2(float64(n)) * 64
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// TestFFTIntegerInput checks that integer signals are transformed in
// Float32, as torch.fft promotes them.
func TestFFTIntegerInput(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := tensor.FromInt64s(dev, []int64{1, 2, 3, 4}, 4)
		got := tensor.RFFT(x, 0, -1, "")
		if got.DType() != tensor.Float32 {
			t.Fatalf("dtype %s, want float32", got.DType())
		}
		assertValues(t, "rfft of int64", got, []int{3, 2}, []float64{10, 0, -2, 2, -2, 0}, 1e-6, 1e-6)
	})
}
