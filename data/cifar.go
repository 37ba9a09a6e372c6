package data

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kiln-ml/kiln/tensor"
)

// CIFAR geometry: every image is 32×32 pixels in three channels, stored
// channel-first (the 1024 red bytes, then green, then blue, each plane
// row-major), as the official binary files hold them.
const (
	CIFARRows     = 32
	CIFARCols     = 32
	CIFARChannels = 3
	CIFARPixels   = CIFARChannels * CIFARRows * CIFARCols // bytes per image
)

// CIFAR is one split (training or test) of CIFAR-10 or CIFAR-100, held in
// memory as bytes (150 MB for a training split); Image, Get and Batch
// convert to float32 in [0, 1] on the way out.
type CIFAR struct {
	// Pixels holds Len() images of CIFARPixels bytes each, channel-first
	// (CHW) as in the binary files.
	Pixels []uint8
	// Labels holds each image's class: one of 10 for CIFAR-10, the fine
	// label (one of 100) for CIFAR-100.
	Labels []int64
	// CoarseLabels holds each image's superclass (one of 20) for CIFAR-100;
	// it is nil for CIFAR-10.
	CoarseLabels []int64
	// Classes names the labels (from batches.meta.txt or
	// fine_label_names.txt), nil when the folder has no such file.
	Classes []string
	// CoarseClasses names the coarse labels (coarse_label_names.txt), nil
	// for CIFAR-10 or when the file is absent.
	CoarseClasses []string
}

// cifarFormat describes one of the two binary layouts.
type cifarFormat struct {
	name       string   // "CIFAR-10"
	subdir     string   // the folder the official archive unpacks to
	train      []string // training files, read in order
	test       []string
	labels     int // label bytes before each image: 1 or 2 (coarse, fine)
	classes    int // fine classes
	coarse     int // coarse classes (CIFAR-100)
	namesFile  string
	coarseFile string
}

var (
	cifar10Format = cifarFormat{
		name:   "CIFAR-10",
		subdir: "cifar-10-batches-bin",
		train: []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
			"data_batch_5.bin"},
		test:      []string{"test_batch.bin"},
		labels:    1,
		classes:   10,
		namesFile: "batches.meta.txt",
	}
	cifar100Format = cifarFormat{
		name:       "CIFAR-100",
		subdir:     "cifar-100-binary",
		train:      []string{"train.bin"},
		test:       []string{"test.bin"},
		labels:     2,
		classes:    100,
		coarse:     20,
		namesFile:  "fine_label_names.txt",
		coarseFile: "coarse_label_names.txt",
	}
)

// LoadCIFAR10 reads CIFAR-10's binary version from dir (or from
// dir/cifar-10-batches-bin, where the official archive unpacks):
// data_batch_1.bin … data_batch_5.bin form the training split and
// test_batch.bin the test split; each record is one label byte (0–9) and
// 3072 image bytes. Class names come from batches.meta.txt when present.
//
// It returns an error naming the file when one is missing (wrapping
// fs.ErrNotExist) or malformed (wrapping ErrCorrupt): a size that is not a
// whole number of records (naming the truncated record and how many of
// its bytes are there) or a label out of range (naming the record). It
// never panics on bad input.
func LoadCIFAR10(dir string) (train, test *CIFAR, err error) { return loadCIFAR(dir, cifar10Format) }

// LoadCIFAR100 reads CIFAR-100's binary version from dir (or from
// dir/cifar-100-binary): train.bin and test.bin, each record a coarse
// label byte (0–19), a fine label byte (0–99) and 3072 image bytes. Labels
// are the fine labels, CoarseLabels the coarse ones; names come from
// fine_label_names.txt and coarse_label_names.txt when present. Errors are
// as LoadCIFAR10's.
func LoadCIFAR100(dir string) (train, test *CIFAR, err error) { return loadCIFAR(dir, cifar100Format) }

func loadCIFAR(dir string, f cifarFormat) (train, test *CIFAR, err error) {
	dir = cifarDir(dir, f)
	var names, coarseNames []string
	if names, err = readNames(dir, f.namesFile, f.classes); err != nil {
		return nil, nil, err
	}
	if f.coarseFile != "" {
		if coarseNames, err = readNames(dir, f.coarseFile, f.coarse); err != nil {
			return nil, nil, err
		}
	}
	if train, err = readCIFARFiles(dir, f, f.train); err != nil {
		return nil, nil, err
	}
	if test, err = readCIFARFiles(dir, f, f.test); err != nil {
		return nil, nil, err
	}
	for _, c := range []*CIFAR{train, test} {
		c.Classes, c.CoarseClasses = names, coarseNames
	}
	return train, test, nil
}

// cifarDir returns dir, or its sub-folder named as the official archive's
// when dir itself lacks the first training file but that folder has it.
func cifarDir(dir string, f cifarFormat) string {
	if !isFile(filepath.Join(dir, f.train[0])) && isFile(filepath.Join(dir, f.subdir, f.train[0])) {
		return filepath.Join(dir, f.subdir)
	}
	return dir
}

// readNames reads one label name per non-empty line of dir/name; a
// missing file gives nil names, not an error.
func readNames(dir, name string, want int) ([]string, error) {
	path := filepath.Join(dir, name)
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("data: CIFAR: %w", err)
	}
	var names []string
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		if s := strings.TrimSpace(sc.Text()); s != "" {
			names = append(names, s)
		}
	}
	if len(names) != want {
		return nil, fmt.Errorf("data: CIFAR %s: %d label names, want %d: %w", path, len(names), want, ErrCorrupt)
	}
	return names, nil
}

// readCIFARFiles reads and checks the records of files, in order.
func readCIFARFiles(dir string, f cifarFormat, files []string) (*CIFAR, error) {
	c := &CIFAR{}
	rec := f.labels + CIFARPixels
	for _, name := range files {
		path := filepath.Join(dir, name)
		raw, err := os.ReadFile(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("data: %s: %s is not in %s: %w", f.name, name, dir, fs.ErrNotExist)
			}
			return nil, fmt.Errorf("data: %s: %w", f.name, err)
		}
		n := len(raw) / rec
		if extra := len(raw) % rec; extra != 0 {
			return nil, fmt.Errorf("data: %s %s: truncated record %d: %d of its %d bytes (the file holds %d bytes, "+
				"not a whole number of %d-byte records): %w", f.name, path, n, extra, rec, len(raw), rec, ErrCorrupt)
		}
		if c.Pixels == nil {
			c.Pixels = make([]uint8, 0, n*CIFARPixels)
		}
		for r := range n {
			b := raw[r*rec : (r+1)*rec]
			fine := b[f.labels-1]
			if int(fine) >= f.classes {
				return nil, fmt.Errorf("data: %s %s: record %d (byte offset %d) has label %d, want 0–%d: %w",
					f.name, path, r, r*rec+f.labels-1, fine, f.classes-1, ErrCorrupt)
			}
			if f.labels == 2 {
				if int(b[0]) >= f.coarse {
					return nil, fmt.Errorf("data: %s %s: record %d (byte offset %d) has coarse label %d, want 0–%d: %w",
						f.name, path, r, r*rec, b[0], f.coarse-1, ErrCorrupt)
				}
				c.CoarseLabels = append(c.CoarseLabels, int64(b[0]))
			}
			c.Labels = append(c.Labels, int64(fine))
			c.Pixels = append(c.Pixels, b[f.labels:]...)
		}
	}
	return c, nil
}

// Len returns the number of images.
func (c *CIFAR) Len() int { return len(c.Labels) }

// Image returns image i as CIFARPixels float32 values in [0, 1], CHW. It
// panics with ErrArgument (a *tensor.Error) when i is out of range.
func (c *CIFAR) Image(i int) []float32 {
	c.checkIndex("data.CIFAR.Image", i, 0)
	out := make([]float32, CIFARPixels)
	for j, p := range c.Pixels[i*CIFARPixels : (i+1)*CIFARPixels] {
		out[j] = float32(p) / 255
	}
	return out
}

func (c *CIFAR) checkIndex(op string, i, pos int) {
	if i < 0 || i >= c.Len() {
		panic(&tensor.Error{Op: op, Msg: fmt.Sprintf("index %d (position %d) is out of range for %d images", i, pos,
			c.Len()), Err: tensor.ErrArgument})
	}
}

// Get returns image i as an Item: X is [3, 32, 32] float32 in [0, 1],
// Label its class (the fine label for CIFAR-100), and for CIFAR-100
// Extra["coarse_label"] its superclass (an int64). It returns an error
// wrapping ErrIndex when i is out of range. With Len it makes *CIFAR a
// Dataset.
func (c *CIFAR) Get(i int) (Item, error) {
	if i < 0 || i >= c.Len() {
		return Item{}, indexErr("CIFAR.Get", i, c.Len())
	}
	it := Item{X: c.Image(i), Shape: []int{CIFARChannels, CIFARRows, CIFARCols}, Label: c.Labels[i]}
	if c.CoarseLabels != nil {
		it.Extra = map[string]any{"coarse_label": c.CoarseLabels[i]}
	}
	return it, nil
}

// Batch returns the images and labels at indices on dev: x is Float32
// [B, 3, 32, 32] in [0, 1], y Int64 [B] (fine labels for CIFAR-100). The
// tensors belong to the enclosing tensor.Scope, if any. It panics with
// ErrArgument (a *tensor.Error) when an index is out of range.
func (c *CIFAR) Batch(indices []int, dev tensor.Device) (x, y *tensor.Tensor) {
	vals := make([]float32, CIFARPixels*len(indices))
	labels := make([]int64, len(indices))
	for k, i := range indices {
		c.checkIndex("data.CIFAR.Batch", i, k)
		dst := vals[k*CIFARPixels:][:CIFARPixels]
		for j, p := range c.Pixels[i*CIFARPixels:][:CIFARPixels] {
			dst[j] = float32(p) / 255
		}
		labels[k] = c.Labels[i]
	}
	return tensor.FromFloat32s(dev, vals, len(indices), CIFARChannels, CIFARRows, CIFARCols),
		tensor.FromInt64s(dev, labels, len(indices))
}
