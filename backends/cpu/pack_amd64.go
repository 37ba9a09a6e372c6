//go:build !purego

package cpu

// packT6F32 sets dst[c·6+i] = src[i·lds+c] for i < 6 and c < cn (a
// multiple of 4): six rows of A, contiguous along k, into a 6-row panel
// (pack_amd64.s; SSE-width shuffles under the VEX encoding).
//
//go:noescape
func packT6F32(dst, src *float32, lds, cn int)

// packRows6F32 sets dst[p·ds+c·6+i] = src[c·ss+p·6+i] for i < 6, c < cn
// and p < np: np 6-row panels whose lines are contiguous, moved a whole
// source line (6·np elements) at a time, so that the source lines stay in
// L1 while they are read (a line a panel at a time, kc lines a row stride
// apart, evicts them between panels when the stride is a multiple of 4 KiB).
//
//go:noescape
func packRows6F32(dst, src *float32, ss, cn, np, ds int)

// packRows16F32 is packRows6F32 for 16-column panels (AVX).
//
//go:noescape
func packRows16F32(dst, src *float32, ss, cn, np, ds int)

// packRows32F32 is packRows6F32 for 32-column panels (AVX), those of
// the AVX-512 kernels.
//
//go:noescape
func packRows32F32(dst, src *float32, ss, cn, np, ds int)

// packRows8F32 is packRows6F32 for 8-row panels (AVX), the AVX-512 8×32
// kernel's A panels.
//
//go:noescape
func packRows8F32(dst, src *float32, ss, cn, np, ds int)

// packAVX2 enables packPanels and the 6-row transpose in packTransposed;
// tests and benchmarks turn it off to compare with the generic loops.
var packAVX2 = true

// packPanels packs np full panels of w lines of cn contiguous elements
// (panel p's line c at off + p·w + c·cs of s) into d, for float32 and the
// panel widths of the AVX2 kernel (6 and 16) and of the AVX-512 ones (8
// and 32), and reports false where it has no loop for them.
func packPanels[T float](d, s []T, off, cs, cn, w, np int) bool {
	df, ok := any(d).([]float32)
	if !ok || !hasAVX2 || !packAVX2 || cn == 0 || np == 0 || (w != 6 && w != 8 && w != 16 && w != 32) {
		return false
	}
	sf := any(s).([]float32)
	_ = df[np*cn*w-1]
	last := off + (cn-1)*cs // cs may be negative
	_, _, _, _ = sf[off], sf[off+np*w-1], sf[last], sf[last+np*w-1]
	g := 8 // panels moved per source line: 192 or 256 bytes, a few cache lines
	switch w {
	case 16:
		g = 4
	case 32:
		g = 2
	}
	for p := 0; p < np; p += g {
		n := min(g, np-p)
		switch w {
		case 6:
			packRows6F32(&df[p*cn*w], &sf[off+p*w], cs, cn, n, cn*w)
		case 8:
			packRows8F32(&df[p*cn*w], &sf[off+p*w], cs, cn, n, cn*w)
		case 16:
			packRows16F32(&df[p*cn*w], &sf[off+p*w], cs, cn, n, cn*w)
		default:
			packRows32F32(&df[p*cn*w], &sf[off+p*w], cs, cn, n, cn*w)
		}
	}
	return true
}
