//go:build !js && !wasip1

package main

// The page's test: the command is built for GOOS=js GOARCH=wasm with the go
// command, served with its page from an httptest server, and opened in
// Debian's headless Chromium (internal/chromium; KILN_CHROMIUM overrides
// the path, and the test skips without one). It waits for training in the
// tab to end and checks that the loss fell, that the network now computes
// XOR, and that the tab computed what the native build computes.

import (
	"context"
	"encoding/json"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kiln-ml/kiln/internal/chromium"
)

// xorTargets are XOR's answers for (0,0), (0,1), (1,0), (1,1).
var xorTargets = []float64{0, 1, 1, 0}

// checkTrained fails t unless res holds n losses whose last is under a tenth
// of the first and outputs that round to XOR's answers.
func checkTrained(t *testing.T, where string, res result, n int) {
	t.Helper()
	if len(res.Losses) != n {
		t.Fatalf("%s: %d losses reported, want %d", where, len(res.Losses), n)
	}
	first, last := res.Losses[0], res.Losses[n-1]
	if !(last < 0.1*first) {
		t.Errorf("%s: loss went from %.4f to %.4f, want the last under a tenth of the first", where, first, last)
	}
	if len(res.Outputs) != 4 {
		t.Fatalf("%s: %d outputs, want 4", where, len(res.Outputs))
	}
	for i, p := range res.Outputs {
		if math.Round(p) != xorTargets[i] {
			t.Errorf("%s: output %d (x = %d,%d) is %.4f, want it to round to %v", where, i, i>>1, i&1, p, xorTargets[i])
		}
	}
}

func TestXORTrainsNatively(t *testing.T) {
	calls := 0
	res := train(steps, func(step int, loss float64) {
		if step != calls {
			t.Fatalf("report got step %d, want %d", step, calls)
		}
		calls++
	})
	checkTrained(t, "native", res, steps)
}

// pageState is what the test reads back from the tab.
type pageState struct {
	Error    *string   `json:"error"`
	Finished bool      `json:"finished"`
	Losses   []float64 `json:"losses"` // as kilnXor.step received them
	Result   *result   `json:"result"` // as kilnXor.done received it
	Status   string    `json:"status"`
	Rows     int       `json:"rows"`   // rows of the outputs table
	Points   int       `json:"points"` // points of the loss curve
}

const stateJS = `JSON.stringify({error: window.kilnXor ? kilnXor.error : "no kilnXor object",
finished: !!(window.kilnXor && kilnXor.finished), losses: window.kilnXor ? kilnXor.losses : [],
result: window.kilnXor ? kilnXor.result : null, status: document.getElementById("status").textContent,
rows: document.querySelectorAll("#outputs tbody tr").length,
points: (document.getElementById("loss-line").getAttribute("points").match(/,/g) || []).length})`

func TestXORTrainsInBrowser(t *testing.T) {
	if path, ok := chromium.Path(); !ok {
		t.Skipf("no chromium at %s (apt-get install chromium, or set KILN_CHROMIUM): browser test skipped", path)
	}
	dir := t.TempDir()
	if err := buildSite(dir); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, "xor.wasm")); err != nil || st.Size() == 0 {
		t.Fatalf("buildSite left no xor.wasm: %v", err)
	}
	srv := httptest.NewServer(siteHandler(dir))
	defer srv.Close()

	ctx := chromium.New(t, 1000, 800)
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	ended := `window.kilnXor && (kilnXor.finished || kilnXor.error !== null)`
	_, pollErr := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](ended,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(3*time.Minute)))
	j, err := chromedp.Run(ctx, chromedp.Evaluate[string](stateJS))
	if err != nil {
		t.Fatalf("reading the page: %v (waiting for the end: %v)", err, pollErr)
	}
	var st pageState
	if err := json.Unmarshal([]byte(j), &st); err != nil {
		t.Fatalf("%v: %s", err, j)
	}
	if pollErr != nil {
		t.Fatalf("training in the tab did not end: %v; the page says %q after %d steps", pollErr, st.Status, len(st.Losses))
	}
	if st.Error != nil {
		t.Fatalf("the page reports an error: %s", *st.Error)
	}
	if !st.Finished || st.Result == nil {
		t.Fatalf("the page finished=%v without a result; it says %q", st.Finished, st.Status)
	}
	checkTrained(t, "browser", *st.Result, steps)
	t.Logf("browser: loss %.4f → %.4f, outputs %.3f; the page says %q",
		st.Result.Losses[0], st.Result.Losses[steps-1], st.Result.Outputs, st.Status)

	// The page drew every step as it was reported, and the table of outputs.
	if len(st.Losses) != steps || st.Points != steps || st.Rows != 4 {
		t.Errorf("the page shows %d step reports, %d curve points and %d output rows, want %d, %d and 4",
			len(st.Losses), st.Points, st.Rows, steps, steps)
	}
	for i := range min(len(st.Losses), steps) {
		if st.Losses[i] != st.Result.Losses[i] {
			t.Fatalf("step %d: the page was shown loss %v, the result says %v", i, st.Losses[i], st.Result.Losses[i])
		}
	}

	// The wasm build runs the portable kernels, the native one may run
	// assembly with other rounding: the same run to float32 accuracy.
	native := train(steps, func(int, float64) {})
	for i, l := range native.Losses {
		if d := math.Abs(l - st.Result.Losses[i]); d > 1e-4*math.Max(1, l) {
			t.Fatalf("step %d: the browser's loss %.7f differs from the native build's %.7f", i, st.Result.Losses[i], l)
		}
	}
}
