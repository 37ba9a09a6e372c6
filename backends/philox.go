package backends

import "math"

// Philox4x32 computes the Philox4x32-10 block for counter ctr under key
// (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011).
// It is the generator behind Backend.Random; every backend must produce the
// same bits for the same (key, counter).
func Philox4x32(ctr [4]uint32, key [2]uint32) [4]uint32 {
	const (
		m0 = 0xD2511F53
		m1 = 0xCD9E8D57
		w0 = 0x9E3779B9
		w1 = 0xBB67AE85
	)
	for range 10 {
		p0 := uint64(m0) * uint64(ctr[0])
		p1 := uint64(m1) * uint64(ctr[2])
		ctr = [4]uint32{
			uint32(p1>>32) ^ ctr[1] ^ key[0],
			uint32(p1),
			uint32(p0>>32) ^ ctr[3] ^ key[1],
			uint32(p0),
		}
		key[0] += w0
		key[1] += w1
	}
	return ctr
}

// RandomBits returns the four 32-bit words for element position pos of a
// random stream keyed by seed.
func RandomBits(seed, pos uint64) [4]uint32 {
	return Philox4x32([4]uint32{uint32(pos), uint32(pos >> 32), 0x4b494c4e, 0},
		[2]uint32{uint32(seed), uint32(seed >> 32)})
}

// uniform53 turns two words into a float64 uniform on [0, 1) with 53 random bits.
func uniform53(hi, lo uint32) float64 {
	return float64((uint64(hi)<<21)^uint64(lo>>11)&(1<<53-1)) / (1 << 53)
}

// RandomValue returns element pos of the stream (seed) drawn from kind with
// parameters p0, p1, as Backend.Random defines it. Backends call it, or
// reproduce it bit for bit.
func RandomValue(kind RandomKind, seed, pos uint64, p0, p1 float64) float64 {
	r := RandomBits(seed, pos)
	u := uniform53(r[0], r[1])
	switch kind {
	case Uniform:
		return p0 + (p1-p0)*u
	case Normal:
		// Box–Muller with u1 in (0, 1] so the logarithm is finite.
		u1 := 1 - u
		u2 := uniform53(r[2], r[3])
		return p0 + p1*math.Sqrt(-2*math.Log(u1))*math.Cos(2*math.Pi*u2)
	case Bernoulli:
		if u < p0 {
			return 1
		}
		return 0
	case RandInt:
		span := p1 - p0
		return p0 + math.Floor(u*span)
	}
	return 0
}
