package data_test

import (
	"context"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/data"
)

// writeImage writes a 3×2 image whose pixel (x, y) is (40x, 100y, 7) as
// PNG or JPEG (by the name's suffix).
func writeImage(t *testing.T, path string) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	for y := range 2 {
		for x := range 3 {
			img.Set(x, y, color.RGBA{uint8(40 * x), uint8(100 * y), 7, 255})
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if strings.HasSuffix(path, ".png") {
		err = png.Encode(f, img)
	} else {
		err = jpeg.Encode(f, img, &jpeg.Options{Quality: 100})
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestImageFolder(t *testing.T) {
	root := t.TempDir()
	writeImage(t, filepath.Join(root, "dog", "b.png"))
	writeImage(t, filepath.Join(root, "dog", "a.JPG"))
	writeImage(t, filepath.Join(root, "cat", "z.png"))
	writeImage(t, filepath.Join(root, "stray.png")) // not in a class folder: ignored
	if err := os.WriteFile(filepath.Join(root, "cat", "notes.txt"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := data.LoadImageFolder(root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Classes, []string{"cat", "dog", "empty"}) || f.Len() != 3 {
		t.Fatalf("classes %v, %d images", f.Classes, f.Len())
	}
	if got := labels(t, f); !slices.Equal(got, []int{0, 1, 1}) {
		t.Errorf("labels %v", got)
	}
	if filepath.Base(f.Paths[1]) != "a.JPG" {
		t.Errorf("paths %v not sorted by name", f.Paths)
	}
	for i := range 3 {
		it, err := f.Get(i)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(it.Shape, []int{3, 2, 3}) {
			t.Fatalf("image %d shape %v", i, it.Shape)
		}
		// PNG is lossless: the pixels written. JPEG is lossy (and subsamples
		// colour): the pixels image/jpeg decodes.
		ref := func(x, y int) [3]float64 { return [3]float64{40 * float64(x) / 255, 100 * float64(y) / 255, 7.0 / 255} }
		if strings.HasSuffix(f.Paths[i], ".JPG") {
			file, _ := os.Open(f.Paths[i])
			img, err := jpeg.Decode(file)
			file.Close()
			if err != nil {
				t.Fatal(err)
			}
			ref = func(x, y int) [3]float64 {
				r, g, b, _ := img.At(x, y).RGBA()
				return [3]float64{float64(r) / 65535, float64(g) / 65535, float64(b) / 65535}
			}
		}
		for y := range 2 {
			for x := range 3 {
				want := ref(x, y)
				for c := range 3 {
					if got := float64(it.X[c*6+y*3+x]); math.Abs(got-want[c]) > 1e-6 {
						t.Errorf("image %d channel %d pixel (%d, %d) = %g, want %g", i, c, x, y, got, want[c])
					}
				}
			}
		}
	}
	f.Gray = true
	if it, _ := f.Get(0); !slices.Equal(it.Shape, []int{1, 2, 3}) || math.Abs(float64(it.X[0])-0.114*7/255) > 1e-6 {
		t.Errorf("gray image shape %v, first pixel %g", it.Shape, it.X[0])
	}
}

func TestImageFolderErrors(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"a/0.png", "a/1.png", "b/2.png", "b/3.png"} {
		writeImage(t, filepath.Join(root, name))
	}
	corrupt := filepath.Join(root, "b", "2.png")
	if err := os.WriteFile(corrupt, []byte("\x89PNG\r\n\x1a\nnot really"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := data.LoadImageFolder(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Get(2); !errors.Is(err, data.ErrCorrupt) || !strings.Contains(err.Error(), corrupt) {
		t.Errorf("corrupt image: error %v, want ErrCorrupt naming %s", err, corrupt)
	}
	os.Remove(filepath.Join(root, "b", "3.png"))
	if _, err := f.Get(3); err == nil || !strings.Contains(err.Error(), "3.png") {
		t.Errorf("vanished image: error %v", err)
	}
	// Through a loader, the error carries the item's index.
	l := newLoader(t, f, data.LoaderConfig{BatchSize: 1, Workers: 2})
	it := l.Iter(context.Background(), 0)
	for it.Next() {
		it.Batch().Release()
	}
	var ie *data.ItemError
	if !errors.As(it.Err(), &ie) || ie.Index != 2 || !strings.Contains(it.Err().Error(), corrupt) {
		t.Errorf("loader error %v, want item 2 naming %s", it.Err(), corrupt)
	}
	for _, bad := range []string{filepath.Join(root, "missing"), filepath.Join(root, "a")} {
		if _, err := data.LoadImageFolder(bad); err == nil {
			t.Errorf("LoadImageFolder(%s) did not fail", bad)
		}
	}
}
