package data

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/kiln-ml/kiln/tensor"
)

// Image augmentation on tensors, following torchvision.transforms: images
// are float tensors [C, H, W] or batches [N, C, H, W] (values in [0, 1]
// for the colour transforms), on any device, float32 or float64. Every
// transform is composed from tensor ops, so it runs on the device the
// image is on.
//
// Random transforms draw their parameters from the *RNG they are
// given, so a seed fixes them: Augment seeds one generator per item from
// (seed, index). On a batch [N, C, H, W] they draw for each image on its
// own (torchvision draws once per call); the deterministic functions
// (Rotate, Crop, AdjustHue, …) treat every image of a batch alike.

// ImageTransform transforms an image [C, H, W] or a batch of images
// [N, C, H, W]. Apply panics with a *tensor.Error naming the transform
// for an input it cannot take (ErrShape for a rank other than 3 or 4,
// ErrDType for a non-float dtype) or a bad configuration (ErrArgument).
// Random transforms draw from r, which must not be nil; deterministic
// ones ignore it.
type ImageTransform interface {
	Apply(x *tensor.Tensor, r *RNG) *tensor.Tensor
}

// RNG is the random source of the random transforms and batch mixers: a
// math/rand/v2 generator, whose methods (Float64, IntN, NormFloat64, …) it
// offers. NewRNG seeds one; notebook cells, whose interpreter has no
// math/rand/v2, make theirs that way.
type RNG struct{ *rand.Rand }

// NewRNG returns a PCG generator seeded by (seed, stream).
func NewRNG(seed, stream uint64) *RNG { return &RNG{rand.New(rand.NewPCG(seed, stream))} }

// Compose applies its transforms in order.
type Compose []ImageTransform

// Apply implements ImageTransform.
func (c Compose) Apply(x *tensor.Tensor, r *RNG) *tensor.Tensor {
	for _, t := range c {
		x = t.Apply(x, r)
	}
	return x
}

// Augment returns a MapFunc (for Map) that applies t to each item's X,
// shaped by its Shape ([C, H, W]), on the CPU, with a generator seeded by
// (seed, item index): the same seed gives the same augmented data set, so
// derive the seed from the epoch (seed·1000 + epoch, say) for fresh
// augmentations every epoch. The item's Shape is updated (crops and
// resizes change it). A transform that panics makes Get return its error.
func Augment(t ImageTransform, seed uint64) MapFunc {
	return func(i int, it Item) (Item, error) {
		var out Item
		err := tensor.Try(func() {
			tensor.Scope(func() {
				x := tensor.FromFloat32s(tensor.CPU(), it.X, it.XShape()...)
				y := t.Apply(x, NewRNG(seed, uint64(i)))
				out = it
				out.X, out.Shape = y.Float32s(), y.Shape()
			})
		})
		return out, err
	}
}

// imageDims checks that x is a float image or batch of images and returns
// the index of its channel dimension.
func imageDims(op string, x *tensor.Tensor) (cdim int) {
	s := x.Shape()
	if len(s) != 3 && len(s) != 4 {
		panic(&tensor.Error{Op: op, Msg: fmt.Sprintf("input %v must be an image [C, H, W] or a batch [N, C, H, W]", s),
			Err: tensor.ErrShape})
	}
	if !x.DType().IsFloat() {
		panic(&tensor.Error{Op: op, Msg: fmt.Sprintf("input is %v, want a float dtype (scale bytes to [0, 1] first)",
			x.DType()), Err: tensor.ErrDType})
	}
	return len(s) - 3
}

func argErr(op, format string, args ...any) {
	panic(&tensor.Error{Op: op, Msg: fmt.Sprintf(format, args...), Err: tensor.ErrArgument})
}

func needRand(op string, r *RNG) {
	if r == nil || r.Rand == nil {
		argErr(op, "a random transform needs an *RNG (NewRNG), got nil")
	}
}

// eachImage applies fn to x, or to every image of a batch x on its own.
func eachImage(x *tensor.Tensor, fn func(img *tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
	if len(x.Shape()) == 3 {
		return fn(x)
	}
	imgs := x.Unbind(0)
	if len(imgs) == 0 {
		return x
	}
	for i, img := range imgs {
		imgs[i] = fn(img)
	}
	return tensor.Stack(imgs, 0)
}

// Crop returns the region of height×width pixels whose top-left corner is
// at (top, left) of x [C, H, W] or [N, C, H, W], as torchvision's
// functional crop: parts of the region outside the image are zeros. It
// panics with ErrArgument for a non-positive height or width.
func Crop(x *tensor.Tensor, top, left, height, width int) *tensor.Tensor {
	const op = "data.Crop"
	cdim := imageDims(op, x)
	if height <= 0 || width <= 0 {
		argErr(op, "crop size %d×%d must be positive", height, width)
	}
	s := x.Shape()
	h, w := s[cdim+1], s[cdim+2]
	padT, padL := max(-top, 0), max(-left, 0)
	padB, padR := max(top+height-h, 0), max(left+width-w, 0)
	if padT+padL+padB+padR > 0 {
		x = x.Pad([]int{padL, padR, padT, padB}, "constant", 0)
		top += padT
		left += padL
	}
	return x.Narrow(cdim+1, top, height).Narrow(cdim+2, left, width)
}

// imageSize returns (height, width) from a size of one value (a square)
// or two (height, width).
func imageSize(op string, size []int) (h, w int) {
	switch {
	case len(size) == 1 && size[0] > 0:
		return size[0], size[0]
	case len(size) == 2 && size[0] > 0 && size[1] > 0:
		return size[0], size[1]
	}
	argErr(op, "size %v must be one positive value or two (height, width)", size)
	return 0, 0
}

// CenterCrop crops the centre Size of an image, as torchvision's
// CenterCrop: the corner is at round((H − h)/2), round((W − w)/2) (halves
// to even, as Python rounds), and an image smaller than Size is first
// padded with zeros to fit.
type CenterCrop struct {
	Size []int // [h, w], or [s] for s×s
}

// Apply implements ImageTransform; it panics with ErrArgument for a bad
// Size.
func (c CenterCrop) Apply(x *tensor.Tensor, _ *RNG) *tensor.Tensor {
	const op = "data.CenterCrop"
	cdim := imageDims(op, x)
	th, tw := imageSize(op, c.Size)
	s := x.Shape()
	h, w := s[cdim+1], s[cdim+2]
	if th > h || tw > w {
		padL, padT := 0, 0
		padR, padB := 0, 0
		if tw > w {
			padL, padR = (tw-w)/2, (tw-w+1)/2
		}
		if th > h {
			padT, padB = (th-h)/2, (th-h+1)/2
		}
		x = x.Pad([]int{padL, padR, padT, padB}, "constant", 0)
		h, w = h+padT+padB, w+padL+padR
		if h == th && w == tw {
			return x
		}
	}
	top := int(math.RoundToEven(float64(h-th) / 2))
	left := int(math.RoundToEven(float64(w-tw) / 2))
	return x.Narrow(cdim+1, top, th).Narrow(cdim+2, left, tw)
}

// padModes maps torchvision's padding_mode names to Tensor.Pad's.
var padModes = map[string]string{"": "constant", "constant": "constant", "edge": "replicate",
	"replicate": "replicate", "reflect": "reflect", "circular": "circular"}

// RandomCrop crops a random Size region, as torchvision's RandomCrop:
// the image is first padded by Padding (one value for every side, two for
// left/right and top/bottom, or four: left, top, right, bottom) in
// PadMode ("constant" with Fill, "edge", "reflect" or "circular";
// torchvision's "symmetric" is not supported), then, with PadIfNeeded, up
// to Size where it is smaller; the corner is drawn uniformly.
type RandomCrop struct {
	Size        []int
	Padding     []int
	PadMode     string
	Fill        float64
	PadIfNeeded bool
}

// Apply implements ImageTransform; it panics with ErrArgument for a bad
// Size, Padding or PadMode, or an image smaller than Size without
// PadIfNeeded.
func (c RandomCrop) Apply(x *tensor.Tensor, r *RNG) *tensor.Tensor {
	const op = "data.RandomCrop"
	imageDims(op, x)
	needRand(op, r)
	th, tw := imageSize(op, c.Size)
	mode, ok := padModes[c.PadMode]
	if !ok {
		argErr(op, "PadMode %q: want constant, edge, reflect or circular", c.PadMode)
	}
	var l, t, rt, b int
	switch p := c.Padding; len(p) {
	case 0:
	case 1:
		l, t, rt, b = p[0], p[0], p[0], p[0]
	case 2:
		l, t, rt, b = p[0], p[1], p[0], p[1]
	case 4:
		l, t, rt, b = p[0], p[1], p[2], p[3]
	default:
		argErr(op, "Padding %v must hold 1, 2 or 4 values", p)
	}
	if min(l, t, rt, b) < 0 {
		argErr(op, "Padding %v must not be negative", c.Padding)
	}
	return eachImage(x, func(img *tensor.Tensor) *tensor.Tensor {
		if l+t+rt+b > 0 {
			img = img.Pad([]int{l, rt, t, b}, mode, c.Fill)
		}
		s := img.Shape()
		h, w := s[1], s[2]
		if c.PadIfNeeded && (h < th || w < tw) {
			ph, pw := max(th-h, 0), max(tw-w, 0)
			img = img.Pad([]int{pw, pw, ph, ph}, mode, c.Fill)
			h, w = h+2*ph, w+2*pw
		}
		if h < th || w < tw {
			argErr(op, "image %d×%d (after padding) is smaller than the crop %d×%d", h, w, th, tw)
		}
		top, left := r.IntN(h-th+1), r.IntN(w-tw+1)
		return img.Narrow(1, top, th).Narrow(2, left, tw)
	})
}

// RandomHorizontalFlip mirrors an image left to right with probability
// P, as torchvision's RandomHorizontalFlip (whose default P is 0.5; here
// the zero value never flips).
type RandomHorizontalFlip struct{ P float64 }

// Apply implements ImageTransform.
func (f RandomHorizontalFlip) Apply(x *tensor.Tensor, r *RNG) *tensor.Tensor {
	return randomFlip("data.RandomHorizontalFlip", x, r, f.P, 0)
}

// RandomVerticalFlip mirrors an image top to bottom with probability P.
type RandomVerticalFlip struct{ P float64 }

// Apply implements ImageTransform.
func (f RandomVerticalFlip) Apply(x *tensor.Tensor, r *RNG) *tensor.Tensor {
	return randomFlip("data.RandomVerticalFlip", x, r, f.P, 1)
}

// randomFlip flips each image along its last (axis 0) or second-last
// (axis 1) dimension with probability p.
func randomFlip(op string, x *tensor.Tensor, r *RNG, p float64, axis int) *tensor.Tensor {
	imageDims(op, x)
	needRand(op, r)
	if !(p >= 0 && p <= 1) {
		argErr(op, "probability %v is not in [0, 1]", p)
	}
	return eachImage(x, func(img *tensor.Tensor) *tensor.Tensor {
		if r.Float64() < p {
			return img.Flip(2 - axis)
		}
		return img
	})
}

// Normalize standardises each channel: (x − Mean[c]) / Std[c], as
// torchvision's Normalize. Mean and Std hold one value per channel, or
// one for all.
type Normalize struct {
	Mean, Std []float64
}

// Apply implements ImageTransform; it panics with ErrArgument when Mean
// or Std has neither one value nor one per channel, or a Std is not
// positive.
func (n Normalize) Apply(x *tensor.Tensor, _ *RNG) *tensor.Tensor {
	const op = "data.Normalize"
	cdim := imageDims(op, x)
	c := x.Shape()[cdim]
	shape := []int{c, 1, 1}
	per := func(name string, v []float64) *tensor.Tensor {
		if len(v) != 1 && len(v) != c {
			argErr(op, "%s %v must hold 1 or %d values (one per channel)", name, v, c)
		}
		vals := make([]float64, c)
		for i := range vals {
			vals[i] = v[min(i, len(v)-1)]
			if name == "Std" && !(vals[i] > 0) {
				argErr(op, "Std %v must be positive", v)
			}
		}
		return tensor.FromFloat64s(x.Device(), vals, shape...).To(x.DType())
	}
	mean, std := per("Mean", n.Mean), per("Std", n.Std)
	return x.Sub(mean).Div(std)
}

// Resize resamples images to Size with tensor.Interpolate, as
// torchvision's Resize on tensors (antialias off): two values are the
// output height and width; one value s is the length of the shorter side,
// the longer scaled to keep the aspect ratio (⌊s·long/short⌋). Mode is
// "bilinear" (the default, also "") or "nearest".
type Resize struct {
	Size []int
	Mode string
}

// Apply implements ImageTransform; it panics with ErrArgument for a bad
// Size or Mode.
func (z Resize) Apply(x *tensor.Tensor, _ *RNG) *tensor.Tensor {
	const op = "data.Resize"
	cdim := imageDims(op, x)
	s := x.Shape()
	h, w := s[cdim+1], s[cdim+2]
	var oh, ow int
	switch {
	case len(z.Size) == 1 && z.Size[0] > 0:
		if h <= w {
			oh, ow = z.Size[0], int(float64(z.Size[0])*float64(w)/float64(h))
		} else {
			oh, ow = int(float64(z.Size[0])*float64(h)/float64(w)), z.Size[0]
		}
	default:
		oh, ow = imageSize(op, z.Size)
	}
	mode := z.Mode
	if mode == "" {
		mode = "bilinear"
	}
	if mode != "bilinear" && mode != "nearest" {
		argErr(op, "Mode %q: want bilinear or nearest", z.Mode)
	}
	if cdim == 0 {
		x = x.Unsqueeze(0)
	}
	y := tensor.Interpolate(x, tensor.InterpolateConfig{Size: []int{oh, ow}, Mode: mode})
	if cdim == 0 {
		y = y.Squeeze(0)
	}
	return y
}

// Rotate rotates images by angle degrees counter-clockwise about their
// centre, keeping their size, as torchvision's functional rotate
// (expand=False): each output pixel samples the input at the inversely
// rotated position, by "bilinear" or "nearest" (the default, also "")
// interpolation; where that position falls outside the image, the output
// is fill (one value, or one per channel; nil means 0), blended at the
// border as torchvision blends it: bilinear with a fill gives out·m +
// (1 − m)·fill, with out the zero-padded sample and m the in-image share
// of its weights; bilinear without one gives out. Gradients flow to x. It panics with
// ErrArgument for an unknown mode or a fill of the wrong length.
func Rotate(x *tensor.Tensor, angle float64, mode string, fill []float64) *tensor.Tensor {
	const op = "data.Rotate"
	cdim := imageDims(op, x)
	if mode == "" {
		mode = "nearest"
	}
	if mode != "nearest" && mode != "bilinear" {
		argErr(op, "mode %q: want nearest or bilinear", mode)
	}
	s := x.Shape()
	c, h, w := s[cdim], s[cdim+1], s[cdim+2]
	if len(fill) > 1 && len(fill) != c {
		argErr(op, "fill %v must hold 1 or %d values (one per channel)", fill, c)
	}
	if x.NumElements() == 0 {
		return x
	}
	// torchvision's inverse matrix for a rotation by −angle about the
	// centre, applied to pixel centres measured from the image centre.
	rad := angle * math.Pi / 180
	cos, sin := math.Cos(rad), math.Sin(rad)
	m := [4]float64{cos, -sin, sin, cos}
	n := h * w
	const taps = 4
	idx := make([]int64, taps*n)
	wts := make([]float64, taps*n)
	for i := range h {
		for j := range w {
			px := float64(j) - float64(w)/2 + 0.5
			py := float64(i) - float64(h)/2 + 0.5
			sx := m[0]*px + m[1]*py + float64(w)/2 - 0.5
			sy := m[2]*px + m[3]*py + float64(h)/2 - 0.5
			p := i*w + j
			if mode == "nearest" {
				nx, ny := int(math.RoundToEven(sx)), int(math.RoundToEven(sy))
				if nx >= 0 && nx < w && ny >= 0 && ny < h {
					idx[p], wts[p] = int64(ny*w+nx), 1
				}
				continue
			}
			x0, y0 := math.Floor(sx), math.Floor(sy)
			fx, fy := sx-x0, sy-y0
			for k, d := range [taps][2]int{{0, 0}, {0, 1}, {1, 0}, {1, 1}} {
				yy, xx := int(y0)+d[0], int(x0)+d[1]
				if xx < 0 || xx >= w || yy < 0 || yy >= h {
					continue
				}
				wy, wx := 1-fy, 1-fx
				if d[0] == 1 {
					wy = fy
				}
				if d[1] == 1 {
					wx = fx
				}
				idx[k*n+p], wts[k*n+p] = int64(yy*w+xx), wy*wx
			}
		}
	}
	dev := x.Device()
	lead := s[:cdim+1]
	flat := x.Reshape(append(append([]int(nil), lead...), n)...)
	weights := tensor.FromFloat64s(dev, wts, taps, n).To(x.DType())
	gathered := flat.IndexSelect(cdim+1, tensor.FromInt64s(dev, idx, taps*n))
	gathered = gathered.Reshape(append(append([]int(nil), lead...), taps, n)...)
	out := gathered.Mul(weights).Sum(cdim + 1) // [..., C, n]
	mask := weights.Sum(0)                     // the in-image share of each output pixel
	fv := make([]float64, c)
	for i := range fv {
		if len(fill) > 0 {
			fv[i] = fill[min(i, len(fill)-1)]
		}
	}
	fillT := tensor.FromFloat64s(dev, fv, c, 1).To(x.DType())
	if mode == "nearest" {
		// nearest: pixels outside the image take the fill outright
		out = tensor.Where(mask.GtScalar(0.5), out, fillT.Expand(out.Shape()...))
	} else if len(fill) > 0 {
		// bilinear: torchvision samples a channel of ones along with the
		// image and blends out·mask + (1 − mask)·fill, so a border pixel's
		// zero-padded sample is weighted by its in-image share twice
		out = out.Mul(mask).Add(mask.MulScalar(-1).AddScalar(1).Mul(fillT))
	}
	return out.Reshape(s...)
}

// RandomRotation rotates each image by an angle drawn uniformly from
// Degrees ([−d, d] for one value d, [lo, hi] for two), as torchvision's
// RandomRotation (expand=False, about the centre); Mode and Fill are as
// for Rotate.
type RandomRotation struct {
	Degrees []float64
	Mode    string
	Fill    []float64
}

// Apply implements ImageTransform; it panics with ErrArgument for bad
// Degrees, Mode or Fill.
func (t RandomRotation) Apply(x *tensor.Tensor, r *RNG) *tensor.Tensor {
	const op = "data.RandomRotation"
	imageDims(op, x)
	needRand(op, r)
	var lo, hi float64
	switch d := t.Degrees; {
	case len(d) == 1 && d[0] >= 0:
		lo, hi = -d[0], d[0]
	case len(d) == 2 && d[0] <= d[1]:
		lo, hi = d[0], d[1]
	default:
		argErr(op, "Degrees %v must be one non-negative value or a range [lo, hi]", d)
	}
	return eachImage(x, func(img *tensor.Tensor) *tensor.Tensor {
		return Rotate(img, lo+(hi-lo)*r.Float64(), t.Mode, t.Fill)
	})
}

// blend returns clamp(f·a + (1 − f)·b, 0, 1), torchvision's _blend.
func blend(a, b *tensor.Tensor, f float64) *tensor.Tensor {
	return a.MulScalar(f).Add(b.MulScalar(1-f)).Clamp(0, 1)
}

// grayscale returns the luma of RGB images, keeping the channel
// dimension (size 1): 0.2989·R + 0.587·G + 0.114·B.
func grayscale(x *tensor.Tensor, cdim int) *tensor.Tensor {
	return x.Narrow(cdim, 0, 1).MulScalar(0.2989).
		Add(x.Narrow(cdim, 1, 1).MulScalar(0.587)).
		Add(x.Narrow(cdim, 2, 1).MulScalar(0.114))
}

func colorArgs(op string, x *tensor.Tensor, f float64) int {
	cdim := imageDims(op, x)
	if c := x.Shape()[cdim]; c != 1 && c != 3 {
		panic(&tensor.Error{Op: op, Msg: fmt.Sprintf("input %v has %d channels, want 1 or 3", x.Shape(), c),
			Err: tensor.ErrShape})
	}
	if !(f >= 0) {
		argErr(op, "factor %v must not be negative", f)
	}
	return cdim
}

// AdjustBrightness multiplies images by f, clamped to [0, 1], as
// torchvision's adjust_brightness (0 gives black, 1 the image). It panics
// with ErrArgument for a negative f and ErrShape for images of other than
// 1 or 3 channels.
func AdjustBrightness(x *tensor.Tensor, f float64) *tensor.Tensor {
	colorArgs("data.AdjustBrightness", x, f)
	return x.MulScalar(f).Clamp(0, 1)
}

// AdjustContrast blends images with the mean of their grayscale (one mean
// per image), as torchvision's adjust_contrast: 0 gives a uniform gray
// image, 1 the image. Errors are as AdjustBrightness's.
func AdjustContrast(x *tensor.Tensor, f float64) *tensor.Tensor {
	cdim := colorArgs("data.AdjustContrast", x, f)
	if x.NumElements() == 0 {
		return x
	}
	g := x
	if x.Shape()[cdim] == 3 {
		g = grayscale(x, cdim)
	}
	mean := g.MeanKeep(cdim, cdim+1, cdim+2)
	return blend(x, mean, f)
}

// AdjustSaturation blends RGB images with their grayscale, as
// torchvision's adjust_saturation: 0 gives gray, 1 the image, 2 doubles
// the saturation. One-channel images are returned as they are. Errors are
// as AdjustBrightness's.
func AdjustSaturation(x *tensor.Tensor, f float64) *tensor.Tensor {
	cdim := colorArgs("data.AdjustSaturation", x, f)
	if x.Shape()[cdim] == 1 {
		return x
	}
	return blend(x, grayscale(x, cdim), f)
}

// AdjustHue shifts the hue of RGB images by f turns (f in [−0.5, 0.5]),
// through HSV, as torchvision's adjust_hue. One-channel images are
// returned as they are. It panics with ErrArgument for f outside
// [−0.5, 0.5] and ErrShape for images of other than 1 or 3 channels.
func AdjustHue(x *tensor.Tensor, f float64) *tensor.Tensor {
	const op = "data.AdjustHue"
	cdim := colorArgs(op, x, 0)
	if !(f >= -0.5 && f <= 0.5) {
		argErr(op, "hue factor %v is not in [-0.5, 0.5]", f)
	}
	if x.Shape()[cdim] == 1 || x.NumElements() == 0 {
		return x
	}
	r, g, b := x.Narrow(cdim, 0, 1), x.Narrow(cdim, 1, 1), x.Narrow(cdim, 2, 1)
	maxc, minc := x.MaxKeep(cdim), x.MinKeep(cdim)
	eqc := maxc.Eq(minc)
	ones := tensor.FullLike(maxc, 1)
	cr := maxc.Sub(minc)
	s := cr.Div(tensor.Where(eqc, ones, maxc))
	div := tensor.Where(eqc, ones, cr)
	rc, gc, bc := maxc.Sub(r).Div(div), maxc.Sub(g).Div(div), maxc.Sub(b).Div(div)
	isR := maxc.Eq(r)
	isG := maxc.Eq(g).LogicalAnd(isR.LogicalNot())
	zeros := tensor.FullLike(maxc, 0)
	h := tensor.Where(isR, bc.Sub(gc), zeros).
		Add(tensor.Where(isG, rc.Sub(bc).AddScalar(2), zeros)).
		Add(tensor.Where(isR.LogicalOr(isG), zeros, gc.Sub(rc).AddScalar(4)))
	h = fracPart(h.DivScalar(6).AddScalar(1))
	// shift, then back to RGB
	h = fracPart(h.AddScalar(f))
	v := maxc
	h6 := h.MulScalar(6)
	i := h6.Floor()
	fr := h6.Sub(i)
	i = i.RemScalar(6)
	p := v.Mul(s.MulScalar(-1).AddScalar(1)).Clamp(0, 1)
	q := v.Mul(s.Mul(fr).MulScalar(-1).AddScalar(1)).Clamp(0, 1)
	t := v.Mul(s.Mul(fr.MulScalar(-1).AddScalar(1)).MulScalar(-1).AddScalar(1)).Clamp(0, 1)
	var sector [5]*tensor.Tensor // sector[k]: i == k (i == 5 is the rest)
	for k := range sector {
		sector[k] = i.EqScalar(float64(k))
	}
	pick := func(vals [6]*tensor.Tensor) *tensor.Tensor {
		out := vals[5]
		for k := 4; k >= 0; k-- {
			out = tensor.Where(sector[k], vals[k], out)
		}
		return out
	}
	return tensor.Cat([]*tensor.Tensor{
		pick([6]*tensor.Tensor{v, q, p, p, t, v}),
		pick([6]*tensor.Tensor{t, v, v, q, p, p}),
		pick([6]*tensor.Tensor{p, p, t, v, v, q}),
	}, cdim)
}

// fracPart returns x − ⌊x⌋, Python's x % 1.0.
func fracPart(x *tensor.Tensor) *tensor.Tensor { return x.Sub(x.Floor()) }

// ColorJitter changes brightness, contrast, saturation and hue by random
// factors, in a random order, as torchvision's ColorJitter: the
// brightness, contrast and saturation factors are drawn uniformly from
// [max(0, 1 − v), 1 + v] for a field value v, the hue shift from
// [−Hue, Hue] (Hue at most 0.5); a zero field leaves that property alone.
// Images must be [C, H, W] or [N, C, H, W] with 1 or 3 channels, values
// in [0, 1].
type ColorJitter struct {
	Brightness, Contrast, Saturation, Hue float64
}

// Apply implements ImageTransform; it panics with ErrArgument for a
// negative field or a Hue above 0.5.
func (j ColorJitter) Apply(x *tensor.Tensor, r *RNG) *tensor.Tensor {
	const op = "data.ColorJitter"
	colorArgs(op, x, 0)
	needRand(op, r)
	if !(j.Brightness >= 0 && j.Contrast >= 0 && j.Saturation >= 0 && j.Hue >= 0 && j.Hue <= 0.5) {
		argErr(op, "%+v: fields must be non-negative and Hue at most 0.5", j)
	}
	factor := func(v float64) float64 {
		lo := max(0, 1-v)
		return lo + (1+v-lo)*r.Float64()
	}
	return eachImage(x, func(img *tensor.Tensor) *tensor.Tensor {
		for _, k := range r.Perm(4) {
			switch {
			case k == 0 && j.Brightness > 0:
				img = AdjustBrightness(img, factor(j.Brightness))
			case k == 1 && j.Contrast > 0:
				img = AdjustContrast(img, factor(j.Contrast))
			case k == 2 && j.Saturation > 0:
				img = AdjustSaturation(img, factor(j.Saturation))
			case k == 3 && j.Hue > 0:
				img = AdjustHue(img, -j.Hue+2*j.Hue*r.Float64())
			}
		}
		return img
	})
}

// BatchMixer mixes a batch of images [N, C, H, W] and their labels:
// labels are Int64 class indices [N] or soft labels [N, K] (so that
// mixers chain), and the result's labels are soft, [N, K] in the images'
// dtype, each row summing to 1. Mix panics with a *tensor.Error for
// inputs it cannot take.
type BatchMixer interface {
	Mix(x, y *tensor.Tensor, r *RNG) (mixed, soft *tensor.Tensor)
}

// MixUp mixes each image with the next one of the batch (the batch rolled
// by one, as torchvision's RandomMixup): x' = λ·x + (1 − λ)·x_rolled and
// y' = λ·y + (1 − λ)·y_rolled with one λ ~ Beta(Alpha, Alpha) per batch
// (Zhang et al., 2018).
type MixUp struct {
	Alpha      float64 // the Beta distribution's parameter, positive (1 in torchvision)
	NumClasses int     // K, for class-index labels
}

// Mix implements BatchMixer; it panics with ErrArgument for a
// non-positive Alpha or a label outside [0, NumClasses), ErrShape for
// images that are not [N, C, H, W] or labels that do not match them.
func (m MixUp) Mix(x, y *tensor.Tensor, r *RNG) (mixed, soft *tensor.Tensor) {
	const op = "data.MixUp"
	soft = mixArgs(op, x, y, m.Alpha, m.NumClasses)
	needRand(op, r)
	lam := betaSample(r, m.Alpha)
	return MixImages(x, soft, lam)
}

// MixImages returns λ·x + (1 − λ)·x_rolled and λ·y + (1 − λ)·y_rolled,
// with x [N, …] and y [N, K] soft labels rolled by one along dimension 0:
// MixUp for a given λ.
func MixImages(x, y *tensor.Tensor, lam float64) (mixed, soft *tensor.Tensor) {
	mixed = x.MulScalar(lam).Add(x.Roll(1, 0).MulScalar(1 - lam))
	soft = y.MulScalar(lam).Add(y.Roll(1, 0).MulScalar(1 - lam))
	return mixed, soft
}

// CutMix pastes a random box of the next image of the batch (the batch
// rolled by one) into each image, as torchvision's RandomCutmix (Yun et
// al., 2019): λ ~ Beta(Alpha, Alpha), the box centred at a uniform pixel
// with half-sides ⌊0.5·√(1 − λ)·W⌋ and ⌊0.5·√(1 − λ)·H⌋, clipped to the
// image; the labels mix in proportion to the areas kept and pasted.
type CutMix struct {
	Alpha      float64
	NumClasses int
}

// Mix implements BatchMixer; errors are as MixUp's.
func (m CutMix) Mix(x, y *tensor.Tensor, r *RNG) (mixed, soft *tensor.Tensor) {
	const op = "data.CutMix"
	soft = mixArgs(op, x, y, m.Alpha, m.NumClasses)
	needRand(op, r)
	s := x.Shape()
	h, w := s[2], s[3]
	lam := betaSample(r, m.Alpha)
	rx, ry := r.IntN(w), r.IntN(h)
	half := 0.5 * math.Sqrt(1-lam)
	hw, hh := int(half*float64(w)), int(half*float64(h))
	return PasteBox(x, soft, max(ry-hh, 0), max(rx-hw, 0), min(ry+hh, h), min(rx+hw, w))
}

// PasteBox copies rows [y1, y2) and columns [x1, x2) of each image of the
// batch x [N, C, H, W] rolled by one into the image, and mixes the soft
// labels y [N, K] by the areas: CutMix for a given box. It panics with
// ErrArgument for a box outside the image.
func PasteBox(x, y *tensor.Tensor, y1, x1, y2, x2 int) (mixed, soft *tensor.Tensor) {
	s := x.Shape()
	h, w := s[len(s)-2], s[len(s)-1]
	if y1 < 0 || x1 < 0 || y2 > h || x2 > w || y1 > y2 || x1 > x2 {
		argErr("data.PasteBox", "box rows [%d, %d), columns [%d, %d) is not within the %d×%d image", y1, y2, x1, x2, h, w)
	}
	inside := make([]bool, h*w)
	for i := y1; i < y2; i++ {
		for j := x1; j < x2; j++ {
			inside[i*w+j] = true
		}
	}
	mask := tensor.FromBools(x.Device(), inside, h, w)
	mixed = tensor.Where(mask, x.Roll(1, 0), x)
	lam := 1 - float64((x2-x1)*(y2-y1))/float64(w*h)
	soft = y.MulScalar(lam).Add(y.Roll(1, 0).MulScalar(1 - lam))
	return mixed, soft
}

// mixArgs checks a mixer's inputs and returns the labels as soft labels
// [N, K] in x's dtype.
func mixArgs(op string, x, y *tensor.Tensor, alpha float64, k int) *tensor.Tensor {
	if !(alpha > 0) || math.IsInf(alpha, 0) {
		argErr(op, "Alpha %v must be positive and finite", alpha)
	}
	s := x.Shape()
	if len(s) != 4 || !x.DType().IsFloat() {
		panic(&tensor.Error{Op: op, Msg: fmt.Sprintf("images %v %v must be a float batch [N, C, H, W]", s, x.DType()),
			Err: tensor.ErrShape})
	}
	ys := y.Shape()
	switch {
	case len(ys) == 1 && ys[0] == s[0] && y.DType().IsInt():
		if k < 1 {
			argErr(op, "NumClasses %d must be positive for class-index labels", k)
		}
		for i, l := range y.Int64s() {
			if l < 0 || l >= int64(k) {
				argErr(op, "label %d of item %d is outside [0, %d)", l, i, k)
			}
		}
		return y.OneHot(k).To(x.DType())
	case len(ys) == 2 && ys[0] == s[0] && y.DType().IsFloat():
		return y.To(x.DType())
	}
	panic(&tensor.Error{Op: op, Msg: fmt.Sprintf("labels %v %v must be [%d] class indices or [%d, K] soft labels",
		ys, y.DType(), s[0], s[0]), Err: tensor.ErrShape})
}

// betaSample draws from Beta(a, a) as the ratio of two Gamma(a) draws.
func betaSample(r *RNG, a float64) float64 {
	g1, g2 := gammaSample(r, a), gammaSample(r, a)
	if g1+g2 == 0 {
		return 0.5
	}
	return g1 / (g1 + g2)
}

// gammaSample draws from Gamma(a, 1) by Marsaglia and Tsang's method
// (boosted by U^(1/a) for a < 1).
func gammaSample(r *RNG, a float64) float64 {
	if a < 1 {
		return gammaSample(r, a+1) * math.Pow(r.Float64(), 1/a)
	}
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
