package cpu

import "math"

// mathExpF32 sets o[i] = float32(math.Exp(float64(x[i]))), bit for bit,
// about twice as fast as calling math.Exp: the portable loop of the float32
// exp kernel (transcendental.go) where no vector kernel runs. It evaluates exp in float64 as
// 2^(k/32)·p(r), with a table of the 32 powers 2^(j/32) and a degree-5
// polynomial (Estrin's scheme, for a short dependency chain) on
// |r| ≤ ln2/64, which is within about 15 float64 ulps of exp(x). It then
// checks that the result is more than 256 float64 ulps away from a float32
// rounding boundary: math.Exp is within 1 ulp of exp(x), so both then round
// to the same float32. The rare values near a boundary (about one in two
// million), non-finite inputs and results outside float32's normal range go
// to math.Exp itself. The test checks a sample of 4M inputs; all 2^32 were
// checked when this was written.
func mathExpF32(o, x []float32) {
	o = o[:len(x)]
	for i, v := range x {
		xd := float64(v)
		if !(xd >= -87 && xd <= 88.5) { // also NaN
			o[i] = float32(math.Exp(xd))
			continue
		}
		// expCore's steps, written out: the call would cost more than they do
		const magic = 0x1.8p52 // adding and subtracting it rounds to an integer
		kf := xd*(32/math.Ln2) + magic - magic
		k := int64(kf)
		// Cody–Waite reduction: kf·ln2by32Hi is exact (|k| < 2^13 and Hi
		// has 40 significant bits) and so is the subtraction (Sterbenz).
		r := (xd - kf*ln2by32Hi) - kf*ln2by32Lo
		r2 := r * r
		p := (1 + r) + r2*((1.0/2+r*(1.0/6))+r2*(1.0/24+r*(1.0/120)))
		// 2^(k/32) = 2^(k>>5)·2^((k&31)/32): add k>>5 to the table entry's exponent
		y := math.Float64frombits(math.Float64bits(exp2Table[k&31])+uint64(k>>5)<<52) * p
		// the 29 low mantissa bits are what rounding to float32 drops; a
		// boundary is at 1<<28 of them
		if d := math.Float64bits(y)&(1<<29-1) - 1<<28; d+256 <= 512 {
			y = math.Exp(xd)
		}
		o[i] = float32(y)
	}
}

// expCore returns exp(x) for x in [-87, 88.5] within about 15 float64
// ulps, as mathExpF32 computes it before its check.
func expCore(xd float64) float64 {
	const magic = 0x1.8p52
	kf := xd*(32/math.Ln2) + magic - magic
	k := int64(kf)
	r := (xd - kf*ln2by32Hi) - kf*ln2by32Lo
	r2 := r * r
	p := (1 + r) + r2*((1.0/2+r*(1.0/6))+r2*(1.0/24+r*(1.0/120)))
	return math.Float64frombits(math.Float64bits(exp2Table[k&31])+uint64(k>>5)<<52) * p
}

var (
	ln2by32Hi = math.Float64frombits(math.Float64bits(math.Ln2/32) &^ (1<<13 - 1))
	ln2by32Lo = math.Ln2/32 - ln2by32Hi
	exp2Table = func() (t [32]float64) { // 2^(j/32), within 1 ulp
		for j := range t {
			t[j] = math.Exp2(float64(j) / 32)
		}
		return t
	}()
)
