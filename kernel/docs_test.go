package kernel_test

import (
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/kernel"
)

func TestInspectShowsDocComments(t *testing.T) {
	s := newSession(t, kernel.Options{})
	run(t, s, "lin := nn.NewLinear(tensor.CPU(), 4, 2)\nvar tt *tensor.Tensor")
	for _, c := range []struct {
		code string
		want []string
	}{
		{"nn.NewLinear", []string{"func NewLinear(dev tensor.Device, in, out int", "NewLinear returns"}},
		{"tensor.Tensor", []string{"type Tensor struct", "Tensor is"}},
		{"lin.Forward", []string{"func (l *Linear) Forward(", "Forward"}},
		{"tt.Matmul", []string{"func (t *Tensor) Matmul(", "Matmul"}},
		{"fmt.Println", []string{"func Println(a ...any) (n int, err error)", "Println formats"}},
		{"strings.Builder", []string{"type Builder struct", "A Builder is used to efficiently build a string"}},
		{"nn", []string{"package nn", "github.com/kiln-ml/kiln/nn"}},
		{"optim.AdamWConfig", []string{"type AdamWConfig struct", "LR"}},
	} {
		text, ok := s.Inspect(c.code, len([]rune(c.code)))
		if !ok {
			t.Errorf("inspect %s: nothing found", c.code)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("inspect %s lacks %q:\n%s", c.code, w, text)
			}
		}
	}
}

func TestCompleteLayerConstructors(t *testing.T) {
	s := newSession(t, kernel.Options{})
	c := s.Complete("nn.", 3)
	got := strings.Join(c.Matches, " ")
	for _, want := range []string{"NewLinear", "NewConv2d", "NewSequential", "NewLSTM", "CrossEntropy"} {
		if !strings.Contains(got, want) {
			t.Errorf("nn. completion lacks %s: %s", want, got)
		}
	}
}

func TestCompleteCellDeclaredTypes(t *testing.T) {
	s := newSession(t, kernel.Options{})
	run(t, s, "type Net struct {\n\tL1 *nn.Linear\n\tSteps int\n}\nfunc (n *Net) Predict(x *tensor.Tensor) *tensor.Tensor { return n.L1.Forward(x) }\nnet := &Net{L1: nn.NewLinear(tensor.CPU(), 2, 2)}")
	for _, c := range []struct{ code, want string }{
		{"net.", "Predict"},
		{"net.", "Steps"},
		{"net.L1.", "Forward"},
	} {
		got := strings.Join(s.Complete(c.code, len(c.code)).Matches, " ")
		if !strings.Contains(got, c.want) {
			t.Errorf("completion of %q lacks %s: %s", c.code, c.want, got)
		}
	}
}
