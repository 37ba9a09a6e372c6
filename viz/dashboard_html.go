package viz

import (
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/kiln-ml/kiln/train"
)

// The live dashboard's rendering: a header (title and state, progress bar,
// epoch, step, elapsed, ETA, throughput, system use, the latest metric
// values), the constant series as values, the smoothing slider, then the
// charts. The header and values are plain HTML, so they show where
// scripts do not run (an untrusted notebook), beside the charts' static
// renderings.

// bundle renders the snapshot as a display bundle.
func (st *dashboardState) bundle(s *Session) map[string]string {
	if s == nil {
		s = NewSession()
	}
	b := st.board()
	id := newID()
	var out strings.Builder
	fmt.Fprintf(&out, `<div id="%s" class="kiln-dash" style="font:13px sans-serif;color:#222;max-width:%dpx">`,
		id, 2*st.cfg.Width+24)
	st.header(&out)
	st.valuesHTML(&out)
	stepLoss := b.Chart(chartStepLoss) != nil
	if stepLoss {
		w := st.cfg.Smoothing
		fmt.Fprintf(&out, `<div class="kiln-dash-smoothing" style="margin:2px 6px;color:#444">`+
			`<label>loss smoothing <input type="range" min="0" max="0.99" step="0.01" value="%s" style="vertical-align:middle;width:160px">`+
			` <span class="kiln-dash-smoothing-value">%.2f</span></label></div>`, formatNumber(w), w)
	}
	out.WriteString(`<div style="display:flex;flex-wrap:wrap;align-items:flex-start">`)
	for _, c := range b.charts {
		fmt.Fprintf(&out, `<div class="kiln-dash-chart" data-kiln-key="%s">`, html.EscapeString(c.key))
		out.WriteString(c.fragment(s, c.SVG()))
		out.WriteString(`</div>`)
	}
	out.WriteString("</div></div>\n")
	if stepLoss {
		fmt.Fprintf(&out, "<script>(function(){\nvar id=%q,key=%s,w0=%s,me=document.currentScript;\n%s})();</script>\n",
			id, jsString(s.display), formatNumber(st.cfg.Smoothing), smoothingJS)
	}
	bundle := map[string]string{mimeHTML: out.String(), mimePlain: st.text()}
	if len(b.charts) > 0 {
		bundle[mimeSVG] = b.SVG()
	}
	return bundle
}

// smoothingJS drives the smoothing slider: it recomputes the smoothed loss
// from the raw series the chart holds, with Smooth's formula, and keeps
// the weight chosen in the page across the display's updates (which
// replace the whole output) under the display id.
const smoothingJS = `var store=window.__kilnDashSmoothing=window.__kilnDashSmoothing||{};
function root(){var r=null;if(me&&me.parentNode&&me.parentNode.querySelector){r=me.parentNode.querySelector("#"+id);}return r||document.getElementById(id);}
function smooth(data,w){var avg=0,wt=0,out=[];for(var i=0;i<data.length;i++){var p=data[i],y=p[1];
if(y===null||!isFinite(y)){out.push([p[0],y]);continue;}avg=avg*w+(1-w)*y;wt=wt*w+(1-w);out.push([p[0],avg/wt]);}return out;}
var tries=0;
function apply(w){var r=root();if(!r){return;}
var box=r.querySelector('[data-kiln-key="step_loss"] .kiln-viz-chart'),ec=window.echarts,c=(ec&&box)?ec.getInstanceByDom(box):null;
if(!c){if(++tries<200){setTimeout(function(){apply(w);},50);}return;}
var o=c.getOption(),raw=-1,sm=-1;o.series.forEach(function(s,i){if(s.name==="raw"){raw=i;}if(s.name==="smoothed"){sm=i;}});
if(raw<0||sm<0){return;}var up=o.series.map(function(){return {};});up[sm]={data:smooth(o.series[raw].data,w)};c.setOption({series:up});}
var r=root();if(!r){return;}
var input=r.querySelector(".kiln-dash-smoothing input"),label=r.querySelector(".kiln-dash-smoothing-value");
var w=(key&&typeof store[key]==="number")?store[key]:w0;
input.value=w;label.textContent=w.toFixed(2);
if(w!==w0){apply(w);}
input.addEventListener("input",function(){var v=Math.min(0.99,Math.max(0,parseFloat(input.value)||0));
if(key){store[key]=v;}label.textContent=v.toFixed(2);tries=0;apply(v);});
`

// state returns the run's state in a word or two, and its colour.
func (p *progress) state() (string, string) {
	switch {
	case p.ended && p.reason == train.StopFailed:
		return "failed", "#c23531"
	case p.ended && p.reason == train.StopCompleted:
		return "completed", "#3ba272"
	case p.ended && p.reason == train.StopEarly:
		return "stopped early", "#3ba272"
	case p.ended && p.reason != "":
		return "stopped (" + string(p.reason) + ")", "#e08a00"
	case p.ended:
		return "ended", "#666"
	case p.validates:
		return "validating", "#5470c6"
	case !p.started:
		return "waiting", "#666"
	}
	return "training", "#5470c6"
}

// epochText returns "epoch 3/10" (or "epoch 3" when the epochs planned are
// unknown): the epoch under way, or the epochs done at the end.
func (p *progress) epochText() string {
	e := max(p.epoch, 1)
	if p.ended {
		e = p.trained
	}
	if p.epochs > 0 {
		return fmt.Sprintf("epoch %d/%d", min(e, p.epochs), p.epochs)
	}
	return fmt.Sprintf("epoch %d", e)
}

// header writes the dashboard's header.
func (st *dashboardState) header(out *strings.Builder) {
	p := &st.prog
	state, colour := p.state()
	out.WriteString(`<div class="kiln-dash-header" style="border:1px solid #ddd;border-radius:6px;padding:8px 10px;margin:4px;background:#fafafa">`)
	out.WriteString(`<div style="display:flex;align-items:center;gap:8px;flex-wrap:wrap">`)
	if st.cfg.Title != "" {
		fmt.Fprintf(out, `<b class="kiln-dash-title">%s</b>`, html.EscapeString(st.cfg.Title))
	}
	fmt.Fprintf(out, `<span class="kiln-dash-state" style="color:#fff;background:%s;border-radius:9px;padding:1px 8px;font-size:12px">%s</span>`,
		colour, html.EscapeString(state))
	out.WriteString(`</div>`)

	// The progress bar and where the run is.
	f := p.fraction()
	out.WriteString(`<div style="display:flex;align-items:center;gap:12px;margin-top:6px;flex-wrap:wrap">`)
	if finite(f) {
		fmt.Fprintf(out, `<div class="kiln-dash-bar" data-fraction="%.4f" title="%.1f%% of the epochs planned" `+
			`style="width:300px;height:12px;background:#e3e3e3;border-radius:6px;overflow:hidden">`+
			`<div style="width:%.2f%%;height:100%%;background:%s"></div></div>`, f, 100*f, 100*f, colour)
		fmt.Fprintf(out, `<span class="kiln-dash-percent" style="font-weight:bold">%.0f%%</span>`, math.Floor(100*f))
	}
	fmt.Fprintf(out, `<span class="kiln-dash-epoch">%s</span>`, p.epochText())
	if p.batches > 0 && !p.ended {
		fmt.Fprintf(out, `<span class="kiln-dash-batch">batch %d/%d</span>`, p.batch, p.batches)
	}
	fmt.Fprintf(out, `<span class="kiln-dash-step">step %d</span>`, p.step)
	if p.ranks > 1 {
		fmt.Fprintf(out, `<span>%d ranks</span>`, p.ranks)
	}
	out.WriteString(`</div>`)

	// Time and speed.
	out.WriteString(`<div class="kiln-dash-stats" style="margin-top:4px;display:flex;gap:12px;flex-wrap:wrap">`)
	if p.ended {
		fmt.Fprintf(out, `<span class="kiln-dash-elapsed">took %s</span>`, formatDuration(p.elapsed))
	} else {
		fmt.Fprintf(out, `<span class="kiln-dash-elapsed">elapsed %s</span>`, formatDuration(p.elapsed))
		fmt.Fprintf(out, `<span class="kiln-dash-eta">ETA %s</span>`, formatDuration(p.eta()))
	}
	fmt.Fprintf(out, `<span class="kiln-dash-rate">%s samples/s</span>`, formatRate(p.rate))
	fmt.Fprintf(out, `<span class="kiln-dash-steprate">%s steps/s</span>`, formatRate(p.stepRate))
	out.WriteString(`</div>`)

	if sys := st.systemText(); sys != "" {
		fmt.Fprintf(out, `<div class="kiln-dash-system" style="margin-top:4px;color:#444">%s</div>`, html.EscapeString(sys))
	}
	if m := st.metricsText(); m != "" {
		fmt.Fprintf(out, `<div class="kiln-dash-metrics" style="margin-top:4px;color:#444">%s</div>`, html.EscapeString(m))
	}
	if p.err != "" {
		fmt.Fprintf(out, `<div class="kiln-dash-error" style="margin-top:4px;color:#c23531;white-space:pre-wrap">%s</div>`,
			html.EscapeString(p.err))
	}
	out.WriteString(`</div>`)
}

// systemText returns the latest system use in one line, each value in its
// own unit: "CPU 93% · memory 41% · process 812 MiB · device 120 MiB".
func (st *dashboardState) systemText() string {
	v := st.prog.sysValues
	get := func(k string) (float64, bool) {
		if x, ok := v[k]; ok && finite(x) {
			return x, true
		}
		x, ok := st.running[k]
		return x, ok && finite(x)
	}
	var parts []string
	if x, ok := get(metricCPUPercent); ok {
		parts = append(parts, fmt.Sprintf("CPU %.0f%%", x))
	}
	if x, ok := get(metricMemPercent); ok {
		parts = append(parts, fmt.Sprintf("memory %.0f%%", x))
	}
	if x, ok := get("process_rss_mib"); ok {
		parts = append(parts, fmt.Sprintf("process %.0f MiB", x))
	}
	if x, ok := get("device_live_mib"); ok && max(x, v["device_peak_mib"]) >= 1 {
		s := fmt.Sprintf("device %.0f MiB", x)
		if peak, ok := get("device_peak_mib"); ok {
			s += fmt.Sprintf(" (peak %.0f)", peak)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " · ")
}

// metricsText returns the latest values of the metrics: the running means
// of the epoch under way, and the latest validation.
func (st *dashboardState) metricsText() string {
	values := func(v train.Values) string {
		var parts []string
		for _, k := range MetricNames([]train.Event{{Metrics: v}}) {
			parts = append(parts, k+" "+formatNumber(v[k]))
		}
		return strings.Join(parts, ", ")
	}
	var parts []string
	if s := values(st.running); s != "" && !st.prog.ended && st.prog.epoch > st.prog.trained {
		parts = append(parts, fmt.Sprintf("epoch %d so far: %s", st.prog.epoch, s))
	} else if s := values(st.train); s != "" {
		parts = append(parts, fmt.Sprintf("train (epoch %d): %s", st.trainAt, s))
	}
	if s := values(st.valid); s != "" {
		parts = append(parts, fmt.Sprintf("valid (epoch %d): %s", st.validAt, s))
	}
	return strings.Join(parts, " · ")
}

// valuesHTML writes the charts shown as values: those whose series are
// all constant.
func (st *dashboardState) valuesHTML(out *strings.Builder) {
	if len(st.summaries) == 0 {
		return
	}
	out.WriteString(`<div class="kiln-dash-values" style="display:flex;flex-wrap:wrap;gap:6px;margin:4px">`)
	for _, s := range st.summaries {
		fmt.Fprintf(out, `<div class="kiln-dash-value" data-kiln-key="%s" style="border:1px solid #ddd;border-radius:4px;padding:4px 8px">`,
			html.EscapeString(s.key))
		fmt.Fprintf(out, `<div style="color:#666;font-size:11px">%s · %s</div><div style="font-size:15px">`,
			html.EscapeString(s.title), html.EscapeString(s.note))
		for i, v := range s.values {
			if i > 0 {
				out.WriteString(" &nbsp; ")
			}
			if len(s.values) > 1 {
				fmt.Fprintf(out, `<span style="color:#666;font-size:12px">%s</span> `, html.EscapeString(v.name))
			}
			out.WriteString(html.EscapeString(summaryValue(s.key, v.value)))
		}
		out.WriteString(`</div></div>`)
	}
	out.WriteString(`</div>`)
}

func summaryValue(key string, v float64) string {
	switch key {
	case chartSystem:
		return fmt.Sprintf("%.0f%%", v)
	case chartThroughput:
		return formatRate(v) + " samples/s"
	}
	return formatNumber(v)
}

// text is the dashboard's text/plain rendering: where the run is, then
// the charts.
func (st *dashboardState) text() string {
	p := &st.prog
	state, _ := p.state()
	var parts []string
	if st.cfg.Title != "" {
		parts = append(parts, st.cfg.Title)
	}
	parts = append(parts, state, p.epochText())
	if p.batches > 0 && !p.ended {
		parts = append(parts, fmt.Sprintf("batch %d/%d", p.batch, p.batches))
	}
	parts = append(parts, fmt.Sprintf("step %d", p.step))
	if f := p.fraction(); finite(f) {
		parts = append(parts, fmt.Sprintf("%.0f%%", math.Floor(100*f)))
	}
	if p.ended {
		parts = append(parts, "took "+formatDuration(p.elapsed))
	} else {
		parts = append(parts, "elapsed "+formatDuration(p.elapsed), "ETA "+formatDuration(p.eta()))
	}
	parts = append(parts, formatRate(p.rate)+" samples/s")
	var s strings.Builder
	s.WriteString(strings.Join(parts, " · "))
	for _, sum := range st.summaries {
		s.WriteString("\n" + sum.title + " (" + sum.note + "):")
		for _, v := range sum.values {
			s.WriteString(" " + v.name + " " + summaryValue(sum.key, v.value))
		}
	}
	for _, c := range st.b.charts {
		s.WriteString("\n" + c.String())
	}
	return s.String()
}
