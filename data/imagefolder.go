package data

import (
	"fmt"
	"image"
	_ "image/jpeg" // register the JPEG decoder
	_ "image/png"  // register the PNG decoder
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ImageFolder is a data set of images stored one class per sub-folder,
// as torchvision's ImageFolder reads them:
//
//	root/cat/001.png
//	root/cat/002.jpg
//	root/dog/001.jpeg
//
// Class names are the sub-folder names in sorted order; Label i means
// Classes[i]. Files are listed when the folder is opened and decoded on
// every Get, so the data set holds only paths in memory.
type ImageFolder struct {
	Root    string
	Classes []string
	Paths   []string // the image files, by class, then by name
	Labels  []int64  // the class of each file
	// Gray makes Get return one channel (luma) instead of three (RGB).
	Gray bool
}

// imageExts are the file suffixes LoadImageFolder picks up (case-insensitive).
var imageExts = []string{".png", ".jpg", ".jpeg"}

// LoadImageFolder lists the images under root: every .png, .jpg or .jpeg
// file (any case) directly inside a sub-folder of root. Other files, and
// files directly in root, are ignored. It returns an error when root
// cannot be read, has no sub-folder, or a sub-folder cannot be read.
func LoadImageFolder(root string) (*ImageFolder, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("data: LoadImageFolder: %w", err)
	}
	f := &ImageFolder{Root: root}
	for _, e := range entries { // ReadDir sorts by name
		if e.IsDir() {
			f.Classes = append(f.Classes, e.Name())
		}
	}
	if len(f.Classes) == 0 {
		return nil, fmt.Errorf("data: LoadImageFolder: %s has no class sub-folders", root)
	}
	for c, class := range f.Classes {
		files, err := os.ReadDir(filepath.Join(root, class))
		if err != nil {
			return nil, fmt.Errorf("data: LoadImageFolder: %w", err)
		}
		for _, e := range files {
			if e.Type().IsRegular() && slices.Contains(imageExts, strings.ToLower(filepath.Ext(e.Name()))) {
				f.Paths = append(f.Paths, filepath.Join(root, class, e.Name()))
				f.Labels = append(f.Labels, int64(c))
			}
		}
	}
	return f, nil
}

// Len returns the number of images.
func (f *ImageFolder) Len() int { return len(f.Paths) }

// Get decodes image i: X is float32 in [0, 1], shaped [3, H, W] (RGB,
// channels first, as convolutions want) or [1, H, W] with Gray set; Label
// is its class; Extra["path"] is the file. Images are not resized: Map a
// resize, or batch images of one size. It returns an error naming the file
// when it cannot be read or decoded (wrapping ErrCorrupt for a corrupt
// image), and one wrapping ErrIndex when i is out of range.
func (f *ImageFolder) Get(i int) (Item, error) {
	if i < 0 || i >= len(f.Paths) {
		return Item{}, indexErr("ImageFolder.Get", i, len(f.Paths))
	}
	path := f.Paths[i]
	file, err := os.Open(path)
	if err != nil {
		return Item{}, fmt.Errorf("data: ImageFolder: %w", err)
	}
	defer file.Close()
	img, _, err := image.Decode(file)
	if err != nil {
		return Item{}, fmt.Errorf("data: ImageFolder %s: cannot decode image (%v): %w", path, err, ErrCorrupt)
	}
	b := img.Bounds()
	h, w := b.Dy(), b.Dx()
	ch := 3
	if f.Gray {
		ch = 1
	}
	x := make([]float32, ch*h*w)
	plane := h * w
	for yy := range h {
		for xx := range w {
			r, g, bl, _ := img.At(b.Min.X+xx, b.Min.Y+yy).RGBA() // 16-bit, alpha-premultiplied
			p := yy*w + xx
			if f.Gray {
				// ITU-R BT.601 luma, as image/color.GrayModel computes it.
				x[p] = (0.299*float32(r) + 0.587*float32(g) + 0.114*float32(bl)) / 65535
				continue
			}
			x[p] = float32(r) / 65535
			x[plane+p] = float32(g) / 65535
			x[2*plane+p] = float32(bl) / 65535
		}
	}
	return Item{X: x, Shape: []int{ch, h, w}, Label: f.Labels[i], Extra: map[string]any{"path": path}}, nil
}
