package data_test

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/tensor"
)

// realMNIST loads the real MNIST files once per test binary.
var realMNIST struct {
	train, test *data.MNIST
	err         error
	done        bool
}

func loadReal(t *testing.T) (train, test *data.MNIST) {
	t.Helper()
	if !realMNIST.done {
		realMNIST.done = true
		dir, err := data.MNISTDir()
		if err == nil {
			realMNIST.train, realMNIST.test, err = data.LoadMNIST(dir)
		}
		realMNIST.err = err
	}
	if realMNIST.err != nil {
		t.Fatal(realMNIST.err)
	}
	return realMNIST.train, realMNIST.test
}

func TestLoadMNISTReal(t *testing.T) {
	train, test := loadReal(t)
	for _, c := range []struct {
		name string
		set  *data.MNIST
		n    int
	}{{"train", train, 60000}, {"test", test, 10000}} {
		t.Run(c.name, func(t *testing.T) {
			if c.set.Len() != c.n || len(c.set.Pixels) != c.n*data.MNISTPixels {
				t.Fatalf("Len %d with %d pixel bytes, want %d images", c.set.Len(), len(c.set.Pixels), c.n)
			}
			// Every digit makes up between 8% and 12% of each split.
			var hist [data.MNISTClasses]int
			for _, l := range c.set.Labels {
				hist[l]++
			}
			for d, h := range hist {
				if f := float64(h) / float64(c.n); f < 0.08 || f > 0.12 {
					t.Errorf("digit %d is %.1f%% of the labels (histogram %v)", d, 100*f, hist)
				}
			}
		})
	}
	// The first test labels are well known: 7 2 1 0 4 1 4 9 5 9.
	if got, want := test.Labels[:10], []int64{7, 2, 1, 0, 4, 1, 4, 9, 5, 9}; !equalInt64s(got, want) {
		t.Errorf("first test labels %v, want %v", got, want)
	}
	// MNISTMean and MNISTStd are the training set's pixel statistics.
	var sum, sumSq float64
	for _, p := range train.Pixels {
		v := float64(p) / 255
		sum += v
		sumSq += v * v
	}
	n := float64(len(train.Pixels))
	mean := sum / n
	std := math.Sqrt(sumSq/n - mean*mean)
	if math.Abs(mean-data.MNISTMean) > 1e-4 || math.Abs(std-data.MNISTStd) > 1e-4 {
		t.Errorf("training pixels have mean %.5f and std %.5f; MNISTMean %.4f, MNISTStd %.4f", mean, std,
			data.MNISTMean, data.MNISTStd)
	}
}

func equalInt64s(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// idx is an IDX file under construction: header words then payload.
type idx struct {
	magic   uint32
	dims    []uint32
	payload []byte
}

func (f idx) bytes() []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, f.magic)
	binary.Write(&b, binary.BigEndian, f.dims)
	b.Write(f.payload)
	return b.Bytes()
}

func gzipped(b []byte) []byte {
	var out bytes.Buffer
	z := gzip.NewWriter(&out)
	z.Write(b)
	z.Close()
	return out.Bytes()
}

// synthetic returns the four files of a tiny MNIST: nTrain and nTest
// images whose pixel j of image i is (i·7 + j) mod 256, labelled i mod 10.
func synthetic(nTrain, nTest int) map[string][]byte {
	images := func(n int) idx {
		p := make([]byte, n*data.MNISTPixels)
		for i := range n {
			for j := range data.MNISTPixels {
				p[i*data.MNISTPixels+j] = byte(i*7 + j)
			}
		}
		return idx{0x803, []uint32{uint32(n), 28, 28}, p}
	}
	labels := func(n int) idx {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(i % 10)
		}
		return idx{0x801, []uint32{uint32(n)}, p}
	}
	return map[string][]byte{
		"train-images-idx3-ubyte": images(nTrain).bytes(),
		"train-labels-idx1-ubyte": labels(nTrain).bytes(),
		"t10k-images-idx3-ubyte":  images(nTest).bytes(),
		"t10k-labels-idx1-ubyte":  labels(nTest).bytes(),
	}
}

// writeFiles writes files into a new temporary folder, gzipping those
// whose name is in gz (with a .gz suffix).
func writeFiles(t *testing.T, files map[string][]byte, gz func(name string) bool) string {
	t.Helper()
	dir := t.TempDir()
	for name, b := range files {
		if gz(name) {
			b, name = gzipped(b), name+".gz"
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadMNISTSynthetic(t *testing.T) {
	for _, c := range []struct {
		name string
		gz   func(string) bool
	}{
		{"plain files", func(string) bool { return false }},
		{"gzipped files", func(string) bool { return true }},
		{"mixed", func(n string) bool { return strings.Contains(n, "images") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			train, test, err := data.LoadMNIST(writeFiles(t, synthetic(3, 2), c.gz))
			if err != nil {
				t.Fatal(err)
			}
			if train.Len() != 3 || test.Len() != 2 {
				t.Fatalf("Len %d and %d, want 3 and 2", train.Len(), test.Len())
			}
			if !equalInt64s(train.Labels, []int64{0, 1, 2}) || train.Pixels[data.MNISTPixels+5] != 12 {
				t.Errorf("labels %v, pixel 5 of image 1 = %d; want [0 1 2] and 12", train.Labels,
					train.Pixels[data.MNISTPixels+5])
			}
		})
	}
}

func TestLoadMNISTCorrupt(t *testing.T) {
	const trainImages, trainLabels = "train-images-idx3-ubyte", "train-labels-idx1-ubyte"
	good := synthetic(3, 2)
	header := func(b []byte, word int, v uint32) []byte {
		b = bytes.Clone(b)
		binary.BigEndian.PutUint32(b[4*word:], v)
		return b
	}
	flipEvery7th := func(b []byte) []byte { // scramble the deflate data, keep the gzip header and trailer
		b = bytes.Clone(b)
		for i := 20; i < len(b)-8; i += 7 {
			b[i] ^= 0x5a
		}
		return b
	}
	cases := []struct {
		name   string
		file   string
		modify func([]byte) []byte // changes the IDX contents; nil removes the file
		gz     bool                // gzip the file
		disk   func([]byte) []byte // changes the bytes written to disk (after gzip)
		want   []string            // substrings of the error, besides the file name
		kind   error
	}{
		{"missing file", trainLabels, nil, false, nil, []string{"neither", "nor"}, fs.ErrNotExist},
		{"empty file", trainImages, func(b []byte) []byte { return nil }, false, nil,
			[]string{"truncated header"}, data.ErrCorrupt},
		{"truncated header", trainLabels, func(b []byte) []byte { return b[:6] }, false, nil,
			[]string{"truncated header"}, data.ErrCorrupt},
		{"bad image magic", trainImages, func(b []byte) []byte { return header(b, 0, 0x801) }, false, nil,
			[]string{"magic number 0x00000801, want 0x00000803"}, data.ErrCorrupt},
		{"bad label magic", trainLabels, func(b []byte) []byte { return header(b, 0, 0x12345678) }, true, nil,
			[]string{"magic number 0x12345678, want 0x00000801"}, data.ErrCorrupt},
		{"images not 28×28", trainImages, func(b []byte) []byte { return header(b, 2, 27) }, false, nil,
			[]string{"images are 27×28"}, data.ErrCorrupt},
		{"truncated images", trainImages, func(b []byte) []byte { return b[:len(b)-1] }, false, nil,
			[]string{"truncated: header says 3 images", "2 whole images"}, data.ErrCorrupt},
		{"count larger than the file", trainLabels, func(b []byte) []byte { return header(b, 1, math.MaxUint32) },
			false, nil, []string{"header says 4294967295 labels"}, data.ErrCorrupt},
		{"extra data after the items", trainLabels, func(b []byte) []byte { return append(bytes.Clone(b), 0) },
			false, nil, []string{"unexpected data after the 3 labels"}, data.ErrCorrupt},
		{"image and label counts differ", trainLabels, func(b []byte) []byte { return header(b, 1, 2)[:len(b)-1] },
			false, nil, []string{"holds 3 images but", "holds 2 labels"}, data.ErrCorrupt},
		{"label out of range", trainLabels, func(b []byte) []byte { b = bytes.Clone(b); b[9] = 10; return b },
			false, nil, []string{"label 10 (item 1) is not a digit"}, data.ErrCorrupt},
		{"truncated gzip stream", trainImages, identity, true, func(b []byte) []byte { return b[:len(b)-100] },
			[]string{"truncated"}, data.ErrCorrupt},
		{"corrupt gzip stream", trainImages, identity, true, flipEvery7th,
			[]string{"corrupt gzip stream"}, data.ErrCorrupt},
		{"corrupt gzip checksum", trainLabels, identity, true,
			func(b []byte) []byte { b = bytes.Clone(b); b[len(b)-6] ^= 0xff; return b }, // the CRC-32 in the trailer
			[]string{"corrupt gzip stream", "checksum"}, data.ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := map[string][]byte{}
			for k, v := range good {
				files[k] = v
			}
			if c.modify == nil {
				delete(files, c.file)
			} else {
				files[c.file] = c.modify(files[c.file])
			}
			dir := writeFiles(t, files, func(n string) bool { return c.gz && n == c.file })
			if c.disk != nil {
				p := filepath.Join(dir, c.file)
				if c.gz {
					p += ".gz"
				}
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, c.disk(b), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			checkLoadError(t, dir, c.file, c.want, c.kind)
		})
	}
}

func identity(b []byte) []byte { return b }

func checkLoadError(t *testing.T, dir, file string, want []string, kind error) {
	t.Helper()
	train, test, err := data.LoadMNIST(dir)
	if err == nil {
		t.Fatalf("LoadMNIST succeeded (%d and %d images), want an error", train.Len(), test.Len())
	}
	if train != nil || test != nil {
		t.Errorf("LoadMNIST returned data with its error")
	}
	if !errors.Is(err, kind) {
		t.Errorf("error %q does not wrap %v", err, kind)
	}
	for _, w := range append([]string{file}, want...) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

func TestMNISTBatch(t *testing.T) {
	train, _, err := data.LoadMNIST(writeFiles(t, synthetic(4, 1), func(string) bool { return false }))
	if err != nil {
		t.Fatal(err)
	}
	pixel := func(i, j int) float64 { return float64(byte(i*7+j)) / 255 }
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		cases := []struct {
			name        string
			nchw, std   bool
			indices     []int
			shape       []int
			value       func(i, j int) float64
			wantLabels  []int64
			probeSample int
		}{
			{"flat images in [0, 1]", false, false, []int{3, 1}, []int{2, 784}, pixel, []int64{3, 1}, 0},
			{"NCHW images", true, false, []int{2, 2, 0}, []int{3, 1, 28, 28}, pixel, []int64{2, 2, 0}, 2},
			{"standardised", false, true, []int{1}, []int{1, 784},
				func(i, j int) float64 { return (pixel(i, j) - data.MNISTMean) / data.MNISTStd }, []int64{1}, 0},
			{"empty batch", false, false, []int{}, []int{0, 784}, pixel, []int64{}, -1},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				tensor.Scope(func() { // subtests run on their own goroutines
					m := *train
					m.NCHW, m.Standardize = c.nchw, c.std
					x, y := m.Batch(c.indices, dev)
					if !equalInts(x.Shape(), c.shape) || x.DType() != tensor.Float32 {
						t.Fatalf("x is %v %v, want %v Float32", x.Shape(), x.DType(), c.shape)
					}
					if !equalInts(y.Shape(), []int{len(c.indices)}) || y.DType() != tensor.Int64 {
						t.Fatalf("y is %v %v, want [%d] Int64", y.Shape(), y.DType(), len(c.indices))
					}
					if got := y.Int64s(); !equalInt64s(got, c.wantLabels) {
						t.Errorf("labels %v, want %v", got, c.wantLabels)
					}
					xs := x.Float32s()
					for k, i := range c.indices {
						for _, j := range []int{0, 5, 783} {
							if got, want := float64(xs[k*784+j]), c.value(i, j); math.Abs(got-want) > 1e-6 {
								t.Errorf("x[%d] pixel %d = %v, want %v", k, j, got, want)
							}
						}
					}
					if c.probeSample >= 0 {
						img := m.Image(c.indices[c.probeSample])
						for j, v := range img {
							if v != xs[c.probeSample*784+j] {
								t.Fatalf("Image(%d)[%d] = %v, Batch gave %v", c.indices[c.probeSample], j, v,
									xs[c.probeSample*784+j])
							}
						}
					}
				})
			})
		}
		t.Run("bad indices", func(t *testing.T) {
			for _, c := range []struct {
				name string
				fn   func()
				op   string
			}{
				{"index past the end", func() { train.Batch([]int{0, 4}, dev) }, "data.MNIST.Batch"},
				{"negative index", func() { train.Batch([]int{-1}, dev) }, "data.MNIST.Batch"},
				{"image out of range", func() { train.Image(4) }, "data.MNIST.Image"},
				{"negative subset", func() { train.Subset(-1) }, "data.MNIST.Subset"},
			} {
				err := tensor.Try(c.fn)
				var te *tensor.Error
				if !errors.As(err, &te) || !errors.Is(err, tensor.ErrArgument) || te.Op != c.op {
					t.Errorf("%s: got %v, want a *tensor.Error from %s wrapping ErrArgument", c.name, err, c.op)
				}
			}
		})
	})
}

func TestMNISTSubset(t *testing.T) {
	train, _, err := data.LoadMNIST(writeFiles(t, synthetic(4, 1), func(string) bool { return true }))
	if err != nil {
		t.Fatal(err)
	}
	train.NCHW = true
	for _, c := range []struct {
		name string
		n    int
		want int
	}{{"prefix", 2, 2}, {"everything", 4, 4}, {"more than there is", 9, 4}, {"nothing", 0, 0}} {
		s := train.Subset(c.n)
		if s.Len() != c.want || len(s.Pixels) != c.want*data.MNISTPixels || !s.NCHW {
			t.Errorf("%s: Subset(%d) has Len %d, %d pixel bytes, NCHW %v; want %d images, NCHW kept", c.name, c.n,
				s.Len(), len(s.Pixels), s.NCHW, c.want)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestMNISTDir(t *testing.T) {
	files := synthetic(1, 1)
	t.Run("KILN_DATA holds the files", func(t *testing.T) {
		dir := writeFiles(t, files, func(string) bool { return true })
		t.Setenv("KILN_DATA", dir)
		if got, err := data.MNISTDir(); err != nil || got != dir {
			t.Errorf("MNISTDir() = %q, %v; want %q", got, err, dir)
		}
	})
	t.Run("KILN_DATA/mnist holds the files", func(t *testing.T) {
		root := t.TempDir()
		sub := filepath.Join(root, "mnist")
		os.Mkdir(sub, 0o755)
		for name, b := range files {
			os.WriteFile(filepath.Join(sub, name), b, 0o644)
		}
		t.Setenv("KILN_DATA", root)
		if got, err := data.MNISTDir(); err != nil || got != sub {
			t.Errorf("MNISTDir() = %q, %v; want %q", got, err, sub)
		}
	})
	t.Run("KILN_DATA without the files is an error", func(t *testing.T) {
		root := t.TempDir()
		os.WriteFile(filepath.Join(root, "train-images-idx3-ubyte.gz"), nil, 0o644) // one of four
		t.Setenv("KILN_DATA", root)
		got, err := data.MNISTDir()
		if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "KILN_DATA="+root) {
			t.Errorf("MNISTDir() = %q, %v; want an error naming KILN_DATA", got, err)
		}
	})
	t.Run("module cache", func(t *testing.T) {
		if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
			t.Skip("finding the module cache runs `go list -m`, a subprocess WebAssembly cannot start")
		}
		t.Setenv("KILN_DATA", "")
		got, err := data.MNISTDir()
		if err != nil {
			t.Fatal(err)
		}
		// The folder is the module's, as the go command reports it.
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", data.MNISTModule).Output()
		if err != nil {
			t.Skipf("go list: %v", err)
		}
		if want := filepath.Join(strings.TrimSpace(string(out)), "data"); got != want {
			t.Errorf("MNISTDir() = %q, want %q", got, want)
		}
	})
}

func TestModuleCacheFolder(t *testing.T) {
	// The folder MNISTDir derives from a binary's build info (module cache
	// + escaped path@version) is the one the go command uses.
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}} {{.Version}}", data.MNISTModule).Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		t.Skipf("go list printed %q", out)
	}
	if got := data.ModuleCacheFolder(data.MNISTModule, f[1]); got != f[0] {
		t.Errorf("module cache folder %q, go list says %q", got, f[0])
	}
}

// FuzzLoadMNIST feeds arbitrary bytes as the training images file (plain
// or gzipped, by content): LoadMNIST must return data or an error, never
// panic, and what it returns must be consistent.
func FuzzLoadMNIST(f *testing.F) {
	good := synthetic(2, 1)
	const name = "train-images-idx3-ubyte"
	f.Add(good[name])
	f.Add(gzipped(good[name]))
	f.Add(good[name][:20])
	f.Add([]byte{0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 28, 0, 0, 0, 28})
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		for n, v := range good {
			if n == name {
				v = b
			}
			if err := os.WriteFile(filepath.Join(dir, n), v, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		train, test, err := data.LoadMNIST(dir)
		if err != nil {
			if !errors.Is(err, data.ErrCorrupt) || !strings.Contains(err.Error(), name) {
				t.Fatalf("error %q does not wrap ErrCorrupt or name %s", err, name)
			}
			return
		}
		if train.Len() != 2 || len(train.Pixels) != 2*data.MNISTPixels || test.Len() != 1 {
			t.Fatalf("loaded %d images (%d bytes) and %d test images", train.Len(), len(train.Pixels), test.Len())
		}
	})
}
