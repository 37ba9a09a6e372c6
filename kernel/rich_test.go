package kernel_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/kernel"
	"github.com/kiln-ml/kiln/kernel/display"
)

func TestRichResults(t *testing.T) {
	s := newSession(t, kernel.Options{})
	run(t, s, "type MLP struct {\n\tHidden, Out *nn.Linear\n}\n"+
		"func (m *MLP) Forward(x *tensor.Tensor) *tensor.Tensor { return m.Out.Forward(m.Hidden.Forward(x).Relu()) }\n"+
		"type Plain struct {\n\tA, B *nn.Linear\n}")
	tests := []struct {
		name, cell string
		want       []string // in the text/html form
		not        []string
	}{
		{"small tensor: values and statistics", "tensor.FromFloat32s(tensor.CPU(), []float32{1, 2, 3, 4, 5, 6}, 2, 3)",
			[]string{"Tensor float32 [2 3]", "Statistics", ">3.5<", ">1.70783<"}, []string{"<script"}},
		{"tensor with a NaN", "tensor.FromFloat64s(tensor.CPU(), []float64{1, math.NaN(), 3}, 3)",
			[]string{">2<", ">1<"}, nil},
		{"large tensor: a histogram", "tensor.Ones(tensor.CPU(), 10, 10)",
			[]string{"Statistics", "<script", ">100<"}, nil},
		{"compiled model: a module tree", "nn.NewLinear(tensor.CPU(), 4, 3)",
			[]string{"kiln-tree", "15 params"}, nil},
		{"sequential: a module tree", "nn.NewSequential(nn.NewLinear(tensor.CPU(), 4, 3), nn.ReLU{})",
			[]string{"kiln-tree", "15 params"}, nil},
		{"cell-declared module", "&MLP{Hidden: nn.NewLinear(tensor.CPU(), 4, 8), Out: nn.NewLinear(tensor.CPU(), 8, 3)}",
			[]string{"kiln-tree", "Hidden", "Out", "67"}, nil},
		{"cell-declared struct holding parameters", "Plain{A: nn.NewLinear(tensor.CPU(), 2, 2), B: nn.NewLinear(tensor.CPU(), 2, 1)}",
			[]string{"kiln-tree", "9"}, nil},
		{"device: a table", "tensor.CPU()", []string{"Devices", ">cpu<"}, nil},
		{"chart", "viz.Line(nil, []float64{1, 2, 3})", []string{"kiln-viz", "<script"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.Execute(context.Background(), tc.cell, nil)
			if err != nil {
				t.Fatal(describe(err))
			}
			if res == nil {
				t.Fatal("no result")
			}
			html, _ := res.Data[display.MIMETypeHTML].(string)
			for _, w := range tc.want {
				if !strings.Contains(html, w) {
					t.Errorf("text/html lacks %q:\n%.3000s", w, html)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(html, w) {
					t.Errorf("text/html has %q", w)
				}
			}
			if text, _ := res.Data[display.MIMETypeText].(string); text == "" {
				t.Error("no text/plain")
			}
		})
	}
}
