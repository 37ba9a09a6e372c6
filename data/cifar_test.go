package data_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/tensor"
)

// cifarRecord returns one record: the label bytes, then image bytes where
// pixel j of the record with seed s is byte (s·7 + j) mod 256.
func cifarRecord(seed int, labels ...byte) []byte {
	rec := append([]byte(nil), labels...)
	for j := range data.CIFARPixels {
		rec = append(rec, byte(seed*7+j))
	}
	return rec
}

// writeCIFAR10 writes the six CIFAR-10 files into dir: training file k
// holds k+1 records (labels k, k+1, …), the test file two; with names the
// label names as well.
func writeCIFAR10(t *testing.T, dir string, names bool) {
	t.Helper()
	seed := 0
	for k := range 5 {
		var b []byte
		for r := range k + 1 {
			b = append(b, cifarRecord(seed, byte((k+r)%10))...)
			seed++
		}
		write(t, filepath.Join(dir, "data_batch_"+string(rune('1'+k))+".bin"), b)
	}
	write(t, filepath.Join(dir, "test_batch.bin"), append(cifarRecord(100, 9), cifarRecord(101, 3)...))
	if names {
		write(t, filepath.Join(dir, "batches.meta.txt"), []byte("airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\n"+
			"horse\nship\ntruck\n\n"))
	}
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadCIFAR10(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sub    string // folder the files are written to, under the folder loaded
		labels bool
	}{
		{"files in the folder, with names", "", true},
		{"official archive folder, without names", "cifar-10-batches-bin", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeCIFAR10(t, filepath.Join(dir, tc.sub), tc.labels)
			train, test, err := data.LoadCIFAR10(dir)
			if err != nil {
				t.Fatal(err)
			}
			if train.Len() != 15 || test.Len() != 2 {
				t.Fatalf("Len = %d, %d; want 15, 2", train.Len(), test.Len())
			}
			wantLabels := []int64{0, 1, 2, 2, 3, 4, 3, 4, 5, 6, 4, 5, 6, 7, 8}
			if !slices.Equal(train.Labels, wantLabels) || !slices.Equal(test.Labels, []int64{9, 3}) {
				t.Errorf("labels %v %v, want %v [9 3]", train.Labels, test.Labels, wantLabels)
			}
			if train.CoarseLabels != nil {
				t.Errorf("CIFAR-10 has CoarseLabels %v", train.CoarseLabels)
			}
			if tc.labels && (len(train.Classes) != 10 || train.Classes[3] != "cat" || test.Classes[9] != "truck") {
				t.Errorf("Classes %v", train.Classes)
			}
			if !tc.labels && train.Classes != nil {
				t.Errorf("Classes %v without a names file, want nil", train.Classes)
			}
			it, err := train.Get(4)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(it.Shape, []int{3, 32, 32}) || it.Label != 3 {
				t.Errorf("Get(4): shape %v label %d", it.Shape, it.Label)
			}
			// pixel j of record 4 is (28 + j) mod 256; plane 1 starts at 1024
			for _, j := range []int{0, 1, 1024, 3071} {
				if want := float32(byte(28+j)) / 255; it.X[j] != want {
					t.Errorf("Get(4).X[%d] = %v, want %v", j, it.X[j], want)
				}
			}
			if _, err := train.Get(15); !errors.Is(err, data.ErrIndex) {
				t.Errorf("Get(15): %v, want ErrIndex", err)
			}
		})
	}
}

func TestLoadCIFAR100(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "cifar-100-binary")
	write(t, filepath.Join(sub, "train.bin"), slices.Concat(cifarRecord(0, 19, 99), cifarRecord(1, 4, 30),
		cifarRecord(2, 0, 0)))
	write(t, filepath.Join(sub, "test.bin"), cifarRecord(3, 7, 52))
	var fine, coarse []string
	for i := range 100 {
		fine = append(fine, "fine"+string(rune('A'+i%26))+string(rune('a'+i/26)))
	}
	for i := range 20 {
		coarse = append(coarse, "coarse"+string(rune('a'+i)))
	}
	write(t, filepath.Join(sub, "fine_label_names.txt"), []byte(strings.Join(fine, "\n")))
	write(t, filepath.Join(sub, "coarse_label_names.txt"), []byte(strings.Join(coarse, "\n")+"\n"))
	train, test, err := data.LoadCIFAR100(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(train.Labels, []int64{99, 30, 0}) || !slices.Equal(train.CoarseLabels, []int64{19, 4, 0}) {
		t.Errorf("labels %v coarse %v", train.Labels, train.CoarseLabels)
	}
	if !slices.Equal(test.Labels, []int64{52}) || !slices.Equal(test.CoarseLabels, []int64{7}) {
		t.Errorf("test labels %v coarse %v", test.Labels, test.CoarseLabels)
	}
	if len(train.Classes) != 100 || train.Classes[99] != fine[99] || len(test.CoarseClasses) != 20 ||
		test.CoarseClasses[19] != "coarset" {
		t.Errorf("names: %d fine, %d coarse", len(train.Classes), len(test.CoarseClasses))
	}
	it, err := train.Get(1)
	if err != nil {
		t.Fatal(err)
	}
	if it.Label != 30 || it.Extra["coarse_label"] != int64(4) || it.X[0] != float32(7)/255 {
		t.Errorf("Get(1) = label %d, extra %v, X[0] %v", it.Label, it.Extra, it.X[0])
	}
}

func TestCIFARBatch(t *testing.T) {
	dir := t.TempDir()
	writeCIFAR10(t, dir, false)
	train, _, err := data.LoadCIFAR10(dir)
	if err != nil {
		t.Fatal(err)
	}
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x, y := train.Batch([]int{4, 0}, dev)
		if !slices.Equal(x.Shape(), []int{2, 3, 32, 32}) || x.DType() != tensor.Float32 {
			t.Fatalf("x %v %v", x.Shape(), x.DType())
		}
		if got := y.Int64s(); !slices.Equal(got, []int64{3, 0}) {
			t.Errorf("y = %v, want [3 0]", got)
		}
		xs := x.Float32s()
		if !slices.Equal(xs[:data.CIFARPixels], train.Image(4)) || !slices.Equal(xs[data.CIFARPixels:], train.Image(0)) {
			t.Error("Batch images differ from Image")
		}
		err := tensor.Try(func() { train.Batch([]int{0, 15}, dev) })
		if !errors.Is(err, tensor.ErrArgument) || !strings.Contains(err.Error(), "position 1") {
			t.Errorf("Batch with index 15: %v, want ErrArgument naming position 1", err)
		}
	})
}

func TestLoadCIFARCorrupt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(t *testing.T, dir string)
		want   error
		text   []string
	}{
		{"missing file", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "data_batch_3.bin")) },
			fs.ErrNotExist, []string{"data_batch_3.bin"}},
		{"truncated record", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "data_batch_4.bin")
			b, _ := os.ReadFile(p)
			write(t, p, b[:3*3073+100])
		}, data.ErrCorrupt, []string{"data_batch_4.bin", "truncated record 3", "100 of its 3073 bytes"}},
		{"label out of range", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "test_batch.bin")
			b, _ := os.ReadFile(p)
			b[3073] = 10
			write(t, p, b)
		}, data.ErrCorrupt, []string{"test_batch.bin", "record 1", "label 10"}},
		{"wrong number of names", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "batches.meta.txt"), []byte("cat\ndog\n"))
		}, data.ErrCorrupt, []string{"batches.meta.txt", "2 label names, want 10"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeCIFAR10(t, dir, true)
			tc.mutate(t, dir)
			_, _, err := data.LoadCIFAR10(dir)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			for _, s := range tc.text {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("err %q does not mention %q", err, s)
				}
			}
		})
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "train.bin"), cifarRecord(0, 20, 1))
	write(t, filepath.Join(dir, "test.bin"), cifarRecord(0, 1, 1))
	if _, _, err := data.LoadCIFAR100(dir); !errors.Is(err, data.ErrCorrupt) ||
		!strings.Contains(err.Error(), "coarse label 20") || !strings.Contains(err.Error(), "train.bin") {
		t.Errorf("CIFAR-100 coarse label 20: %v", err)
	}
	write(t, filepath.Join(dir, "train.bin"), cifarRecord(0, 1, 100))
	if _, _, err := data.LoadCIFAR100(dir); !errors.Is(err, data.ErrCorrupt) || !strings.Contains(err.Error(), "label 100") {
		t.Errorf("CIFAR-100 fine label 100: %v", err)
	}
}

// LoadCIFAR100 on any bytes returns images and labels in range, or an
// error; it never panics.
func FuzzLoadCIFAR100(f *testing.F) {
	f.Add(cifarRecord(0, 3, 42))
	f.Add(cifarRecord(1, 3, 42)[:100])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "train.bin"), b)
		write(t, filepath.Join(dir, "test.bin"), nil)
		train, _, err := data.LoadCIFAR100(dir)
		if err != nil {
			if !errors.Is(err, data.ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if len(train.Pixels) != train.Len()*data.CIFARPixels || len(train.CoarseLabels) != train.Len() {
			t.Fatalf("%d images, %d pixels, %d coarse labels", train.Len(), len(train.Pixels), len(train.CoarseLabels))
		}
		for i, l := range train.Labels {
			if l < 0 || l >= 100 || train.CoarseLabels[i] < 0 || train.CoarseLabels[i] >= 20 {
				t.Fatalf("record %d: labels %d, %d", i, l, train.CoarseLabels[i])
			}
		}
	})
}
