package tensor

// STFTConfig configures STFT and ISTFT. Its zero value, with NFFT set, is
// PyTorch's defaults: hop NFFT/4, window length NFFT, frames centred with
// reflect padding, no normalisation, one-sided spectra.
type STFTConfig struct {
	// NFFT is the length of each frame's Fourier transform (required).
	NFFT int `json:"n_fft"`
	// HopLength is the distance between frames; 0 means NFFT/4.
	HopLength int `json:"hop_length,omitempty"`
	// WinLength is the window's length, at most NFFT (the window is
	// zero-padded on both sides to NFFT); 0 means NFFT.
	WinLength int `json:"win_length,omitempty"`
	// NoCenter frames the signal as given (center=False); by default it is
	// padded by NFFT/2 on both sides so that frame t is centred on sample
	// t·HopLength.
	NoCenter bool `json:"no_center,omitempty"`
	// PadMode is the padding used to centre frames: "reflect" (the
	// default, also ""), "constant" (zeros), "replicate" or "circular".
	// ISTFT ignores it.
	PadMode string `json:"pad_mode,omitempty"`
	// Normalized scales each frame's transform by 1/√NFFT (norm "ortho").
	Normalized bool `json:"normalized,omitempty"`
	// TwoSided keeps all NFFT frequencies (onesided=False); by default
	// STFT keeps the NFFT/2+1 non-negative ones and ISTFT expects them.
	TwoSided bool `json:"two_sided,omitempty"`
	// Length is ISTFT's output length (trimmed or zero-padded); 0 keeps
	// every sample the frames cover. STFT ignores it.
	Length int `json:"length,omitempty"`
}

// stftSetup holds the checked geometry shared by STFT and ISTFT.
type stftSetup struct {
	nfft, hop, win int
	norm           string
	window         *Tensor // zero-padded to nfft, in the signal's dtype
}

func stftPrepare(op string, cfg STFTConfig) stftSetup {
	s := stftSetup{nfft: cfg.NFFT, hop: cfg.HopLength, win: cfg.WinLength}
	if s.nfft <= 0 {
		fail(op, ErrArgument, "NFFT = %d: the frame length must be positive", cfg.NFFT)
	}
	if s.hop == 0 {
		s.hop = s.nfft / 4
	}
	if s.hop <= 0 {
		fail(op, ErrArgument, "HopLength = %d (NFFT/4 when 0): the hop must be positive", s.hop)
	}
	if s.win == 0 {
		s.win = s.nfft
	}
	if s.win < 0 || s.win > s.nfft {
		fail(op, ErrArgument, "WinLength = %d must be in [1, NFFT = %d]", s.win, s.nfft)
	}
	if cfg.Normalized {
		s.norm = "ortho"
	}
	return s
}

// stftWindow returns the window padded to nfft (ones when window is nil),
// checking its shape and dtype.
func (s *stftSetup) stftWindow(op string, window *Tensor, x *Tensor) {
	if window == nil {
		s.window = rawFull(op, x.dev.Inner(), x.dtype, []int{s.win}, 1)
	} else {
		sameDevice(op, x, window)
		if len(window.shape) != 1 || window.shape[0] != s.win {
			fail(op, ErrShape, "window %s must be 1-D of WinLength %d", shapeString(window.shape), s.win)
		}
		if !window.dtype.IsFloat() {
			fail(op, ErrDType, "window is %s; it must be floating point", window.dtype)
		}
		s.window = window
		if window.dtype != x.dtype {
			s.window = window.To(x.dtype)
		}
	}
	if left := (s.nfft - s.win) / 2; s.win < s.nfft {
		s.window = s.window.Pad([]int{left, s.nfft - s.win - left}, "constant", 0)
	}
}

// stftFrameIndex returns the Int64 index [batch, frames·nfft] of the
// samples of every frame: frame f, offset k reads sample f·hop + k.
func stftFrameIndex(op string, dev Device, batch, frames, nfft, hop int) *Tensor {
	idx := make([]int64, frames*nfft)
	for f := range frames {
		for k := range nfft {
			idx[f*nfft+k] = int64(f*hop + k)
		}
	}
	t := FromInt64s(dev.Inner(), idx, 1, frames*nfft)
	return t.Expand(batch, frames*nfft)
}

// STFT returns the short-time Fourier transform of x ([L] or [B, L], real),
// as torch.stft with return_complex=True viewed as real: a tensor
// [B, F, T, 2] ([F, T, 2] for 1-D x) of F = NFFT/2+1 frequencies (NFFT with
// TwoSided) and T frames, holding (real, imaginary). Frame t is the signal
// from t·HopLength (after centring, see STFTConfig) multiplied by window
// (nil: a rectangular window of WinLength ones; its dtype is converted to
// x's), zero-padded to NFFT, then transformed. It is composed of Pad,
// Gather, Mul and RFFT (FFT when TwoSided), so gradients flow to x and to
// window.
//
// It panics with ErrShape for x of rank other than 1 or 2 or a window that
// is not 1-D of WinLength, ErrDType for non-float x or window, and
// ErrArgument for non-positive sizes, WinLength > NFFT, a signal shorter
// than NFFT (after centring), reflect padding of NFFT/2 or more on a
// shorter signal, or an unknown PadMode.
func STFT(x, window *Tensor, cfg STFTConfig) *Tensor {
	const op = "STFT"
	x.live(op)
	if r := len(x.shape); r != 1 && r != 2 {
		fail(op, ErrShape, "input %s must be [L] or [B, L]", shapeString(x.shape))
	}
	if !x.dtype.IsFloat() {
		fail(op, ErrDType, "input is %s; it must be floating point", x.dtype)
	}
	s := stftPrepare(op, cfg)
	mode := cfg.PadMode
	if mode == "" {
		mode = "reflect"
	}
	switch mode {
	case "reflect", "constant", "replicate", "circular":
	default:
		fail(op, ErrArgument, "unknown PadMode %q (want reflect, constant, replicate or circular)", cfg.PadMode)
	}
	s.stftWindow(op, window, x)
	xb := x
	if len(x.shape) == 1 {
		xb = x.Unsqueeze(0)
	}
	if !cfg.NoCenter {
		p := s.nfft / 2
		if mode == "reflect" && p >= xb.shape[1] {
			fail(op, ErrArgument, "reflect padding of %d (NFFT/2) needs a signal longer than that, got %s", p, shapeString(x.shape))
		}
		xb = xb.Pad([]int{p, p}, mode, 0)
	}
	b, l := xb.shape[0], xb.shape[1]
	if l < s.nfft {
		fail(op, ErrArgument, "signal %s is shorter than NFFT = %d", shapeString(x.shape), s.nfft)
	}
	frames := 1 + (l-s.nfft)/s.hop
	idx := stftFrameIndex(op, x.dev, b, frames, s.nfft, s.hop)
	fr := xb.Gather(1, idx).Reshape(b, frames, s.nfft).Mul(s.window)
	var spec *Tensor
	if cfg.TwoSided {
		spec = FFT(fr.Unsqueeze(-1).Pad([]int{0, 1}, "constant", 0), 0, -1, s.norm)
	} else {
		spec = RFFT(fr, 0, -1, s.norm)
	}
	out := spec.Permute(0, 2, 1, 3)
	if len(x.shape) == 1 {
		out = out.Squeeze(0)
	}
	return out
}

// ISTFT inverts STFT, as torch.istft with a real result: x is a spectrogram
// [B, F, T, 2] or [F, T, 2] in STFT's layout (F = NFFT/2+1, or NFFT with
// TwoSided, in which case the real part of each frame's inverse transform
// is used), and the result is [B, L] or [L]. Each frame is transformed back,
// multiplied by window (nil: rectangular) and overlap-added; the sum is
// divided by the overlap-added squared window (the envelope), the centring
// padding is removed, and the signal is trimmed or zero-padded to Length
// when it is set. Composed of IRFFT, Mul, ScatterAdd and Div, so gradients
// flow to x and to window.
//
// It panics with ErrShape for a spectrogram of the wrong rank or frequency
// count or a bad window, ErrDType for non-float input, and ErrArgument for
// bad sizes or an envelope below 1e-11 somewhere in the output (a window
// that does not overlap enough, as PyTorch's NOLA check; this check reads
// the envelope back to the host).
func ISTFT(x, window *Tensor, cfg STFTConfig) *Tensor {
	const op = "ISTFT"
	x.live(op)
	r := len(x.shape)
	if (r != 3 && r != 4) || x.shape[r-1] != 2 {
		fail(op, ErrShape, "spectrogram %s must be [B, F, T, 2] or [F, T, 2]", shapeString(x.shape))
	}
	if !x.dtype.IsFloat() {
		fail(op, ErrDType, "spectrogram is %s; it must be floating point", x.dtype)
	}
	s := stftPrepare(op, cfg)
	if cfg.Length < 0 {
		fail(op, ErrArgument, "Length = %d must not be negative", cfg.Length)
	}
	s.stftWindow(op, window, x)
	xb := x
	if r == 3 {
		xb = x.Unsqueeze(0)
	}
	bins := s.nfft/2 + 1
	if cfg.TwoSided {
		bins = s.nfft
	}
	if xb.shape[1] != bins {
		fail(op, ErrShape, "spectrogram %s has %d frequencies; NFFT = %d needs %d", shapeString(x.shape), xb.shape[1], s.nfft, bins)
	}
	b, frames := xb.shape[0], xb.shape[2]
	if frames == 0 {
		fail(op, ErrShape, "spectrogram %s has no frames", shapeString(x.shape))
	}
	fr := xb.Permute(0, 2, 1, 3)
	var y *Tensor
	if cfg.TwoSided {
		y = IFFT(fr, 0, -1, s.norm).Select(-1, 0)
	} else {
		y = IRFFT(fr, s.nfft, -1, s.norm)
	}
	y = y.Mul(s.window).Reshape(b, frames*s.nfft)
	total := s.nfft + s.hop*(frames-1)
	idx := stftFrameIndex(op, x.dev, b, frames, s.nfft, s.hop)
	sig := ZerosOf(x.dev.Inner(), x.dtype, b, total).ScatterAdd(1, idx, y)
	wsq := s.window.Square().Unsqueeze(0).Expand(frames, s.nfft).Reshape(1, frames*s.nfft)
	env := ZerosOf(x.dev.Inner(), x.dtype, 1, total).ScatterAdd(1, idx.Narrow(0, 0, 1), wsq)
	start, end := 0, total
	if !cfg.NoCenter {
		start = s.nfft / 2
		end = total - s.nfft/2
	}
	if cfg.Length > 0 {
		end = start + cfg.Length
	}
	stop := min(end, total)
	if stop > start {
		sig = sig.Narrow(1, start, stop-start)
		env = env.Narrow(1, start, stop-start)
		if lowest := env.Abs().Min().Item(); !(lowest >= 1e-11) {
			fail(op, ErrArgument, "the window's overlap-add envelope falls to %g (below 1e-11): frames do not overlap enough "+
				"for NFFT %d, hop %d, window length %d", lowest, s.nfft, s.hop, s.win)
		}
		sig = sig.Div(env)
	} else {
		sig = sig.Narrow(1, 0, 0)
	}
	if end > stop {
		sig = sig.Pad([]int{0, end - max(stop, start)}, "constant", 0)
	}
	if r == 3 {
		sig = sig.Squeeze(0)
	}
	return sig
}
