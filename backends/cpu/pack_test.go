package cpu

import (
	"math/rand/v2"
	"testing"
)

// TestPackPanels checks pack against its definition (element (r0+r, c0+c)
// at dst[(r/w)·cn·w + c·w + r%w], zeros past the last row) for the panel
// widths of every kernel, with the panel dimension contiguous (A transposed,
// B as stored), the other one contiguous (A as stored, B transposed),
// neither, and rows stored in reverse, over counts around the vector
// widths: the AVX2 kernel's widths 6 and 16 take assembly loops there.
func TestPackPanels(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const ld = 300
	src := make([]float32, ld*ld)
	for i := range src {
		src[i] = r.Float32()
	}
	layouts := []struct {
		name   string
		mat    matSrc[float32]
		rn, cn int // the most rows and columns the layout can address
	}{
		{"panel-contiguous", matSrc[float32]{s: src, rs: 1, cs: ld}, ld, ld},
		{"transposed", matSrc[float32]{s: src, rs: ld, cs: 1}, ld, ld},
		{"strided", matSrc[float32]{s: src, rs: 2, cs: 2 * ld}, ld / 2, ld / 2},
		{"reversed-rows", matSrc[float32]{s: src, off: (ld - 1) * ld, rs: -ld, cs: 1}, ld, ld},
		{"reversed-lines", matSrc[float32]{s: src, off: (ld - 1) * ld, rs: 1, cs: -ld}, ld, ld},
	}
	tmp := make([]float32, ld)
	for _, w := range []int{2, 3, 4, 6, 8, 14, 16, 32, 64} {
		for _, l := range layouts {
			for _, rn := range []int{1, 5, 6, 7, 12, 16, 17, 40} {
				for _, cn := range []int{1, 3, 4, 5, 8, 9, 16, 17, 23, 35, 256} {
					r0, c0 := 3, 2
					if r0+rn > l.rn || c0+cn > l.cn {
						continue
					}
					panels := (rn + w - 1) / w
					got := make([]float32, panels*cn*w+1)
					for i := range got {
						got[i] = -1 // pack must write every element of its panels
					}
					pack(got, l.mat, r0, rn, c0, cn, w, tmp)
					want := make([]float32, panels*cn*w)
					for i := range rn {
						for c := range cn {
							want[(i/w)*cn*w+c*w+i%w] = src[l.mat.at(r0+i, c0+c)]
						}
					}
					for i, v := range want {
						if got[i] != v {
							t.Fatalf("w=%d %s rn=%d cn=%d: element %d (panel %d, column %d, row %d) is %v, want %v",
								w, l.name, rn, cn, i, i/(cn*w), i%(cn*w)/w, i%w, got[i], v)
						}
					}
					if got[len(want)] != -1 {
						t.Fatalf("w=%d %s rn=%d cn=%d: wrote past the panels", w, l.name, rn, cn)
					}
				}
			}
		}
	}
}
