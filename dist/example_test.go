package dist_test

import (
	"fmt"
	"sync"

	"github.com/kiln-ml/kiln/dist"
	"github.com/kiln-ml/kiln/tensor"
)

// Three workers in one process average their gradients.
func ExampleNewLocalGroup() {
	group := dist.NewLocalGroup(3)
	results := make([][]float32, len(group))
	var wg sync.WaitGroup
	for _, c := range group {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			grad := tensor.FromFloat32s(tensor.CPU(), []float32{float32(c.Rank()), 1})
			if err := c.AllReduce(grad, dist.Mean); err != nil {
				fmt.Println(err)
				return
			}
			results[c.Rank()] = grad.Float32s()
		}()
	}
	wg.Wait()
	fmt.Println(results)
	// Output: [[1 1] [1 1] [1 1]]
}
