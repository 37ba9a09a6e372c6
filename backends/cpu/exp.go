package cpu

import "math"

// expF32 returns float32(math.Exp(float64(x))), bit for bit, about twice as
// fast. It evaluates exp in float64 as 2^(k/32)·2^(j/32)·p(r) with a table
// of 32 powers of two and a degree-6 polynomial on |r| ≤ ln2/64 (relative
// error a few float64 ulps), then checks that the result is more than 256
// float64 ulps away from a float32 rounding boundary. math.Exp is within 1
// ulp of exp(x), so both then round to the same float32; the rare values
// near a boundary (about one in two million), non-finite inputs, and
// results outside float32's normal range go to math.Exp itself.
func expF32(x float32) float32 {
	xd := float64(x)
	if !(xd >= -87 && xd <= 88.5) { // also NaN
		return float32(math.Exp(xd))
	}
	const magic = 0x1.8p52 // adding and subtracting it rounds to an integer
	kf := xd*(32/math.Ln2) + magic - magic
	k := int64(kf)
	// Cody–Waite reduction: kf·ln2by32Hi is exact (|k| < 2^13, Hi has 40
	// significant bits) and so is the subtraction (Sterbenz).
	r := (xd - kf*ln2by32Hi) - kf*ln2by32Lo
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720))))))
	scale := math.Float64frombits(uint64((k>>5)+1023) << 52)
	y := exp2Table[k&31] * p * scale
	// the 29 low mantissa bits are what rounding to float32 discards; a
	// boundary is at 1<<28 of them
	if d := math.Float64bits(y)&(1<<29-1) - 1<<28; d+256 <= 512 {
		return float32(math.Exp(xd))
	}
	return float32(y)
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
