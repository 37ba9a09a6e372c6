package nn_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// moments returns the mean, the standard deviation and the extremes of
// values.
func moments(v []float64) (mean, std, lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range v {
		mean += x
		lo, hi = min(lo, x), max(hi, x)
	}
	mean /= float64(len(v))
	for _, x := range v {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(v))), lo, hi
}

func TestFans(t *testing.T) {
	for _, c := range []struct {
		shape       []int
		fanIn, fout int
	}{
		{[]int{}, 1, 1},
		{[]int{7}, 7, 7},
		{[]int{3, 5}, 5, 3},
		{[]int{16, 3, 3, 3}, 27, 144},
		{[]int{4, 2, 5}, 10, 20},
	} {
		if fi, fo := nn.Fans(c.shape); fi != c.fanIn || fo != c.fout {
			t.Errorf("Fans(%v) = %d, %d, want %d, %d", c.shape, fi, fo, c.fanIn, c.fout)
		}
	}
}

// TestInitializerBounds checks the uniform initialisers' bounds and the
// normal ones' standard deviations against their defining formulas, on
// draws large enough that the extremes come within 1% of the bound.
func TestInitializerBounds(t *testing.T) {
	const fanIn, fanOut = 250, 400
	shape := []int{fanOut, fanIn} // 100,000 values
	cases := []struct {
		name    string
		init    nn.Initializer
		uniform bool    // U(−bound, bound) rather than N(0, bound²)
		bound   float64 // the bound, or the standard deviation
	}{
		{"kaiming uniform PyTorch default", nn.KaimingUniform{A: math.Sqrt(5)}, true, 1 / math.Sqrt(fanIn)},
		{"kaiming uniform relu", nn.KaimingUniform{Nonlinearity: "relu"}, true, math.Sqrt(6.0 / fanIn)},
		{"kaiming uniform fan out", nn.KaimingUniform{Nonlinearity: "relu", FanOut: true}, true, math.Sqrt(6.0 / fanOut)},
		{"kaiming uniform leaky 0.1", nn.KaimingUniform{A: 0.1}, true, math.Sqrt(2/1.01) * math.Sqrt(3.0/fanIn)},
		{"kaiming normal relu", nn.KaimingNormal{Nonlinearity: "relu"}, false, math.Sqrt(2.0 / fanIn)},
		{"kaiming normal tanh fan out", nn.KaimingNormal{Nonlinearity: "tanh", FanOut: true}, false,
			5.0 / 3 / math.Sqrt(fanOut)},
		{"xavier uniform", nn.XavierUniform{}, true, math.Sqrt(6.0 / (fanIn + fanOut))},
		{"xavier uniform gain", nn.XavierUniform{Gain: 2}, true, 2 * math.Sqrt(6.0/(fanIn+fanOut))},
		{"xavier normal", nn.XavierNormal{}, false, math.Sqrt(2.0 / (fanIn + fanOut))},
		{"uniform", nn.Uniform{Low: -0.3, High: 0.3}, true, 0.3},
		{"normal", nn.Normal{Std: 0.02}, false, 0.02},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				w := c.init.Init(dev, shape, fanIn, fanOut)
				if w.DType() != tensor.Float32 || fmt.Sprint(w.Shape()) != fmt.Sprint(shape) {
					t.Fatalf("got %v %s, want %v float32", w.Shape(), w.DType(), shape)
				}
				mean, std, lo, hi := moments(w.Float64s())
				wantStd := c.bound
				if c.uniform {
					wantStd = c.bound / math.Sqrt(3)
					if lo < -c.bound || hi > c.bound || lo > -0.99*c.bound || hi < 0.99*c.bound {
						t.Errorf("range [%v, %v], want within and near ±%v", lo, hi, c.bound)
					}
				}
				if math.Abs(mean) > 5*wantStd/math.Sqrt(float64(fanIn*fanOut)) {
					t.Errorf("mean %v, want 0", mean)
				}
				if math.Abs(std/wantStd-1) > 0.01 {
					t.Errorf("standard deviation %v, want %v", std, wantStd)
				}
			})
		})
	}
}

// truncatedMoments returns the mean and standard deviation of N(μ, σ²)
// truncated to [a, b].
func truncatedMoments(mu, sigma, a, b float64) (mean, std float64) {
	pdf := func(z float64) float64 { return math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) }
	cdf := func(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
	al, be := (a-mu)/sigma, (b-mu)/sigma
	z := cdf(be) - cdf(al)
	d := (pdf(al) - pdf(be)) / z
	v := 1 + (al*pdf(al)-be*pdf(be))/z - d*d
	return mu + sigma*d, sigma * math.Sqrt(v)
}

func TestTruncatedNormal(t *testing.T) {
	cases := []struct {
		name            string
		init            nn.TruncatedNormal
		mu, sigma, a, b float64
	}{
		{"PyTorch defaults", nn.TruncatedNormal{}, 0, 1, -2, 2},
		{"ViT weights", nn.TruncatedNormal{Std: 0.02, A: -0.04, B: 0.04}, 0, 0.02, -0.04, 0.04},
		{"shifted asymmetric", nn.TruncatedNormal{Mean: 1, Std: 0.5, A: 0, B: 3}, 1, 0.5, 0, 3},
		{"far upper tail", nn.TruncatedNormal{Std: 1, A: 4, B: 6}, 0, 1, 4, 6},
		{"far lower tail", nn.TruncatedNormal{Std: 1, A: -9, B: -7}, 0, 1, -9, -7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				const n = 200000
				w := c.init.Init(dev, []int{n / 100, 100}, 100, n/100)
				mean, std, lo, hi := moments(w.Float64s())
				if lo < c.a || hi > c.b {
					t.Errorf("range [%v, %v] outside [%v, %v]", lo, hi, c.a, c.b)
				}
				wantMean, wantStd := truncatedMoments(c.mu, c.sigma, c.a, c.b)
				if math.Abs(mean-wantMean) > 5*wantStd/math.Sqrt(n) {
					t.Errorf("mean %v, want %v", mean, wantMean)
				}
				if math.Abs(std/wantStd-1) > 0.01 {
					t.Errorf("standard deviation %v, want %v", std, wantStd)
				}
			})
		})
	}
}

// gram returns M·Mᵀ of a row-major r×c matrix (rowsOrthonormal) or Mᵀ·M.
func gram(m []float64, r, c int, rows bool) ([]float64, int) {
	if rows {
		g := make([]float64, r*r)
		for i := range r {
			for j := range r {
				for k := range c {
					g[i*r+j] += m[i*c+k] * m[j*c+k]
				}
			}
		}
		return g, r
	}
	g := make([]float64, c*c)
	for i := range c {
		for j := range c {
			for k := range r {
				g[i*c+j] += m[k*c+i] * m[k*c+j]
			}
		}
	}
	return g, c
}

func TestOrthogonal(t *testing.T) {
	cases := []struct {
		name  string
		shape []int
		gain  float64
	}{
		{"tall", []int{12, 5}, 0},
		{"wide", []int{5, 12}, 0},
		{"square with gain", []int{7, 7}, 2},
		{"conv weight", []int{8, 2, 3, 3}, 0},
		{"column", []int{6, 1}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				w := nn.Orthogonal{Gain: c.gain}.Init(dev, c.shape, 0, 0)
				if fmt.Sprint(w.Shape()) != fmt.Sprint(c.shape) || w.DType() != tensor.Float32 {
					t.Fatalf("got %v %s, want %v float32", w.Shape(), w.DType(), c.shape)
				}
				r := c.shape[0]
				cols := w.NumElements() / r
				g, n := gram(w.Float64s(), r, cols, r < cols)
				gain := c.gain
				if gain == 0 {
					gain = 1
				}
				for i := range n {
					for j := range n {
						want := 0.0
						if i == j {
							want = gain * gain
						}
						if math.Abs(g[i*n+j]-want) > 1e-5*gain*gain {
							t.Fatalf("Gram matrix [%d, %d] = %v, want %v", i, j, g[i*n+j], want)
						}
					}
				}
			})
		})
	}
}

// TestInitializersFollowSeed checks that the random initialisers draw from
// the device's stream: the same seed gives the same values.
func TestInitializersFollowSeed(t *testing.T) {
	inits := []nn.Initializer{nn.KaimingUniform{A: math.Sqrt(5)}, nn.XavierNormal{}, nn.TruncatedNormal{Std: 0.02},
		nn.Orthogonal{}}
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		for _, in := range inits {
			dev.Seed(11)
			a := in.Init(dev, []int{4, 6}, 6, 4).Float64s()
			b := in.Init(dev, []int{4, 6}, 6, 4).Float64s()
			dev.Seed(11)
			c := in.Init(dev, []int{4, 6}, 6, 4).Float64s()
			if fmt.Sprint(a) != fmt.Sprint(c) {
				t.Errorf("%T: reseeding gave other values", in)
			}
			if fmt.Sprint(a) == fmt.Sprint(b) {
				t.Errorf("%T: two draws gave the same values", in)
			}
		}
	})
}
