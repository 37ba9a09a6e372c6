package cpu

import (
	"bytes"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// outGradOps are the ops with a derivative in terms of their output, with
// the range of that output.
var outGradOps = []struct {
	op     backends.UnaryOp
	lo, hi float64
}{
	{backends.Exp, 0, 50}, {backends.Tanh, -1, 1}, {backends.Sigmoid, 0, 1},
}

// outGradFactorExact returns DFOut(y) (y, 1 − y² or y − y²) computed
// exactly and rounded once to float32.
func outGradFactorExact(op backends.UnaryOp, y float32) float32 {
	v := new(big.Float).SetPrec(200).SetFloat64(float64(y))
	sq := new(big.Float).SetPrec(200).Mul(v, v)
	switch op {
	case backends.Tanh:
		v = new(big.Float).SetPrec(200).Sub(big.NewFloat(1), sq)
	case backends.Sigmoid:
		v = new(big.Float).SetPrec(200).Sub(v, sq)
	}
	f, _ := v.Float32()
	return f
}

// TestUnaryGradOutputFactors checks the float32 factor of every op against
// its exact value rounded once, in the vector kernels and in Go, at the
// ends of the output ranges, near 0, 1/2 and 1, and at random points, and
// g·factor against g times it.
func TestUnaryGradOutputFactors(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range outGradOps {
		ys := []float32{0, 1, -1, 0.5, 1e-30, 0x1p-126, 0x1p-149, math.Nextafter32(1, 0), math.Nextafter32(0.5, 1), 0x1p-13 * (1 + 0x1p-23)}
		for range 20000 {
			ys = append(ys, float32(c.lo+(c.hi-c.lo)*r.Float64()))
			ys = append(ys, float32(math.Ldexp(r.Float64(), -r.IntN(40))))   // small
			ys = append(ys, float32(1-math.Ldexp(r.Float64(), -r.IntN(24)))) // near 1
		}
		ones := make([]float32, len(ys))
		for i := range ones {
			ones[i] = 1
		}
		vec, gof := make([]float32, len(ys)), make([]float32, len(ys))
		outGradF32(c.op, vec, ys, ones, false)
		outGradGoF32(c.op, gof, ys, ones)
		for i, y := range ys {
			if c.op == backends.Sigmoid && y < 0 || c.op == backends.Exp && y < 0 {
				continue
			}
			want := outGradFactorExact(c.op, y)
			if math.Float32bits(vec[i]) != math.Float32bits(want) || math.Float32bits(gof[i]) != math.Float32bits(want) {
				t.Fatalf("%s at y = %g (%#x): factor %g (vector), %g (Go), want %g", c.op, y, math.Float32bits(y), vec[i], gof[i], want)
			}
		}
		// with g: g·factor rounded once more
		g := make([]float32, len(ys))
		for i := range g {
			g[i] = float32(r.NormFloat64() * math.Ldexp(1, r.IntN(20)-10))
		}
		outGradF32(c.op, vec, ys, g, false)
		outGradGoF32(c.op, gof, ys, g)
		for i, y := range ys {
			want := g[i] * outGradFactorExact(c.op, y)
			if c.op == backends.Sigmoid && y < 0 || c.op == backends.Exp && y < 0 {
				want = gof[i]
			}
			if math.Float32bits(vec[i]) != math.Float32bits(want) || math.Float32bits(gof[i]) != math.Float32bits(want) {
				t.Fatalf("%s at y = %g, g = %g: %g (vector), %g (Go), want %g", c.op, y, g[i], vec[i], gof[i], want)
			}
		}
	}
}

// TestUnaryGradOutput runs the backend op on views of every float dtype,
// contiguous (past the non-temporal threshold too), transposed and with a
// broadcast g, against g·DFOut(y) in float64, and against UnaryGrad from
// the x that gave y.
func TestUnaryGradOutput(t *testing.T) {
	for _, threads := range []int{1, 3} {
		be := New(threads)
		for _, c := range outGradOps {
			for _, dt := range []backends.DType{backends.Float32, backends.Float64, backends.BFloat16, backends.Float16} {
				for _, shape := range [][]int{{7, 33}, {1 << 23}} {
					if dt != backends.Float32 && shape[0] > 100 {
						continue
					}
					x := allocView(be, dt, shape...)
					fillRandom(x, 3, true)
					y, g, out, fromX := allocView(be, dt, shape...), randView(be, dt, 4, shape...), allocView(be, dt, shape...), allocView(be, dt, shape...)
					be.Unary(c.op, y, x, 0, 0)
					be.UnaryGradOutput(c.op, out, y, g)
					be.UnaryGrad(c.op, fromX, x, g, 0, 0)
					if err := be.Sync(); err != nil {
						t.Fatal(err)
					}
					ob, yb, gb, xb := buf(out), buf(y), buf(g), buf(fromX)
					for i := range ob.n {
						want := refLoad(gb, i) * backends.UnaryOps[c.op].DFOut(refLoad(yb, i), 0, 0)
						got := refLoad(ob, i)
						if !closeRel(got, want, relTol(dt)) {
							t.Fatalf("%d threads, %s %s %v element %d: %g, want %g (y %g, g %g)", threads, c.op, dt, shape, i, got, want, refLoad(yb, i), refLoad(gb, i))
						}
						// from x: within the output's own error, against g
						if d := math.Abs(got - refLoad(xb, i)); d > 4*relTol(dt)*math.Max(math.Abs(refLoad(gb, i))*math.Max(1, math.Abs(refLoad(yb, i))), math.Abs(got)) && !math.IsNaN(d) {
							t.Fatalf("%d threads, %s %s element %d: from y %g, from x %g", threads, c.op, dt, i, got, refLoad(xb, i))
						}
					}
				}
			}
			// transposed y, broadcast g (one element), into a strided out
			y := randView(be, backends.Float32, 8, 5, 9)
			yt := y
			yt.Shape, yt.Strides = []int{9, 5}, []int{1, 9}
			g := randView(be, backends.Float32, 9, 1)
			gb := g
			gb.Shape, gb.Strides = []int{9, 5}, []int{0, 0}
			wide := allocView(be, backends.Float32, 9, 10)
			out := wide
			out.Shape, out.Strides = []int{9, 5}, []int{10, 2}
			be.UnaryGradOutput(c.op, out, yt, gb)
			if err := be.Sync(); err != nil {
				t.Fatal(err)
			}
			yf, gv, of := buf(y).f32(), buf(g).f32()[0], buf(wide).f32()
			for i := range 9 {
				for j := range 5 {
					want := gv * outGradFactorExact(c.op, yf[j*9+i])
					if c.op == backends.Sigmoid && yf[j*9+i] < 0 {
						want = float32(float64(gv) * (float64(yf[j*9+i]) - float64(yf[j*9+i])*float64(yf[j*9+i])))
					}
					if got := of[i*10+2*j]; !closeRel(float64(got), float64(want), 1e-6) {
						t.Fatalf("%s strided [%d,%d]: %g, want %g", c.op, i, j, got, want)
					}
					if of[i*10+2*j+1] != 0 {
						t.Fatalf("%s strided: wrote between the out elements", c.op)
					}
				}
			}
		}
	}
}

// relTol is the relative tolerance TestUnaryGradOutput allows for dt.
func relTol(dt backends.DType) float64 {
	switch dt {
	case backends.Float64:
		return 1e-15
	case backends.Float32:
		return 0x1p-23
	case backends.BFloat16:
		return 0x1p-7
	}
	return 0x1p-10
}

// closeRel reports whether got is within tol of want relative to |want|
// (NaNs and infinities must match).
func closeRel(got, want, tol float64) bool {
	if math.IsNaN(want) || math.IsInf(want, 0) {
		return math.IsNaN(got) == math.IsNaN(want) && (math.IsNaN(got) || got == want)
	}
	return math.Abs(got-want) <= tol*math.Abs(want)
}

// TestUnaryGradOutputRefuses checks that UnaryGradOutput refuses, writing
// nothing, ops without DFOut, integer views and mismatched shapes.
func TestUnaryGradOutputRefuses(t *testing.T) {
	be := New(1)
	f32 := backends.Float32
	y, g := randView(be, f32, 1, 4, 5), randView(be, f32, 2, 4, 5)
	for _, c := range []struct {
		name, want string
		op         backends.UnaryOp
		out, y, g  backends.View
	}{
		{"gelu has no derivative from its output", "gelu has no derivative in terms of its output", backends.Gelu, allocView(be, f32, 4, 5), y, g},
		{"an op past the table", "no derivative", backends.UnaryOp(250), allocView(be, f32, 4, 5), y, g},
		{"integer y", "y is int64", backends.Exp, allocView(be, f32, 4, 5), randView(be, backends.Int64, 3, 4, 5), g},
		{"g too small for out", "input 1", backends.Tanh, allocView(be, f32, 4, 5), y, randView(be, f32, 2, 2, 5)},
	} {
		t.Run(c.name, func(t *testing.T) {
			fillRandom(c.out, 9, false)
			before := rawSnapshot(c.out)
			be.UnaryGradOutput(c.op, c.out, c.y, c.g)
			err := be.Sync()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got error %v, want one containing %q", err, c.want)
			}
			if !bytes.Equal(rawSnapshot(c.out), before) {
				t.Errorf("out was written")
			}
		})
	}
}
