package store_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
)

func ExampleWriteSafetensors() {
	dir, err := os.MkdirTemp("", "kiln-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.safetensors")

	dev := tensor.CPU()
	tensor.Scope(func() {
		weights := map[string]*tensor.Tensor{
			"l1.weight": tensor.FromFloat32s(dev, []float32{1, 2, 3, 4, 5, 6}, 2, 3),
			"l1.bias":   tensor.FromFloat32s(dev, []float32{0.5, -0.5}, 2),
		}
		if err := store.WriteSafetensors(path, weights, map[string]string{"format": "pt"}); err != nil {
			panic(err)
		}

		f, err := store.OpenSafetensors(path)
		if err != nil {
			panic(err)
		}
		defer f.Close()
		for _, name := range f.Names() {
			info, _ := f.Info(name)
			fmt.Println(name, info.FileDType, info.Shape)
		}
		b, err := f.Tensor("l1.bias", dev)
		if err != nil {
			panic(err)
		}
		fmt.Println(b.Float64s(), f.Metadata()["format"])
	})
	// Output:
	// l1.bias F32 [2]
	// l1.weight F32 [2 3]
	// [0.5 -0.5] pt
}
