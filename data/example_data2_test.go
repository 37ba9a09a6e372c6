package data_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/tensor"
)

// CIFAR-10's binary files (here two tiny generated ones per split, in the
// folder the official archive unpacks to) load into memory; Get and Batch
// give CHW float images in [0, 1].
func ExampleLoadCIFAR10() {
	dir, _ := os.MkdirTemp("", "cifar")
	defer os.RemoveAll(dir)
	sub := filepath.Join(dir, "cifar-10-batches-bin")
	_ = os.MkdirAll(sub, 0o755)
	record := func(label byte) []byte { // a label byte, then 3072 pixel bytes
		b := make([]byte, 1+data.CIFARPixels)
		b[0] = label
		for i := range data.CIFARPixels {
			b[1+i] = byte(i)
		}
		return b
	}
	for i, name := range []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
		"data_batch_5.bin", "test_batch.bin"} {
		_ = os.WriteFile(filepath.Join(sub, name), record(byte(i)), 0o644)
	}
	_ = os.WriteFile(filepath.Join(sub, "batches.meta.txt"),
		[]byte("airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n"), 0o644)

	train, test, err := data.LoadCIFAR10(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	it, _ := train.Get(3)
	fmt.Println(train.Len(), test.Len(), it.Shape, train.Classes[it.Label])
	x, y := train.Batch([]int{0, 4}, tensor.CPU())
	fmt.Println(x.Shape(), y.Int64s())
	// Output:
	// 5 1 [3 32 32] cat
	// [2 3 32 32] [0 4]
}

// An augmentation pipeline as torchvision composes one, applied to a data
// set through Map: each item gets its own seeded draw, the same on every
// read.
func ExampleAugment() {
	items := make([]data.Item, 4)
	for i := range items {
		x := make([]float32, 3*8*8)
		for j := range x {
			x[j] = float32(j%17) / 16
		}
		items[i] = data.Item{X: x, Shape: []int{3, 8, 8}, Label: int64(i)}
	}
	train := data.Compose{
		data.RandomCrop{Size: []int{6, 6}, Padding: []int{1}, PadMode: "reflect"},
		data.RandomHorizontalFlip{P: 0.5},
		data.RandomRotation{Degrees: []float64{15}, Mode: "bilinear"},
		data.ColorJitter{Brightness: 0.2, Contrast: 0.2, Saturation: 0.2, Hue: 0.05},
		data.Normalize{Mean: []float64{0.5}, Std: []float64{0.25}},
	}
	ds := data.Map(data.NewInMemory(items), data.Augment(train, 1))
	a, _ := ds.Get(2)
	b, _ := ds.Get(2)
	fmt.Println(a.Shape, a.Label, len(a.X), a.X[7] == b.X[7])
	// Output:
	// [3 6 6] 2 108 true
}

// MixUp on a batch of images and class labels gives mixed images and soft
// labels whose rows sum to 1.
func ExampleMixUp() {
	dev := tensor.CPU()
	x := tensor.Ones(dev, 4, 3, 8, 8)
	y := tensor.FromInt64s(dev, []int64{0, 1, 2, 1}, 4)
	mixed, soft := data.MixUp{Alpha: 0.2, NumClasses: 3}.Mix(x, y, data.NewRNG(1, 0))
	fmt.Println(mixed.Shape(), soft.Shape(), fmt.Sprintf("%.3f", soft.Sum(1).Float32s()))
	// Output:
	// [4 3 8 8] [4 3] [1.000 1.000 1.000 1.000]
}

// A word tokenizer built from a corpus with a vocabulary limit; a
// TextBatcher pads its ids to a fixed length when a DataLoader batches
// text items.
func ExampleNewWordTokenizer() {
	corpus := []string{"the cat sat on the mat", "the dog sat", "a cat ran"}
	tok := data.NewWordTokenizer(corpus, data.WordTokenizerConfig{MaxVocab: 5, Lowercase: true})
	fmt.Println(tok.Vocabulary())
	ids := tok.Encode("The cat sat down")
	fmt.Println(ids, tok.Decode(ids))

	lines := data.NewTextLines([]string{"the cat", "a dog sat on the mat"})
	a, _ := lines.Get(0)
	b, _ := lines.Get(1)
	x, _, err := data.TextBatcher{Tokenizer: tok, Length: 4}.Batch([]data.Item{a, b}, tensor.CPU())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(x.Shape(), x.Int64s())
	// Output:
	// [<pad> <unk> the cat sat]
	// [2 3 4 1] the cat sat <unk>
	// [2 4] [2 3 0 0 1 1 4 1]
}
