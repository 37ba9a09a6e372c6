package kerneltest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/internal/chromium"

	"github.com/chromedp/chromedp"
)

// displayRecord is one display message as kernel/testdata/kiln_record.py
// records it.
type displayRecord struct {
	Type      string  `json:"type"`
	Cell      int     `json:"cell"`
	DisplayID string  `json:"display_id"`
	Sent      string  `json:"sent"` // the kernel's header date
	Received  float64 `json:"received"`
	Bytes     int     `json:"bytes"`
	HTML      string  `json:"html"`
	Metadata  struct {
		Dashboard *struct {
			Seq   int  `json:"seq"`
			Final bool `json:"final"`
		} `json:"kiln_dashboard"`
	} `json:"metadata"`
}

// maxUpdateBytes bounds each dashboard message: updates carry thinned
// series and never the chart library.
const maxUpdateBytes = 500 << 10

// checkDashboard checks a notebook's record: one dashboard, shown once
// (display_data) then updated in place (update_display_data under the same
// display_id) more than once, at most 4 times a second apart from the
// final update, each message under maxUpdateBytes, the last one marked
// final and its loss chart holding all logged points; and the chart library
// sent at most once.
func checkDashboard(t *testing.T, path string, logged int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("display record: %v", err)
	}
	defer f.Close()
	var dash []displayRecord
	libraries := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r displayRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		switch {
		case r.DisplayID == "" && r.Bytes > maxUpdateBytes:
			libraries++
		case r.Metadata.Dashboard != nil:
			dash = append(dash, r)
		}
	}
	if libraries > 1 {
		t.Errorf("the chart library went out %d times", libraries)
	}
	if len(dash) < 3 {
		t.Fatalf("%d dashboard messages, want it shown and updated more than once", len(dash))
	}
	for i, r := range dash {
		want := "update_display_data"
		if i == 0 {
			want = "display_data"
		}
		if r.Type != want || r.DisplayID != dash[0].DisplayID {
			t.Errorf("dashboard message %d is %s under %q, want %s under %q", i, r.Type, r.DisplayID, want, dash[0].DisplayID)
		}
		if r.Bytes >= maxUpdateBytes {
			t.Errorf("dashboard message %d is %d bytes, want under %d", i, r.Bytes, maxUpdateBytes)
		}
		if final := r.Metadata.Dashboard.Final; final != (i == len(dash)-1) {
			t.Errorf("dashboard message %d of %d marked final: %v", i+1, len(dash), final)
		}
	}
	// The rate, over the updates before the final one (which the run's end
	// sends at once), from the kernel's send times.
	first, err1 := time.Parse(time.RFC3339Nano, dash[0].Sent)
	last, err2 := time.Parse(time.RFC3339Nano, dash[len(dash)-2].Sent)
	if err1 != nil || err2 != nil {
		t.Fatalf("message dates %q, %q: %v %v", dash[0].Sent, dash[len(dash)-2].Sent, err1, err2)
	}
	// At most 4 a second, as a token bucket: n updates over d need
	// n ≤ 4·d + 1 (one may follow the first display at once); a ratio over
	// a short window would flag a single update 240 ms after the display.
	if n, d := len(dash)-2, last.Sub(first); n > 0 && float64(n) > 4*d.Seconds()+1 {
		t.Errorf("%d updates in %v: more than 4 a second", n, d)
	}
	if logged <= 0 {
		t.Fatal("the notebook did not say how many steps it logged")
	}
	if got := lossPoints(t, dash[len(dash)-1].HTML); got != logged {
		t.Errorf("the final render's loss chart holds %d training points, the run logged %d", got, logged)
	}
	t.Logf("dashboard: shown, then %d updates over %v; final render %d bytes with %d loss points",
		len(dash)-1, last.Sub(first).Round(time.Millisecond), dash[len(dash)-1].Bytes, logged)
}

var chartOption = regexp.MustCompile(`opt=(\{.*?\}),me=document\.currentScript`)

// lossPoints returns the number of points of the "raw" series of the
// loss-per-step chart in a dashboard's HTML (one per step event).
func lossPoints(t *testing.T, html string) int {
	t.Helper()
	for _, m := range chartOption.FindAllStringSubmatch(html, -1) {
		var opt struct {
			Title  any `json:"title"`
			Series []struct {
				Name string `json:"name"`
				Data []any  `json:"data"`
			} `json:"series"`
		}
		if json.Unmarshal([]byte(m[1]), &opt) != nil || !strings.Contains(fmt.Sprint(opt.Title), "loss per step") {
			continue
		}
		for _, s := range opt.Series {
			if s.Name == "raw" {
				return len(s.Data)
			}
		}
	}
	t.Fatal("no loss-per-step chart with a raw series in the final render")
	return 0
}

// checkHTMLExport exports an executed notebook to HTML with nbconvert and
// opens it offline in headless Chromium: the dashboard's loss chart must be
// drawn by echarts (from the library the notebook carries) with every
// logged point.
func checkHTMLExport(t *testing.T, k *kilnKernel, executed string, logged int) {
	t.Helper()
	if path, ok := chromium.Path(); !ok {
		t.Logf("no chromium at %s (apt-get install chromium): HTML export check skipped", path)
		return
	}
	dir := t.TempDir()
	out, err := k.run(t, dir, 2*time.Minute, debianPython, "-m", "nbconvert", "--to", "html", "--output-dir", dir, executed)
	if err != nil {
		t.Fatalf("nbconvert --to html: %v\n%s", err, out)
	}
	page := filepath.Join(dir, strings.TrimSuffix(filepath.Base(executed), ".ipynb")+".html")
	if _, err := os.Stat(page); err != nil {
		t.Fatalf("no HTML export: %v\n%s", err, out)
	}
	ctx, stop := context.WithTimeout(chromium.New(t, 1280, 900), 90*time.Second)
	defer stop()
	if err := chromium.Offline(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	// For every drawn chart: its title and the length of each series.
	const charts = `JSON.stringify(Array.prototype.map.call(document.querySelectorAll(".kiln-viz-chart"), function(box){
var inst=window.echarts?window.echarts.getInstanceByDom(box):null; if(!inst){return null;}
var o=inst.getOption(), title=(o.title&&o.title[0]&&o.title[0].text)||"";
return {title:title, canvas:!!box.querySelector("canvas"), series:o.series.map(function(s){return {name:s.name, n:(s.data||[]).length};})};
}).filter(function(c){return c;}))`
	type drawn struct {
		Title  string `json:"title"`
		Canvas bool   `json:"canvas"`
		Series []struct {
			Name string `json:"name"`
			N    int    `json:"n"`
		} `json:"series"`
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+page)); err != nil {
		t.Fatalf("opening %s: %v", page, err)
	}
	var got []drawn
	for deadline := time.Now().Add(30 * time.Second); ; {
		js, err := chromedp.Run(ctx, chromedp.Evaluate[string](charts))
		if err != nil {
			t.Fatalf("reading the page: %v", err)
		}
		got = nil
		_ = json.Unmarshal([]byte(js), &got)
		for _, c := range got {
			if !strings.Contains(c.Title, "loss per step") || !c.Canvas {
				continue
			}
			for _, s := range c.Series {
				if s.Name == "raw" && s.N == logged {
					t.Logf("HTML export: %d charts drawn offline; the loss chart holds all %d points", len(got), logged)
					return
				}
			}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Errorf("the HTML export shows no drawn loss chart with %d training points; charts drawn: %+v", logged, got)
}
