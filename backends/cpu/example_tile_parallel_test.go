package cpu_test

import (
	"fmt"

	"github.com/kiln-ml/kiln/backends/cpu"
)

// ParallelTiles runs a caller's tiles on the backend's pool: here 10
// tiles in chunks of 3, each chunk writing its own partial sums, which are
// then combined in chunk order, so the answer does not depend on how many
// workers ran them.
func ExampleBackend_ParallelTiles() {
	b := cpu.New(4)
	const tiles, grain = 10, 3
	partial := make([]int, (tiles+grain-1)/grain)
	b.ParallelTiles(tiles, grain, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			partial[lo/grain] += t * t
		}
	})
	total := 0
	for _, p := range partial {
		total += p
	}
	fmt.Println(partial, total)
	// Output: [5 50 149 81] 285
}
