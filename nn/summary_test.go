package nn_test

import (
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

type summaryModel struct {
	Embed  *nn.Param
	Blocks []*leaf
	Norm   norm
	Drop   *dropout
	Config struct{ Width int } // no params, no mode: not a module row
}

func newSummaryModel(dev tensor.Device) *summaryModel {
	m := &summaryModel{
		Embed: nn.NewParam(tensor.Zeros(dev, 10, 4)),
		Norm: norm{Weight: nn.NewParam(tensor.Ones(dev, 4)), Bias: nn.NewParam(tensor.Zeros(dev, 4)),
			RunningMean: nn.NewBuffer(tensor.Zeros(dev, 4)), Steps: nn.NewBuffer(tensor.FromInt64s(dev, []int64{0}))},
		Drop: &dropout{P: 0.1},
	}
	for range 2 {
		m.Blocks = append(m.Blocks, &leaf{Weight: nn.NewParam(tensor.Zeros(dev, 4, 4)), Bias: nn.NewParam(tensor.Zeros(dev, 4))})
	}
	return m
}

func TestSummary(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m := newSummaryModel(dev)
		nn.Freeze(m, "Blocks.0.**")
		s := nn.Summary(m)
		counts := []struct {
			name      string
			got, want int
		}{
			{"Trainable", s.Trainable, 40 + 20 + 8},
			{"Frozen", s.Frozen, 20},
			{"Buffers", s.Buffers, 5},
			{"Total", s.Total(), nn.NumParams(m)},
			{"root Total", s.Root.Total(), 88},
			{"Blocks subtotal", s.Root.Modules[0].Total(), 40},
			{"Blocks.0 frozen", s.Root.Modules[0].Modules[0].Frozen, 20},
			{"Norm buffers", s.Root.Modules[1].Buffers, 5},
			{"modules under the root (Blocks, Norm, Drop)", len(s.Root.Modules), 3},
			{"bytes", int(s.Bytes), 88*4 + 4*4 + 8},
		}
		for _, c := range counts {
			if c.got != c.want {
				t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
			}
		}
		mods := []struct{ got, want string }{
			{s.Root.Type, "nn_test.summaryModel"},
			{s.Root.Modules[0].Path, "Blocks"},
			{s.Root.Modules[0].Modules[1].Path, "Blocks.1"},
			{s.Root.Modules[0].Modules[1].Type, "nn_test.leaf"},
			{s.Root.Modules[0].Modules[1].Params[0].Path, "Blocks.1.Weight"},
			{s.Root.Modules[2].Type, "nn_test.dropout"},
		}
		for _, c := range mods {
			if c.got != c.want {
				t.Errorf("got %q, want %q", c.got, c.want)
			}
		}
		text := s.String()
		for _, want := range []string{
			"Module", "Param shape", "nn_test.summaryModel",
			"├─Embed", "[10 4]", "├─Blocks", "│ ├─0", "frozen", "RunningMean", "buffer",
			"└─Drop", "Trainable params: 68", "Frozen params: 20", "Total params: 88", "Buffer elements: 5",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("summary lacks %q:\n%s", want, text)
			}
		}
		if strings.Contains(text, "Config") || strings.Contains(text, "Output shape") {
			t.Errorf("summary shows a config struct or an empty output column:\n%s", text)
		}
		nn.Release(m)
	})
}

func TestSummaryOptions(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m := newSummaryModel(dev)
		s := nn.Summary(m, nn.SummaryOptions{OutputShapes: map[string][]int{"": {8, 4}, "Blocks.0": {8, 4}}, MaxDepth: 1})
		text := s.String()
		if !strings.Contains(text, "Output shape") || !strings.Contains(text, "[8 4]") {
			t.Errorf("summary lacks output shapes:\n%s", text)
		}
		if got := s.Root.Modules[0].Modules[0].OutputShape; len(got) != 2 {
			t.Errorf("Blocks.0 output shape %v", got)
		}
		if strings.Contains(text, "│ ├─0") {
			t.Errorf("MaxDepth 1 shows depth 2:\n%s", text)
		}
		if !strings.Contains(text, "Total params: 88") {
			t.Errorf("totals must count everything:\n%s", text)
		}
	})
}

func TestSummaryEdgeCases(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		cases := []struct {
			name  string
			model any
			total int
		}{
			{"nil", nil, 0},
			{"single param", nn.NewParam(tensor.Zeros(dev, 3)), 3},
			{"slice of params", []*nn.Param{nn.NewParam(tensor.Zeros(dev, 2)), nn.NewParam(tensor.Zeros(dev, 5))}, 7},
		}
		for _, c := range cases {
			s := nn.Summary(c.model)
			if s.Total() != c.total || s.String() == "" {
				t.Errorf("%s: total %d, want %d", c.name, s.Total(), c.total)
			}
		}
	})
}

func TestSummaryTypeNames(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		s := nn.Summary(&struct {
			Xl1    *nn.Param
			Layers []*leaf
		}{Xl1: newP(dev, 1), Layers: []*leaf{{Weight: newP(dev, 1)}}})
		if s.Root.Type != "struct{l1, Layers}" {
			t.Errorf("root type %q", s.Root.Type)
		}
		if got := s.Root.Modules[0].Type; got != "[]*nn_test.leaf" {
			t.Errorf("slice type %q", got)
		}
	})
}
