package tensor

import (
	"encoding/binary"
	"math"
)

// CTCLossOptions configures CTCLoss. Its zero value is PyTorch's defaults:
// blank class 0, infinite losses kept.
type CTCLossOptions struct {
	// Blank is the class index of the blank label, in [0, C).
	Blank int `json:"blank,omitempty"`
	// ZeroInfinity replaces the infinite loss of a target that cannot fit
	// its input (too short for the labels and the blanks that repeated
	// labels need) by 0, with a zero gradient.
	ZeroInfinity bool `json:"zero_infinity,omitempty"`
}

// CTCLoss returns the connectionist temporal classification loss of each
// sample, −log p(target | input), with PyTorch's semantics
// (torch.nn.functional.ctc_loss with reduction="none"; package nn's CTC adds
// the reductions).
//
// logProbs is [T, N, C] (time, batch, classes), or [T, C] for one unbatched
// sample, holding log-probabilities (usually a LogSoftmax over C). targets
// holds integer class indices, never the blank: either padded, [N, S] with
// sample n's labels first in row n ([S] unbatched), or the N label
// sequences concatenated into one 1-D tensor of Σ targetLengths elements.
// inputLengths[n] ≤ T frames and targetLengths[n] labels of sample n are
// used. The result is [N] (0-d unbatched) in logProbs' dtype; a target that
// cannot fit its input has an infinite loss (0 with ZeroInfinity).
//
// It is one graph node, "ctc_loss". Its gradient with respect to logProbs
// is PyTorch's: for frames t < inputLengths[n],
// exp(logProbs) − Σ_s α_t(s)·β_t(s) / (p·exp(logProbs)), summed over the
// positions s of the extended label sequence holding each class (α and β
// the forward and backward variables of Graves et al., p the likelihood),
// and 0 for later frames. That is the exact gradient with respect to the
// logits when logProbs is their LogSoftmax; with respect to logProbs
// themselves it differs from the true derivative by exp(logProbs), a term
// LogSoftmax's backward pass cancels. A sample with an infinite loss gets
// NaN gradients (zeros with ZeroInfinity), as in PyTorch.
//
// The recursions run on the host in float64: logProbs and targets are read
// back (a synchronisation point), and the gradient is written back to the
// device. The alpha-beta recursions are sequential in time and short
// enough (T·N·(2S+1) log-sum-exps) that a device kernel would buy little at
// the sizes CTC is trained with; a backend kernel can replace this later
// without changing the API.
//
// It panics with ErrDType for non-float logProbs or non-integer targets,
// ErrShape when the shapes or the number of lengths do not fit, and
// ErrArgument for a blank outside [0, C), a length out of range, or a
// target label that is the blank or outside [0, C) (the labels are checked
// on the host).
func CTCLoss(logProbs, targets *Tensor, inputLengths, targetLengths []int, opts CTCLossOptions) *Tensor {
	const op = "CTCLoss"
	sameDevice(op, logProbs, targets)
	if !logProbs.dtype.IsFloat() {
		fail(op, ErrDType, "log-probabilities %s are %s; they must be floating point", shapeString(logProbs.shape), logProbs.dtype)
	}
	unbatched := len(logProbs.shape) == 2
	if !unbatched && len(logProbs.shape) != 3 {
		fail(op, ErrShape, "log-probabilities must be [T N C] (or [T C] unbatched), got %s", shapeString(logProbs.shape))
	}
	tMax, c := logProbs.shape[0], logProbs.shape[len(logProbs.shape)-1]
	n := 1
	if !unbatched {
		n = logProbs.shape[1]
	}
	if len(inputLengths) != n || len(targetLengths) != n {
		fail(op, ErrShape, "%d input lengths and %d target lengths for log-probabilities %s: want %d of each",
			len(inputLengths), len(targetLengths), shapeString(logProbs.shape), n)
	}
	if opts.Blank < 0 || opts.Blank >= c {
		fail(op, ErrArgument, "blank %d is outside [0, %d) for log-probabilities %s", opts.Blank, c, shapeString(logProbs.shape))
	}
	if !targets.dtype.IsInt() {
		fail(op, ErrDType, "targets %s are %s; they must be integer class indices", shapeString(targets.shape), targets.dtype)
	}
	total := 0
	for i, l := range targetLengths {
		if l < 0 {
			fail(op, ErrArgument, "target length %d of sample %d is negative", l, i)
		}
		total += l
	}
	for i, l := range inputLengths {
		if l < 0 || l > tMax {
			fail(op, ErrArgument, "input length %d of sample %d is outside [0, %d] for log-probabilities %s",
				l, i, tMax, shapeString(logProbs.shape))
		}
	}
	// starts[i] is the offset of sample i's labels in the flattened targets.
	starts := make([]int, n)
	switch {
	case !unbatched && len(targets.shape) == 2:
		if targets.shape[0] != n {
			fail(op, ErrShape, "padded targets %s have %d rows for a batch of %d (log-probabilities %s)",
				shapeString(targets.shape), targets.shape[0], n, shapeString(logProbs.shape))
		}
		for i := range starts {
			starts[i] = i * targets.shape[1]
		}
		for i, l := range targetLengths {
			if l > targets.shape[1] {
				fail(op, ErrArgument, "target length %d of sample %d exceeds the %d columns of padded targets %s",
					l, i, targets.shape[1], shapeString(targets.shape))
			}
		}
	case unbatched && len(targets.shape) == 1:
		if targetLengths[0] > targets.shape[0] {
			fail(op, ErrArgument, "target length %d exceeds the %d labels of targets %s",
				targetLengths[0], targets.shape[0], shapeString(targets.shape))
		}
	case !unbatched && len(targets.shape) == 1:
		if targets.shape[0] != total {
			fail(op, ErrShape, "concatenated targets %s do not hold the %d labels the target lengths add up to",
				shapeString(targets.shape), total)
		}
		for i := 1; i < n; i++ {
			starts[i] = starts[i-1] + targetLengths[i-1]
		}
	default:
		want := "[N S] (padded) or [sum of target lengths] (concatenated)"
		if unbatched {
			want = "[S]"
		}
		fail(op, ErrShape, "targets %s do not fit log-probabilities %s: want %s", shapeString(targets.shape),
			shapeString(logProbs.shape), want)
	}

	labels := targets.Int64s()
	samples := make([]*ctcSample, n)
	for i := range samples {
		s := &ctcSample{frames: inputLengths[i], ext: make([]int, 2*targetLengths[i]+1)}
		for k := range s.ext {
			s.ext[k] = opts.Blank
			if k%2 == 1 {
				v := labels[starts[i]+k/2]
				if v < 0 || v >= int64(c) || v == int64(opts.Blank) {
					fail(op, ErrArgument, "target label %d of sample %d is %d: labels must be in [0, %d) and not the blank %d",
						k/2, i, v, c, opts.Blank)
				}
				s.ext[k] = int(v)
			}
		}
		samples[i] = s
	}

	lp := logProbs.Float64s()
	at := func(t, i, k int) float64 { return lp[(t*n+i)*c+k] }
	losses := make([]float64, n)
	for i, s := range samples {
		s.forward(func(t, k int) float64 { return at(t, i, k) })
		losses[i] = s.nll
		if opts.ZeroInfinity && math.IsInf(s.nll, 1) {
			losses[i] = 0
		}
	}
	outShape := []int{n}
	if unbatched {
		outShape = []int{}
	}
	out := ctcUpload(op, logProbs.dev, losses, outShape, logProbs.dtype)
	attrs := map[string]any{"blank": opts.Blank, "zero_infinity": opts.ZeroInfinity}
	return record("ctc_loss", attrs, out, []*Tensor{logProbs, targets}, func(g *Tensor) []*Tensor {
		if !logProbs.requiresGrad {
			return []*Tensor{nil, nil}
		}
		gh := g.Float64s()
		grad := make([]float64, len(lp))
		for i, s := range samples {
			lpi := func(t, k int) float64 { return at(t, i, k) }
			set := func(t, k int, v float64) { grad[(t*n+i)*c+k] = v }
			s.backward(lpi, set, c, gh[i], opts.ZeroInfinity)
		}
		return []*Tensor{ctcUpload(op, g.dev, grad, logProbs.shape, logProbs.dtype), nil}
	})
}

// ctcSample holds one sample's recursion: its extended label sequence
// (blank, l1, blank, l2, …, blank), its forward variables and its loss.
type ctcSample struct {
	frames int       // input length
	ext    []int     // extended labels, 2L+1
	alpha  []float64 // log α, frames × len(ext)
	nll    float64
}

// forward computes log α_t(s) = lp(t, ext[s]) + log Σ α_{t−1}(s′) over
// s′ ∈ {s, s−1, and s−2 when ext[s] is a label unlike ext[s−2]}, and the
// loss −log(α_{T−1}(S−1) + α_{T−1}(S−2)).
func (s *ctcSample) forward(lp func(t, k int) float64) {
	w, T := len(s.ext), s.frames
	if T == 0 {
		s.nll = 0
		if w > 1 {
			s.nll = math.Inf(1)
		}
		return
	}
	s.alpha = make([]float64, T*w)
	for k := range s.alpha {
		s.alpha[k] = math.Inf(-1)
	}
	s.alpha[0] = lp(0, s.ext[0])
	if w > 1 {
		s.alpha[1] = lp(0, s.ext[1])
	}
	for t := 1; t < T; t++ {
		prev, cur := s.alpha[(t-1)*w:t*w], s.alpha[t*w:(t+1)*w]
		for k := range cur {
			a := prev[k]
			if k > 0 {
				a = ctcLogAdd(a, prev[k-1])
			}
			if s.skips(k) {
				a = ctcLogAdd(a, prev[k-2])
			}
			cur[k] = a + lp(t, s.ext[k])
		}
	}
	last := s.alpha[(T-1)*w:]
	ll := last[w-1]
	if w > 1 {
		ll = ctcLogAdd(ll, last[w-2])
	}
	s.nll = -ll
}

// skips reports whether a path may jump to extended position k from k−2:
// k holds a label that differs from the label before the blank at k−1.
func (s *ctcSample) skips(k int) bool {
	return k > 1 && k%2 == 1 && s.ext[k] != s.ext[k-2]
}

// backward computes the backward variables β from the last frame down and
// writes, through set, the gradient of g·loss for every frame and class of
// the sample: (exp(lp) − Σ_{s: ext[s]=k} exp(α+β+nll−lp))·g before the
// input length and 0 after it.
func (s *ctcSample) backward(lp func(t, k int) float64, set func(t, k int, v float64), c int, g float64, zeroInf bool) {
	w, T := len(s.ext), s.frames
	if math.IsInf(s.nll, 1) {
		v := math.NaN()
		if zeroInf {
			v = 0
		}
		for t := range T {
			for k := range c {
				set(t, k, v)
			}
		}
		return
	}
	beta, next := make([]float64, w), make([]float64, w)
	occupancy := make([]float64, c) // log Σ α·β per class
	for t := T - 1; t >= 0; t-- {
		for k := range w {
			var b float64
			if t == T-1 {
				b = math.Inf(-1)
				if k >= w-2 {
					b = 0
				}
			} else {
				b = next[k]
				if k+1 < w {
					b = ctcLogAdd(b, next[k+1])
				}
				if k+2 < w && s.skips(k+2) {
					b = ctcLogAdd(b, next[k+2])
				}
			}
			beta[k] = b + lp(t, s.ext[k])
		}
		for k := range occupancy {
			occupancy[k] = math.Inf(-1)
		}
		for k := range w {
			occupancy[s.ext[k]] = ctcLogAdd(occupancy[s.ext[k]], s.alpha[t*w+k]+beta[k])
		}
		for k := range c {
			l := lp(t, k)
			v := math.Exp(l)
			// A class no path reaches contributes nothing, even where
			// lp is −∞ (PyTorch's −∞ + ∞ would give NaN there).
			if !math.IsInf(occupancy[k], -1) {
				v -= math.Exp(occupancy[k] + s.nll - l)
			}
			set(t, k, v*g)
		}
		beta, next = next, beta
	}
}

// ctcLogAdd returns log(exp(a) + exp(b)) without overflow; −∞ is the
// identity.
func ctcLogAdd(a, b float64) float64 {
	if math.IsInf(a, -1) {
		return b
	}
	if math.IsInf(b, -1) {
		return a
	}
	if a < b {
		a, b = b, a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// ctcUpload returns vals as a tensor of dtype on dev.
func ctcUpload(op string, dev Device, vals []float64, shape []int, dtype DType) *Tensor {
	raw := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(raw[8*i:], math.Float64bits(v))
	}
	t := fromBytes(op, dev, Float64, shape, raw)
	if dtype == Float64 {
		return t
	}
	out := rawCast(op, t, dtype)
	t.Release()
	return out
}
