//go:build !purego

package cpu

// winoKernels: the Winograd transforms' AVX-512 kernels (kernels_amd64.s)
// run on this CPU, so useConvWino may choose the path.
var winoKernels = hasAVX512

func init() {
	if !winoKernels {
		return
	}
	winoBT.asm, winoAT.asm, winoG.asm, winoA.asm, winoGT.asm = winoBTAVX512, winoATAVX512, winoGAVX512, winoAAVX512, winoGTAVX512
}

// transpose8 sets dst[c·ld + r] = src[r·lds + c] for r < rows/8·8 and c <
// cols/8·8 with the AVX 8×8 transposes (packT8F32), and returns cols/8·8
// (0 where it does nothing: no AVX2, or fewer than 8 rows or columns).
func transpose8(dst []float32, ld int, src []float32, lds, rows, cols int) int {
	r8, c8 := rows/8*8, cols/8*8
	if !hasAVX2 || r8 == 0 || c8 == 0 {
		return 0
	}
	_ = dst[r8-8+(c8-1)*ld+7]
	_ = src[(r8-1)*lds+c8-1]
	for g := 0; g < r8; g += 8 {
		packT8F32(&dst[g], &src[g*lds], lds, c8, ld)
	}
	return c8
}
