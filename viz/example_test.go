package viz_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
	"github.com/kiln-ml/kiln/viz"
)

// A line chart of your own data: one series per y slice. In a notebook,
// make the chart the cell's last expression; elsewhere write its HTML.
func ExampleLine() {
	xs := []float64{0, 1, 2, 3, 4}
	chart := viz.Line(xs, []float64{0, 1, 4, 9, 16}, []float64{0, 1, 8, 27, 64}).
		SetNames("x²", "x³").SetTitle("powers").SetLabels("x", "y")
	fmt.Println(chart)

	option, _ := chart.Option() // what a page passes to echarts' setOption
	fmt.Println(strings.Contains(string(option), `"data":[[0,0],[1,1],[2,4],[3,9],[4,16]]`))
	fmt.Println(chart.MIME()["image/svg+xml"] != "") // the static rendering
	// Output:
	// chart "powers": 2 series (x², x³), 10 points
	// true
	// true
}

// The histogram of a tensor's values.
func ExampleHistogram() {
	dev := tensor.CPU()
	dev.Seed(1)
	weights := tensor.Randn(dev, 64, 64)
	h := viz.HistogramBins(weights, 20)
	fmt.Println(h)
	fmt.Println(h.Title())
	// Output:
	// chart "float32 [64 64]": 20 bars
	// float32 [64 64]
}

// The training curves of a run directory (the events.jsonl that
// train.Supervised.Fit writes when Config.RunDir is set): one chart per
// metric, the learning rate, and whatever else the run logged.
func ExampleRunCharts() {
	tmp, _ := os.MkdirTemp("", "viz-example")
	defer os.RemoveAll(tmp)
	dir := writeExampleRun(tmp)

	board, err := viz.RunCharts(dir, viz.CurveOptions{Smoothing: 0.6})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(board)
	// Output:
	// run
	// chart "loss": 4 series (train (raw), train, train (epoch), valid), 44 points
	// chart "learning rate": 1 series (lr), 20 points
}

// writeExampleRun writes a small run's event log into dir/run, as Fit
// would, and returns the run directory.
func writeExampleRun(dir string) string {
	run := filepath.Join(dir, "run")
	os.MkdirAll(run, 0o755)
	f, _ := os.Create(filepath.Join(run, train.EventsFile))
	defer f.Close()
	enc := json.NewEncoder(f)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	enc.Encode(train.Event{Version: train.EventLogVersion, Kind: train.EventStart, Time: t0})
	for step := 1; step <= 20; step++ {
		loss := 2 / float64(step)
		enc.Encode(train.Event{Kind: train.EventStep, Time: t0, Epoch: (step-1)/10 + 1, Step: step, Split: "train",
			LR: 0.1, Metrics: train.Values{"loss": loss}})
		if step%10 == 0 {
			enc.Encode(train.Event{Kind: train.EventEpoch, Time: t0, Epoch: step / 10, Step: step, Split: "train",
				Metrics: train.Values{"loss": loss}})
			enc.Encode(train.Event{Kind: train.EventEpoch, Time: t0, Epoch: step / 10, Step: step, Split: "valid",
				Metrics: train.Values{"loss": loss * 1.2}})
		}
	}
	enc.Encode(train.Event{Kind: train.EventEnd, Time: t0, Epoch: 2, Step: 20, Reason: train.StopCompleted})
	return run
}
