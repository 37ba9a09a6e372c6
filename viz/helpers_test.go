package viz

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/train"
)

// syntheticRun returns the events of a run of steps optimizer steps, a
// step event every logEvery steps and an epoch (train then valid) every
// stepsPerEpoch steps, with loss, accuracy, lr, items_per_sec and
// cpu_percent values, the valid epochs carrying a 3-class confusion
// matrix. Times advance 10 ms a step.
func syntheticRun(steps, logEvery, stepsPerEpoch int) []train.Event {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(step int) (time.Time, float64) {
		d := time.Duration(step) * 10 * time.Millisecond
		return t0.Add(d), d.Seconds()
	}
	evs := []train.Event{{Version: train.EventLogVersion, Kind: train.EventStart, Time: t0,
		Config: json.RawMessage(`{"epochs":1}`)}}
	epoch := 1
	for s := 1; s <= steps; s++ {
		tm, el := at(s)
		loss := 2*math.Exp(-float64(s)/300) + 0.1*math.Sin(float64(s))
		lr := 0.1 * math.Pow(0.5, float64(s/250))
		if s%logEvery == 0 {
			evs = append(evs, train.Event{Kind: train.EventStep, Time: tm, Elapsed: el, Epoch: epoch, Step: s, Split: "train",
				LR: lr, Metrics: train.Values{"loss": loss, "accuracy": 1 - loss/3, "items_per_sec": 6400 + float64(s%7),
					"cpu_percent": 50 + float64(s%10)}})
		}
		if s%stepsPerEpoch == 0 {
			evs = append(evs, train.Event{Kind: train.EventEpoch, Time: tm, Elapsed: el, Epoch: epoch, Step: s, Split: "train",
				LR: lr, Metrics: train.Values{"loss": loss, "accuracy": 1 - loss/3}})
			valid := train.Values{"loss": loss * 1.1, "accuracy": 1 - loss/2.5}
			for i := range 3 {
				for j := range 3 {
					n := 2.0
					if i == j {
						n = float64(20 + epoch)
					}
					valid["cm_"+string(rune('0'+i))+"_"+string(rune('0'+j))] = n
				}
			}
			evs = append(evs, train.Event{Kind: train.EventEpoch, Time: tm, Elapsed: el, Epoch: epoch, Step: s, Split: "valid",
				Metrics: valid})
			epoch++
		}
	}
	tm, el := at(steps)
	evs = append(evs, train.Event{Kind: train.EventEnd, Time: tm, Elapsed: el, Epoch: epoch - 1, Step: steps,
		Reason: train.StopCompleted})
	return evs
}

// writeRun writes events as dir/events.jsonl, the way Fit does.
func writeRun(t testing.TB, dir string, events []train.Event) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, train.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(append(b, '\n'))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// optionOf decodes a chart's option.
func optionOf(t testing.TB, c *Chart) map[string]any {
	t.Helper()
	b, err := c.Option()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// seriesLengths returns the number of data points of each series of an
// option, and their names.
func seriesLengths(t testing.TB, opt map[string]any) (names []string, lengths []int) {
	t.Helper()
	list, _ := opt["series"].([]any)
	for _, s := range list {
		m := s.(map[string]any)
		name, _ := m["name"].(string)
		data, _ := m["data"].([]any)
		names = append(names, name)
		lengths = append(lengths, len(data))
	}
	return names, lengths
}

// withoutLibrary runs f as if the binary had been built without the chart
// library.
func withoutLibrary(f func()) {
	saved := library
	library = func() (string, string) { return "", "" }
	defer func() { library = saved }()
	f()
}

func cpuInfo() backends.DeviceInfo {
	return backends.DeviceInfo{Kind: "cpu", Name: "Test CPU", MemoryBytes: 16 << 30, Cores: 8}
}

func gpuInfo() backends.DeviceInfo {
	return backends.DeviceInfo{Kind: "cuda", Index: 0, Name: "H100 & co", MemoryBytes: 80 << 30, Cores: 132, Detail: "sm_90"}
}
