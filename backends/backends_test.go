package backends

import (
	"math"
	"testing"
)

func TestPromote(t *testing.T) {
	cases := []struct {
		name    string
		a, b, w DType
	}{
		{"same", Float32, Float32, Float32},
		{"bool with int", Bool, Int32, Int32},
		{"int widths", Int32, Int64, Int64},
		{"uint8 with int32", Uint8, Int32, Int32},
		{"int with float", Int64, Float32, Float32},
		{"float widths", Float32, Float64, Float64},
		{"half with bfloat", Float16, BFloat16, Float32},
		{"half with float32", Float16, Float32, Float32},
		{"bool with half", Bool, Float16, Float16},
		{"bool with bool", Bool, Bool, Bool},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Promote(c.a, c.b); got != c.w {
				t.Errorf("Promote(%s, %s) = %s, want %s", c.a, c.b, got, c.w)
			}
			if got := Promote(c.b, c.a); got != c.w {
				t.Errorf("Promote(%s, %s) = %s, want %s (not symmetric)", c.b, c.a, got, c.w)
			}
		})
	}
	if PromoteScalar(Int64, true, Float32) != Float32 || PromoteScalar(Int32, false, Float32) != Int32 ||
		PromoteScalar(Bool, false, Float32) != Int64 || PromoteScalar(Float16, true, Float32) != Float16 {
		t.Error("scalar promotion differs from PyTorch's")
	}
}

func TestParseDType(t *testing.T) {
	for _, d := range DTypes() {
		got, err := ParseDType(d.String())
		if err != nil || got != d {
			t.Errorf("ParseDType(%q) = %v, %v", d.String(), got, err)
		}
	}
	if _, err := ParseDType("complex64"); err == nil {
		t.Error("unknown dtype accepted")
	}
}

func TestHalfConversions(t *testing.T) {
	cases := []struct {
		name string
		f    float32
		bits uint16
	}{
		{"one", 1, 0x3c00},
		{"minus two", -2, 0xc000},
		{"max half", 65504, 0x7bff},
		{"overflow to inf", 65520, 0x7c00},
		{"smallest subnormal", float32(math.Ldexp(1, -24)), 0x0001},
		{"largest subnormal", float32(math.Ldexp(1023, -24)), 0x03ff},
		{"round to even down", 1 + float32(math.Ldexp(1, -11)), 0x3c00},
		{"round to even up", 1 + 3*float32(math.Ldexp(1, -11)), 0x3c02},
		{"negative zero", float32(math.Copysign(0, -1)), 0x8000},
		{"inf", float32(math.Inf(1)), 0x7c00},
		{"underflow", float32(math.Ldexp(1, -26)), 0x0000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Float32ToFloat16(c.f); got != c.bits {
				t.Errorf("Float32ToFloat16(%v) = %#04x, want %#04x", c.f, got, c.bits)
			}
		})
	}
	// Every finite half value converts to float32 and back unchanged.
	for h := 0; h < 1<<16; h++ {
		if h&0x7c00 == 0x7c00 {
			continue
		}
		if back := Float32ToFloat16(Float16ToFloat32(uint16(h))); back != uint16(h) {
			t.Fatalf("half %#04x round-trips to %#04x", h, back)
		}
	}
	if !math.IsNaN(float64(Float16ToFloat32(Float32ToFloat16(float32(math.NaN()))))) {
		t.Error("NaN lost in half conversion")
	}
	// bfloat16: truncation with round to nearest even.
	if b := Float32ToBFloat16(1); b != 0x3f80 {
		t.Errorf("bf16(1) = %#04x", b)
	}
	if f := BFloat16ToFloat32(Float32ToBFloat16(3.140625)); f != 3.140625 {
		t.Errorf("bf16 round trip of an exact value gave %v", f)
	}
	if b := Float32ToBFloat16(math.Float32frombits(0x3f808000)); b != 0x3f80 { // tie, even stays
		t.Errorf("bf16 tie rounding %#04x", b)
	}
	if b := Float32ToBFloat16(math.Float32frombits(0x3f818000)); b != 0x3f82 { // tie, odd rounds up
		t.Errorf("bf16 tie rounding %#04x", b)
	}
}

// TestPhilox checks the known-answer vectors of Random123's Philox4x32-10.
func TestPhilox(t *testing.T) {
	cases := []struct {
		ctr  [4]uint32
		key  [2]uint32
		want [4]uint32
	}{
		{[4]uint32{0, 0, 0, 0}, [2]uint32{0, 0}, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{[4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, [2]uint32{0xffffffff, 0xffffffff},
			[4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{[4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0},
			[4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	}
	for _, c := range cases {
		if got := Philox4x32(c.ctr, c.key); got != c.want {
			t.Errorf("Philox4x32(%x, %x) = %x, want %x", c.ctr, c.key, got, c.want)
		}
	}
}

func TestRandomValueRanges(t *testing.T) {
	for pos := uint64(0); pos < 10000; pos++ {
		if u := RandomValue(Uniform, 5, pos, -1, 1); u < -1 || u >= 1 {
			t.Fatalf("uniform %v out of range", u)
		}
		if r := RandomValue(RandInt, 5, pos, 3, 7); r < 3 || r >= 7 || r != math.Trunc(r) {
			t.Fatalf("randint %v out of range", r)
		}
		if n := RandomValue(Normal, 5, pos, 0, 1); math.IsNaN(n) || math.IsInf(n, 0) {
			t.Fatalf("normal %v not finite", n)
		}
	}
}

func TestUnaryDerivativesMatchFiniteDifferences(t *testing.T) {
	params := map[UnaryOp][2]float64{LeakyRelu: {0.1, 0}, Elu: {1.3, 0}, Celu: {0.7, 0}, Softplus: {2, 20},
		Clamp: {-0.5, 0.8}, PowConst: {3, 0}}
	for op := UnaryOp(0); op < numUnaryOps; op++ {
		def := UnaryOps[op]
		if def.Predicate || def.DF == nil {
			continue
		}
		p := params[op]
		for _, x := range []float64{-2.7, -1.1, -0.3, 0.45, 1.2, 2.9} {
			if (op == Log || op == Sqrt || op == Rsqrt) && x <= 0 {
				continue
			}
			if op == Log1p && x <= -1 {
				continue
			}
			const h = 1e-6
			num := (def.F(x+h, p[0], p[1]) - def.F(x-h, p[0], p[1])) / (2 * h)
			if d := def.DF(x, p[0], p[1]); math.Abs(d-num) > 1e-5*(1+math.Abs(num)) {
				t.Errorf("%s'(%v) = %v, finite difference %v", def.Name, x, d, num)
			}
		}
	}
}
