package metrics_test

import (
	"fmt"

	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/tensor"
)

// An evaluation loop feeds each batch to its metrics; batches of different
// sizes aggregate exactly, and Values gives the multi-valued ones by name.
func Example() {
	dev := tensor.CPU()
	loss := metrics.NewLoss()
	acc := metrics.NewAccuracy()
	f1 := metrics.NewF1(metrics.Multiclass, metrics.Macro)
	batches := []struct {
		logits []float32
		labels []int64
		loss   float64
	}{
		{[]float32{2, 0, 0, 0, 1, 3, 0, 2, 1}, []int64{0, 2, 1}, 0.5},
		{[]float32{0, 0, 1}, []int64{1}, 1.3},
	}
	for _, b := range batches {
		out := tensor.FromFloat32s(dev, b.logits, len(b.labels), 3)
		tgt := tensor.FromInt64s(dev, b.labels, len(b.labels))
		for _, m := range []metrics.Metric{acc, f1} {
			if err := m.Update(out, tgt); err != nil {
				fmt.Println(err)
			}
		}
		_ = loss.UpdateLoss(b.loss, len(b.labels))
	}
	fmt.Printf("%s %.3f\n", loss.Name(), loss.Value())
	fmt.Printf("%s %.3f\n", acc.Name(), acc.Value())
	v := f1.Values()
	fmt.Printf("precision %.3f recall %.3f f1 %.3f\n", v["precision_macro"], v["recall_macro"], v["f1_macro"])

	wer := metrics.NewWER()
	_ = wer.UpdateText([]string{"the cat sat"}, []string{"the cat sat down"})
	fmt.Printf("%s %.2f\n", wer.Name(), wer.Value())
	// Output:
	// loss 0.700
	// accuracy 0.750
	// precision 0.833 recall 0.833 f1 0.778
	// wer 0.25
}

// Two data-parallel processes each feed their shard of the batches to
// their own metric; summing the States (what an all-reduce does) and
// setting the sum reports the accuracy over all the batches, here
// (2 + 1) / (3 + 1), not the mean of the processes' 2/3 and 1/1.
func ExampleSummable() {
	dev := tensor.CPU()
	shards := []struct {
		logits []float32
		labels []int64
	}{
		{[]float32{2, 0, 0, 1, 0, 1}, []int64{0, 0, 1}},
		{[]float32{0, 3}, []int64{1}},
	}
	sum := make([]float64, len(metrics.NewAccuracy().State()))
	for _, s := range shards {
		acc := metrics.NewAccuracy() // one per process
		out := tensor.FromFloat32s(dev, s.logits, len(s.labels), 2)
		if err := acc.Update(out, tensor.FromInt64s(dev, s.labels, len(s.labels))); err != nil {
			fmt.Println(err)
		}
		for i, v := range acc.State() {
			sum[i] += v
		}
	}
	global := metrics.NewAccuracy()
	if err := global.SetState(sum); err != nil {
		fmt.Println(err)
	}
	fmt.Printf("%s %.2f\n", global.Name(), global.Value())
	// Output:
	// accuracy 0.75
}
