package cpu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// TestLazyPackMatchesPrepack packs operands with lazyPack, tile by tile in
// a random order, from several goroutines at once, and with a task taken
// by another packer that does not finish it (claim must then report the
// tiles that need it not all packed, and only those), and requires the very
// layout prepackA and prepackB give, with the default
// blocks and with small ones (several row blocks, K-blocks, tasks per
// block, partial last panels).
func TestLazyPackMatchesPrepack(t *testing.T) {
	forPackBlocks(func(blocks string) {
		for _, sz := range [][3]int{{300, 200, 513}, {37, 45, 7}, {128, 128, 128}, {1000, 999, 96}} {
			m, n, k := sz[0], sz[1], sz[2]
			a, bm := packTestOperands(m, n, k)
			A := matSrc[float32]{s: a, rs: 1, cs: m} // transposed
			B := matSrc[float32]{s: bm, rs: n, cs: 1}
			kern := kernelF32
			nc, kc, mChunk := gemmBlocks(kern, m, n, k)
			wantA := make([]float32, roundUp(m, kern.mr)*k)
			wantB := make([]float32, roundUp(n, kern.nr)*k)
			prepackA(wantA, kern, m, n, k, A)
			prepackB(wantB, kern, m, n, k, B)
			for _, packB := range []bool{false, true} {
				want, src, side, w, blk := wantA, A, m, kern.mr, mChunk
				if packB {
					want, src, side, w, blk = wantB, B.t(), n, kern.nr, nc
				}
				// the macro-tiles: tile rows in blocks of blk
				type tile struct{ r0, rows, pc int }
				var tiles []tile
				for s0 := 0; s0 < side; s0 += blk {
					for pc := 0; pc < k; pc += kc {
						for r := s0; r < min(s0+blk, side); r += 2 * w {
							tiles = append(tiles, tile{r, min(2*w, min(s0+blk, side)-r), pc})
						}
					}
				}
				for _, mode := range []string{"random order", "4 goroutines", "another packer"} {
					name := fmt.Sprintf("%s blocks, %dx%dx%d, packB %v, %s", blocks, m, n, k, packB, mode)
					got := make([]float32, len(want))
					for i := range got {
						got[i] = -1 // the padding must be written too
					}
					var p lazyPack[float32]
					p.init(got, src, side, k, w, blk, kc)
					tmp := make([]float32, kc)
					r := rand.New(rand.NewPCG(1, uint64(len(tiles))))
					switch mode {
					case "random order":
						for _, i := range r.Perm(len(tiles)) {
							first, last, all := p.claim(tiles[i].r0, tiles[i].rows, tiles[i].pc, &poolF32)
							if !all {
								t.Fatalf("%s: claim found a task busy with no other packer", name)
							}
							// the tasks cover the tile's rows, in order, and only them
							r0, _ := p.rows(first)
							_, r1 := p.rows(last)
							if r0 > tiles[i].r0 || r1 < tiles[i].r0+tiles[i].rows || first > last {
								t.Fatalf("%s: tasks %d..%d pack rows [%d, %d), not all of the tile's [%d, %d)", name, first, last, r0, r1, tiles[i].r0, tiles[i].r0+tiles[i].rows)
							}
							for t2 := first; t2 < last; t2++ {
								_, e := p.rows(t2)
								if b, _ := p.rows(t2 + 1); b != e {
									t.Fatalf("%s: task %d ends at row %d, task %d starts at %d", name, t2, e, t2+1, b)
								}
							}
						}
					case "4 goroutines":
						var wg sync.WaitGroup
						for g := range 4 {
							order := r.Perm(len(tiles))
							wg.Go(func() {
								for _, i := range order {
									tl := tiles[(i+g)%len(tiles)]
									p.claim(tl.r0, tl.rows, tl.pc, &poolF32)
								}
							})
						}
						wg.Wait()
					case "another packer":
						// the task of the last tile's first row, taken by a
						// packer that does not finish it: claim packs the
						// other tasks, and reports the tile unpacked
						last := tiles[len(tiles)-1]
						blkI := last.r0 / blk
						held := (blkI*p.nk+last.pc/kc)*p.perK + (last.r0-blkI*blk)/p.step
						p.tasks[held].Store(taskPacking)
						for _, tl := range tiles {
							hasHeld := tl.r0/blk == blkI && tl.pc == last.pc &&
								(tl.r0-blkI*blk)/p.step <= held-(blkI*p.nk+last.pc/kc)*p.perK &&
								held-(blkI*p.nk+last.pc/kc)*p.perK <= (tl.r0+tl.rows-1-blkI*blk)/p.step
							if _, _, all := p.claim(tl.r0, tl.rows, tl.pc, &poolF32); all == hasHeld {
								t.Fatalf("%s: claim(%d, %d, %d) reports all packed %v with task %d being packed", name, tl.r0, tl.rows, tl.pc, all, held)
							}
						}
						p.run(held, tmp)
						p.tasks[held].Store(taskDone)
						if _, _, all := p.claim(last.r0, last.rows, last.pc, &poolF32); !all {
							t.Fatalf("%s: claim reports a packed tile unpacked", name)
						}
					}
					if !slices.Equal(got, want) {
						t.Errorf("%s: packed operand differs from prepackA/prepackB's", name)
					}
				}
			}
		}
	})
}

// TestGemmStripsOwnTiles runs GEMMs as strips with every tile packing the
// shared operand's rows itself (as when another worker is late packing
// them) and with the shared operand packed before the strips start
// (packLazily off), and requires the serial GEMM's bits.
func TestGemmStripsOwnTiles(t *testing.T) {
	oldBlocks := [5]int{gemmKC, gemmMC, gemmNB, gemmNC, gemmMChunk}
	defer func() {
		gemmKC, gemmMC, gemmNB, gemmNC, gemmMChunk = oldBlocks[0], oldBlocks[1], oldBlocks[2], oldBlocks[3], oldBlocks[4]
		lazyOwnTiles, packLazily = false, true
	}()
	for _, mode := range []string{"own tiles", "eager"} {
		lazyOwnTiles, packLazily = mode == "own tiles", mode != "eager"
		for _, blocks := range [][5]int{oldBlocks, {24, 28, 64, 128, 40}} {
			gemmKC, gemmMC, gemmNB, gemmNC, gemmMChunk = blocks[0], blocks[1], blocks[2], blocks[3], blocks[4]
			be := forcedBackend(2, forceParallel)
			for _, s := range []struct{ m, n, k int }{{300, 97, 257}, {65, 700, 130}, {128, 128, 128}} {
				for _, kern := range kernelsF32 {
					checkStrips(t, be, kern, s.m, s.n, s.k, fmt.Sprint(mode, blocks))
				}
				checkStrips(t, be, kernelF64, s.m, s.n, s.k, fmt.Sprint(mode, blocks))
			}
		}
	}
}
