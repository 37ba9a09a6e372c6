//go:build !purego

package cpu

// lnRowF32AVX512 normalises one row of n floats (AVX-512; norm_amd64.s):
// mean = Σx/n (0 with rms), rstd = 1/√(Σ(x − mean)²/n + eps), both summed
// in float32 lanes in two passes, y = (x − mean)·rstd·w + b, and stats =
// [mean, rstd]. w and b hold n floats (ones and zeros for none).
//
//go:noescape
func lnRowF32AVX512(y, x, w, b *float32, n int, invN, eps float32, rms bool, stats *[2]float32)

// lnGradRowF32AVX512 is the backward pass of one row: with x̂ = (x −
// mean)·rstd (stored in xh) and ĝ = dy·w, dx = rstd·(ĝ − Σĝ/n − x̂·Σĝx̂/n)
// (no Σĝ term with rms), and pw += dy·x̂, pb += dy. Every pointer holds n
// floats.
//
//go:noescape
func lnGradRowF32AVX512(dx, xh, dy, x, w, pw, pb *float32, n int, mean, rstd, invN float32, rms bool)

// lnRowF32AVX2 and lnGradRowF32AVX2 are the AVX-512 kernels' AVX2+FMA
// counterparts (norm_avx2_amd64.s), for CPUs without AVX-512: the same
// contracts and the same bits.
//
//go:noescape
func lnRowF32AVX2(y, x, w, b *float32, n int, invN, eps float32, rms bool, stats *[2]float32)

//go:noescape
func lnGradRowF32AVX2(dx, xh, dy, x, w, pw, pb *float32, n int, mean, rstd, invN float32, rms bool)

// normF32KernelAsm wraps the AVX-512 row kernels (avx512) or the AVX2 ones
// as normRowF32 and normGradRowF32 are called. The kernels are called
// directly, not through func values, so that stats stays on the stack.
func normF32KernelAsm(avx512 bool) normF32Kernel {
	name := "avx2"
	if avx512 {
		name = "avx512"
	}
	return normF32Kernel{name: name,
		row: func(y, x, w, b []float32, eps float32, rms bool) (mean, rstd float32) {
			var stats [2]float32
			n := len(x)
			if n == 0 {
				return 0, 0
			}
			_, _, _ = y[n-1], w[n-1], b[n-1]
			if avx512 {
				lnRowF32AVX512(&y[0], &x[0], &w[0], &b[0], n, 1/float32(n), eps, rms, &stats)
			} else {
				lnRowF32AVX2(&y[0], &x[0], &w[0], &b[0], n, 1/float32(n), eps, rms, &stats)
			}
			return stats[0], stats[1]
		},
		grad: func(dx, xh, dy, x, w, pw, pb []float32, mean, rstd float32, rms bool) {
			n := len(x)
			if n == 0 {
				return
			}
			_, _, _, _, _, _ = dx[n-1], xh[n-1], dy[n-1], w[n-1], pw[n-1], pb[n-1]
			if avx512 {
				lnGradRowF32AVX512(&dx[0], &xh[0], &dy[0], &x[0], &w[0], &pw[0], &pb[0], n, mean, rstd, 1/float32(n), rms)
			} else {
				lnGradRowF32AVX2(&dx[0], &xh[0], &dy[0], &x[0], &w[0], &pw[0], &pb[0], n, mean, rstd, 1/float32(n), rms)
			}
		},
	}
}

// The vector row kernels this CPU runs, the widest last (and used).
func init() {
	if hasAVX2 {
		normF32Kernels = append(normF32Kernels, normF32KernelAsm(false))
	}
	if hasAVX512 {
		normF32Kernels = append(normF32Kernels, normF32KernelAsm(true))
	}
	k := normF32Kernels[len(normF32Kernels)-1]
	normRowF32, normGradRowF32 = k.row, k.grad
}
