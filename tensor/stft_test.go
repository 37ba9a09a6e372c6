package tensor_test

import (
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

func stftCase(cfg tensor.STFTConfig) signalFunc {
	return func(in map[string]*tensor.Tensor) *tensor.Tensor { return tensor.STFT(in["x"], in["window"], cfg) }
}

func istftCase(cfg tensor.STFTConfig) signalFunc {
	return func(in map[string]*tensor.Tensor) *tensor.Tensor { return tensor.ISTFT(in["x"], in["window"], cfg) }
}

var signalSTFTFixtures = map[string]signalFunc{
	"stft center reflect":    stftCase(tensor.STFTConfig{NFFT: 16, HopLength: 4}),
	"stft batched no center": stftCase(tensor.STFTConfig{NFFT: 16, HopLength: 5, NoCenter: true}),
	"stft short window normalized": stftCase(tensor.STFTConfig{NFFT: 16, HopLength: 3, WinLength: 12,
		Normalized: true}),
	"stft two-sided":       stftCase(tensor.STFTConfig{NFFT: 8, HopLength: 2, TwoSided: true}),
	"stft constant pad":    stftCase(tensor.STFTConfig{NFFT: 10, HopLength: 4, PadMode: "constant"}),
	"stft odd n_fft":       stftCase(tensor.STFTConfig{NFFT: 9, HopLength: 3}),
	"istft center":         istftCase(tensor.STFTConfig{NFFT: 16, HopLength: 4}),
	"istft batched length": istftCase(tensor.STFTConfig{NFFT: 16, HopLength: 4, Length: 47}),
	"istft length beyond":  istftCase(tensor.STFTConfig{NFFT: 16, HopLength: 4, Length: 70}),
	"istft short window normalized": istftCase(tensor.STFTConfig{NFFT: 16, HopLength: 3, WinLength: 12,
		Normalized: true}),
	"istft no center": istftCase(tensor.STFTConfig{NFFT: 16, HopLength: 4, NoCenter: true}),
}

func TestSTFTFixtures(t *testing.T) { signalRunFixtures(t, signalSTFTFixtures) }

func TestSTFTGradients(t *testing.T) {
	hann := func(n int) func(dev tensor.Device) *tensor.Tensor {
		return func(dev tensor.Device) *tensor.Tensor {
			return tensor.Linspace(dev, 0, 1, n).To(tensor.Float64).MulScalar(3.14159).Sin().Square().AddScalar(0.1)
		}
	}
	runGradCases(t, []gradCase{
		{"stft", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.STFT(in[0], in[1], tensor.STFTConfig{NFFT: 8, HopLength: 3})
		}, nnInputs(nnRand(1, 2, 20), hann(8))},
		{"stft two-sided short window", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.STFT(in[0], in[1], tensor.STFTConfig{NFFT: 6, HopLength: 2, WinLength: 5, TwoSided: true,
				NoCenter: true, Normalized: true})
		}, nnInputs(nnRand(2, 15), hann(5))},
		{"istft", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.ISTFT(in[0], in[1], tensor.STFTConfig{NFFT: 8, HopLength: 2, Length: 13})
		}, nnInputs(nnRand(3, 5, 7, 2), hann(8))},
		{"istft no center normalized", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.ISTFT(in[0], in[1], tensor.STFTConfig{NFFT: 6, HopLength: 3, NoCenter: true, Normalized: true})
		}, nnInputs(nnRand(4, 2, 4, 4, 2), hann(6))},
	})
}

func TestSTFTRoundTrip(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := randFloat64(dev, 11, -1, 1, 3, 100)
		window := tensor.Ones(dev, 32).To(tensor.Float64)
		for _, cfg := range []tensor.STFTConfig{
			{NFFT: 32, HopLength: 8, Length: 100},
			{NFFT: 32, WinLength: 30, Length: 100, Normalized: true},
			{NFFT: 32, HopLength: 8, TwoSided: true, Length: 100},
		} {
			wl := cfg.WinLength
			if wl == 0 {
				wl = cfg.NFFT
			}
			w := window.Narrow(0, 0, wl)
			back := tensor.ISTFT(tensor.STFT(x, w, cfg), w, cfg)
			if !back.AllClose(x, 1e-10, 1e-10) {
				t.Errorf("%+v: ISTFT(STFT(x)) differs from x", cfg)
			}
		}
	})
}

func TestSTFTBadInputs(t *testing.T) {
	sig := func(d tensor.Device) *tensor.Tensor { return tensor.Zeros(d, 2, 40) }
	nnRunBadInputs(t, []nnBadCase{
		{"rank 3", func(d tensor.Device) { tensor.STFT(tensor.Zeros(d, 1, 2, 40), nil, tensor.STFTConfig{NFFT: 8}) },
			tensor.ErrShape, "tensor.STFT: input [1 2 40] must be [L] or [B, L]"},
		{"no n_fft", func(d tensor.Device) { tensor.STFT(sig(d), nil, tensor.STFTConfig{}) },
			tensor.ErrArgument, "NFFT = 0"},
		{"window too long", func(d tensor.Device) { tensor.STFT(sig(d), nil, tensor.STFTConfig{NFFT: 8, WinLength: 9}) },
			tensor.ErrArgument, "WinLength = 9"},
		{"window shape", func(d tensor.Device) { tensor.STFT(sig(d), tensor.Ones(d, 7), tensor.STFTConfig{NFFT: 8}) },
			tensor.ErrShape, "window [7] must be 1-D of WinLength 8"},
		{"short signal", func(d tensor.Device) {
			tensor.STFT(tensor.Zeros(d, 5), nil, tensor.STFTConfig{NFFT: 8, NoCenter: true})
		}, tensor.ErrArgument, "shorter than NFFT = 8"},
		{"bad pad mode", func(d tensor.Device) { tensor.STFT(sig(d), nil, tensor.STFTConfig{NFFT: 8, PadMode: "wrap"}) },
			tensor.ErrArgument, "unknown PadMode \"wrap\""},
		{"integer signal", func(d tensor.Device) {
			tensor.STFT(tensor.ZerosOf(d, tensor.Int64, 40), nil, tensor.STFTConfig{NFFT: 8})
		}, tensor.ErrDType, "int64"},
		{"istft frequencies", func(d tensor.Device) { tensor.ISTFT(tensor.Zeros(d, 6, 5, 2), nil, tensor.STFTConfig{NFFT: 8}) },
			tensor.ErrShape, "NFFT = 8 needs 5"},
		{"istft not complex", func(d tensor.Device) { tensor.ISTFT(tensor.Zeros(d, 5, 5), nil, tensor.STFTConfig{NFFT: 8}) },
			tensor.ErrShape, "must be [B, F, T, 2] or [F, T, 2]"},
		{"istft envelope", func(d tensor.Device) {
			tensor.ISTFT(tensor.Zeros(d, 5, 4, 2), tensor.Zeros(d, 8), tensor.STFTConfig{NFFT: 8, HopLength: 2})
		}, tensor.ErrArgument, "envelope"},
	})
}
