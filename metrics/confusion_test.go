package metrics_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/tensor"
)

func TestConfusionMatrixTable(t *testing.T) {
	dev := tensor.CPU()
	m := metrics.NewConfusionMatrix(3)
	// true 0 0 1 1 1 2; predicted 0 1 1 1 0 1: class 2 is never predicted
	for _, b := range [][2][]int64{{{0, 0, 1}, {0, 1, 1}}, {{1, 1, 2}, {1, 0, 1}}} {
		out := tensor.FromInt64s(dev, b[1], len(b[1])).OneHot(3).To(tensor.Float32)
		if err := m.Update(out, tensor.FromInt64s(dev, b[0], len(b[0]))); err != nil {
			t.Fatal(err)
		}
	}
	want := strings.Join([]string{
		"confusion matrix: 6 items, accuracy 0.500 (rows: true class, columns: predicted)",
		`true\pred   cat   dog bird recall`,
		"cat           1     1    0  0.500",
		"dog           1     2    0  0.667",
		"bird          0     1    0  0.000",
		"precision 0.500 0.500    -",
		"",
	}, "\n")
	if got := m.Table([]string{"cat", "dog", "bird"}); got != want {
		t.Errorf("Table:\n%s\nwant:\n%s", got, want)
	}
	if got := m.String(); !strings.Contains(got, `true\pred     0     1 2 recall`) {
		t.Errorf("String labels classes by index:\n%s", got)
	}
	if got := fmt.Sprint(m.Normalized("true")); got != "[[0.5 0.5 0] [0.3333333333333333 0.6666666666666666 0] [0 1 0]]" {
		t.Errorf("Normalized(true) = %s", got)
	}
	if got := fmt.Sprint(m.Normalized("pred")); got != "[[0.5 0.25 0] [0.5 0.5 0] [0 0.25 0]]" {
		t.Errorf("Normalized(pred) = %s", got)
	}
	if got := m.Normalized("all")[1][1]; got != 2.0/6 {
		t.Errorf("Normalized(all)[1][1] = %v", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("Normalized(\"rows\") did not panic")
		}
	}()
	m.Normalized("rows")
}
