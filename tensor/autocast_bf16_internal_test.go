package tensor

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// bf16Case is one product on a BFloat16 Autocast view: a Linear (weight
// [out in], optional bias) or a Matmul of a and b, given as shapes.
type bf16Case struct {
	name   string
	linear bool
	a, b   []int // Linear: x and weight; Matmul: the operands
	bias   bool
	transB bool // Matmul: b is given as a transposed view of a [n k] tensor
}

func bf16Cases() []bf16Case {
	return []bf16Case{
		{name: "linear 2-D with bias", linear: true, a: []int{7, 33}, b: []int{19, 33}, bias: true},
		{name: "linear 3-D with bias", linear: true, a: []int{2, 5, 40}, b: []int{24, 40}, bias: true},
		{name: "linear 1-D without bias", linear: true, a: []int{17}, b: []int{6, 17}},
		{name: "matmul 2-D", a: []int{9, 21}, b: []int{21, 13}},
		{name: "matmul transposed right", a: []int{9, 21}, b: []int{21, 13}, transB: true},
		{name: "matmul batch against one matrix", a: []int{3, 4, 18}, b: []int{18, 11}},
		{name: "matmul broadcast batches", a: []int{2, 1, 5, 12}, b: []int{3, 12, 7}},
		{name: "matmul vector-matrix", a: []int{15}, b: []int{15, 4}},
		{name: "matmul matrix-vector", a: []int{6, 15}, b: []int{15}},
		{name: "matmul vector-vector", a: []int{30}, b: []int{30}},
	}
}

// bf16Values returns random values for c's inputs (a, b as stored, bias),
// from value; b is stored [... n k] when c.transB.
func bf16Values(c bf16Case, value func() float64) [][]float32 {
	var vals [][]float32
	for _, shape := range bf16Shapes(c) {
		v := make([]float32, backends.NumElements(shape))
		for i := range v {
			v[i] = float32(value())
		}
		vals = append(vals, v)
	}
	return vals
}

// bf16Shapes returns the shapes of c's stored inputs.
func bf16Shapes(c bf16Case) [][]int {
	b := c.b
	if c.transB {
		r := len(c.b)
		b = append(append([]int{}, c.b[:r-2]...), c.b[r-1], c.b[r-2])
	}
	shapes := [][]int{c.a, b}
	if c.bias {
		shapes = append(shapes, []int{c.b[0]})
	}
	return shapes
}

// bf16Inputs returns c's float32 inputs made from vals: the leaves, which
// require gradients when grad is set (the first on the BFloat16 Autocast
// view of the CPU, the others on the plain device), and the op's operands
// (b transposed when c.transB).
func bf16Inputs(c bf16Case, vals [][]float32, grad bool) (leaves, operands []*Tensor) {
	dev := CPU().Autodiff()
	for i, shape := range bf16Shapes(c) {
		d := dev
		if i == 0 {
			d = dev.Autocast(BFloat16)
		}
		l := FromFloat32s(d, vals[i], shape...)
		if grad {
			l = l.RequireGrad()
		}
		leaves = append(leaves, l)
	}
	operands = append([]*Tensor{}, leaves...)
	if c.transB {
		operands[1] = leaves[1].Transpose(-1, -2)
	}
	return leaves, operands
}

// bf16Apply computes c's op on ins.
func bf16Apply(c bf16Case, ins []*Tensor) *Tensor {
	if c.linear {
		var bias *Tensor
		if c.bias {
			bias = ins[2]
		}
		return Linear(ins[0], ins[1], bias)
	}
	return ins[0].Matmul(ins[1])
}

// bf16Round returns v rounded to bfloat16 (to nearest even).
func bf16Round(v float64) float64 {
	return float64(backends.BFloat16ToFloat32(backends.Float32ToBFloat16(float32(v))))
}

// bf16Reference returns c's op computed in float64 on the host from ins
// rounded to bfloat16 (the bias not rounded), with, for each output, the
// bound Σ|aₖbₖ| that scales its float32 summation error.
func bf16Reference(c bf16Case, ins []*Tensor) (want, scale []float64) {
	round := func(t *Tensor) *Tensor {
		v := t.Float64s()
		for i := range v {
			v[i] = bf16Round(v[i])
		}
		return FromFloat64s(CPU(), v, t.Shape()...)
	}
	a, b := round(ins[0]), round(ins[1])
	abs := func(t *Tensor) *Tensor {
		v := t.Float64s()
		for i := range v {
			v[i] = math.Abs(v[i])
		}
		return FromFloat64s(CPU(), v, t.Shape()...)
	}
	var y, s *Tensor
	if c.linear {
		y = a.Matmul(b.Transpose(0, 1))
		s = abs(a).Matmul(abs(b).Transpose(0, 1))
		if c.bias {
			bias := FromFloat64s(CPU(), ins[2].Float64s(), ins[2].Shape()...)
			y = y.Add(bias)
			s = s.Add(abs(bias))
		}
	} else {
		y = a.Matmul(b)
		s = abs(a).Matmul(abs(b))
	}
	return y.Float64s(), s.Float64s()
}

func TestAutocastBF16MatchesRoundedProduct(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range bf16Cases() {
		t.Run(c.name, func(t *testing.T) {
			Scope(func() {
				_, ins := bf16Inputs(c, bf16Values(c, rng.NormFloat64), true)
				y := bf16Apply(c, ins)
				if y.DType() != Float32 {
					t.Fatalf("result dtype %s, want float32", y.DType())
				}
				if d, ok := y.Device().AutocastDType(); !ok || d != BFloat16 {
					t.Fatalf("result left the autocast view")
				}
				wantOp := "matmul"
				if c.linear {
					wantOp = "linear"
				}
				if y.node == nil || y.node.Op != wantOp || y.node.Attrs["autocast"] != "bfloat16" {
					t.Fatalf("graph node %+v, want %s with autocast bfloat16", y.node, wantOp)
				}
				want, scale := bf16Reference(c, ins)
				got := y.Float64s()
				if len(got) != len(want) {
					t.Fatalf("%d outputs, want %d", len(got), len(want))
				}
				k := c.a[len(c.a)-1]
				for i := range got {
					// float32 summation of k exact products
					tol := float64(k+2)*0x1p-24*scale[i] + 1e-30
					if math.Abs(got[i]-want[i]) > tol {
						t.Fatalf("output %d = %.9g, bfloat16-rounded product %.9g (tolerance %.3g)", i, got[i], want[i], tol)
					}
				}
			})
		})
	}
}

// TestAutocastBF16GradientsFiniteDifference checks the gradients of
// L = Σ w·y for each case against central differences of L computed by
// the op itself. The inputs are multiples of 1/64 in [-2, 2] and the step
// 1/64, so that x and x ± h are exact in bfloat16 and every product and
// sum is exact in float32: the autocast op is then exactly bilinear at
// these points and the difference quotient is its derivative, which the
// gradient (computed with the upstream gradient and the other operand
// rounded to bfloat16) must match to within float32 rounding.
func TestAutocastBF16GradientsFiniteDifference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	grid := func() float64 { return float64(rng.IntN(257)-128) / 64 }
	const h = 1.0 / 64
	for _, c := range bf16Cases() {
		t.Run(c.name, func(t *testing.T) {
			Scope(func() {
				vals := bf16Values(c, grid)
				leaves, ins := bf16Inputs(c, vals, true)
				y := bf16Apply(c, ins)
				wv := make([]float32, y.NumElements())
				for i := range wv {
					wv[i] = float32(rng.IntN(17)-8) / 8
				}
				w := FromFloat32s(CPU(), wv, y.Shape()...)
				grads := y.Mul(w).Sum().Backward()
				loss := func() float64 {
					var l float64
					Scope(func() {
						_, ins := bf16Inputs(c, vals, false)
						for i, v := range bf16Apply(c, ins).Float64s() {
							l += float64(wv[i]) * v
						}
					})
					return l
				}
				for j, leaf := range leaves {
					g := grads.Get(leaf)
					if g == nil || g.DType() != Float32 {
						t.Fatalf("input %d: gradient %v, want float32", j, g)
					}
					gv := g.Float64s()
					for i := range vals[j] {
						v := vals[j][i]
						vals[j][i] = v + h
						lp := loss()
						vals[j][i] = v - h
						lm := loss()
						vals[j][i] = v
						fd := (lp - lm) / (2 * h)
						if math.Abs(gv[i]-fd) > 1e-4*(1+math.Abs(fd)) {
							t.Fatalf("input %d element %d: gradient %.7g, finite difference %.7g", j, i, gv[i], fd)
						}
					}
				}
			})
		})
	}
}

// TestAutocastBF16GradientsMatchCastingPath checks the direct bfloat16
// path against the casting one (inputs cast To(BFloat16), a bfloat16
// result, composeOnly): outputs and gradients agree to bfloat16 rounding.
func TestAutocastBF16GradientsMatchCastingPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range bf16Cases() {
		t.Run(c.name, func(t *testing.T) {
			if !c.linear && len(c.a) == 1 && len(c.b) == 1 {
				// matmulBackward (linalg.go), which the casting path
				// uses, cannot take a 0-d gradient yet
				t.Skip("Matmul of two vectors has no backward on the casting path")
			}
			Scope(func() {
				vals := bf16Values(c, rng.NormFloat64)
				run := func(casting bool) (out []float64, grads [][]float64) {
					composeOnly.Store(casting)
					defer composeOnly.Store(false)
					leaves, ins := bf16Inputs(c, vals, true)
					y := bf16Apply(c, ins)
					if casting != (y.DType() == BFloat16) {
						t.Fatalf("casting=%v: result dtype %s", casting, y.DType())
					}
					gs := y.Square().Sum().Backward()
					for _, l := range leaves {
						g := gs.Get(l)
						if g.DType() != Float32 {
							t.Fatalf("casting=%v: gradient dtype %s", casting, g.DType())
						}
						grads = append(grads, g.Float64s())
					}
					return y.Float64s(), grads
				}
				out, grads := run(false)
				castOut, castGrads := run(true)
				near := func(what string, got, want []float64) {
					big := 0.0
					for _, v := range want {
						big = max(big, math.Abs(v))
					}
					for i := range got {
						if math.Abs(got[i]-want[i]) > 2e-2*big {
							t.Fatalf("%s %d: direct %.6g, casting path %.6g (largest %.3g)", what, i, got[i], want[i], big)
						}
					}
				}
				near("output", out, castOut)
				for j := range grads {
					near("gradient", grads[j], castGrads[j])
				}
			})
		})
	}
}

// BenchmarkAutocastBF16Linear times a Linear forward and backward at the
// shape of the GPT benchmark's first feed-forward layer (2048 rows, 256 →
// 1024 features), in float32 and with the input on a BFloat16 Autocast
// view (three bfloat16 GEMMs), reporting GFLOP/s of the three products;
// run with -count so that the two alternate.
func BenchmarkAutocastBF16Linear(b *testing.B) {
	c := bf16Case{linear: true, a: []int{2048, 256}, b: []int{1024, 256}, bias: true}
	vals := bf16Values(c, rand.New(rand.NewPCG(7, 8)).NormFloat64)
	for _, mode := range []string{"fp32", "bf16"} {
		b.Run(mode, func(b *testing.B) {
			run := func() {
				Scope(func() {
					_, ins := bf16Inputs(c, vals, true)
					if mode == "fp32" {
						ins[0] = FromFloat32s(CPU().Autodiff(), vals[0], c.a...).RequireGrad()
					}
					bf16Apply(c, ins).Sum().Backward()
				})
			}
			run()
			b.ResetTimer()
			for range b.N {
				run()
			}
			flops := 3 * 2 * float64(c.a[0]*c.a[1]*c.b[0])
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
