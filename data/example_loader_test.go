package data_test

import (
	"context"
	"fmt"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/tensor"
)

// A data set split into training and validation parts, read by a loader
// with background workers, reshuffled every epoch, and resumed from a
// checkpointed position.
func ExampleDataLoader() {
	items := make([]data.Item, 100)
	for i := range items {
		items[i] = data.Item{X: []float32{float32(i), float32(i * i)}, Label: int64(i % 3)}
	}
	parts, err := data.Split(data.NewInMemory(items), []float64{0.8, 0.2}, 42)
	if err != nil {
		panic(err)
	}
	train, valid := parts[0], parts[1]
	loader, err := data.NewLoader(train, data.LoaderConfig{
		BatchSize: 16, Shuffle: true, Seed: 1, DropLast: true, Workers: 4, Device: tensor.CPU(),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("train", train.Len(), "valid", valid.Len(), "batches per epoch", loader.Len())

	ctx := context.Background()
	it := loader.Iter(ctx, 0)
	for it.Next() {
		b := it.Batch()
		if b.Step == 0 {
			fmt.Println("x", b.X.Shape(), b.X.DType(), "y", b.Y.Shape(), b.Y.DType())
		}
		b.Release()
		if b.Step == 1 {
			break // say the run stops here and checkpoints its position
		}
	}
	epoch, step := it.Position()
	it.Close()
	if err := it.Err(); err != nil {
		panic(err)
	}
	fmt.Println("checkpoint at epoch", epoch, "step", step)

	resumed := loader.IterFrom(ctx, epoch, step)
	defer resumed.Close()
	n := 0
	for resumed.Next() {
		resumed.Batch().Release()
		n++
	}
	fmt.Println("resumed batches", n, "error", resumed.Err())
	// Output:
	// train 80 valid 20 batches per epoch 5
	// x [16 2] float32 y [16] int64
	// checkpoint at epoch 0 step 2
	// resumed batches 3 error <nil>
}
