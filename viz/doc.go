// Package viz turns Kiln's data into pictures: training curves and live
// dashboards from train events, plots of plain slices and tensors, device
// tables and model graphs. Every picture is a self-contained HTML fragment
// (an echarts chart whose library is embedded in the binary, never loaded
// from the network) with a static SVG rendering beside it, and renders
// itself in a notebook through the MIME() map[string]string method that
// the kernel's display hooks look for.
//
// # Charts
//
// Line, Scatter, Histogram (of a tensor), HistogramOf (of a slice),
// Heatmap (of a 2-D tensor), HeatmapRows, Confusion and ConfusionMatrix
// (of a metrics.ConfusionMatrix) draw your own data. Curve, LearningRate,
// Throughput, SystemUsage and ConfusionFromEvent draw a run's events
// (train.ReadEvents), TrainingCurves all of them at once, RunCharts those
// of a run directory, Compare one metric across several run directories,
// and ResultCurves a train.Result. CurveOptions picks the x axis (steps or
// epochs), smoothing (an exponential moving average, as TensorBoard's) and
// thinning (Thin keeps each bucket's extremes, so spikes survive).
//
//	xs := []float64{0, 1, 2, 3}
//	chart := viz.Line(xs, []float64{0, 1, 4, 9}).SetTitle("squares")
//	chart // in a notebook cell: shows the chart
//
// A Chart renders as:
//
//   - HTML: a fragment holding the chart, the static SVG (shown until the
//     chart draws, and wherever scripts do not run: untrusted notebooks,
//     GitHub's notebook viewer), and a script wrapped in a function;
//   - SVG: the static rendering, drawn with gonum.org/v1/plot;
//   - MIME: text/html, image/svg+xml and text/plain together;
//   - Option: the echarts option as JSON (built with go-echarts), for a
//     page that already shows the chart and replaces its data with
//     setOption.
//
// A Board is a set of charts shown together; a Table is a table of text
// (Devices and DeviceTable list tensor.Devices(), TensorTable shows a
// tensor's values).
//
// # The chart library, and notebooks
//
// The echarts library (the npm package pinned in frontend/package.json) is
// copied into viz/assets by `make assets` and embedded with go:embed. A
// binary built without it (plain `go build` on a fresh clone) draws only
// the static SVGs and says so: HasLibrary reports which.
//
// The library is about 1 MB, so a Session sends it once per page: the
// first fragment a Session renders carries it inline, later ones only a
// loader that waits for it. A kernel owns one Session and renders what a
// cell shows with Session.Render (Session.RenderDisplay for outputs later
// replaced by display updates); a chart's own HTML and MIME methods carry
// the library every time, so that each stands alone.
//
// Fragments work in classic Notebook (the inlined library's UMD wrapper
// is run with RequireJS's define hidden, so it sets window.echarts instead
// of registering an AMD module), in JupyterLab and VS Code (scripts
// re-created on insertion, possibly before the output is attached to the
// page: the script finds its element beside itself and waits until it is
// attached), and in nbconvert's HTML export opened offline. Every fragment
// has its own element id, and its script declares no globals, so a chart
// rendered twice in a page draws twice.
//
// For returns the Visual viz draws for a value that cannot render itself
// (tensor.DeviceList, *tensor.Tensor, train.Result,
// *metrics.ConfusionMatrix, []train.Event): the kernel's fallback before
// plain text.
//
// # Live training charts
//
// LiveDashboard is a train.Observer that turns a run's events into
// updates for a DashboardSink at a bounded rate (4 a second by default,
// whatever the step rate; events in between are coalesced). Each
// DashboardUpdate carries the new points only (Points: for the workbench,
// whose chart already holds the earlier ones) and, built on demand, the
// whole dashboard thinned to DashboardConfig.MaxPoints points per series
// (for a notebook, where a display update replaces the whole output: the
// update is a Visual). The final update, on the run's end event or Close,
// holds every point. The dashboard has a header (progress bar, epoch x/N,
// step, elapsed, ETA, samples/s, CPU and memory), the training loss of
// each logging interval smoothed (a slider in the page changes the
// smoothing) beside the metrics' training and validation values per epoch,
// y axes fitted to the data (fractions such as accuracy within [0, 1]),
// and constant series (a fixed learning rate) shown as values, not charts.
//
//	dash := viz.NewLiveDashboard(sink, viz.DashboardConfig{})
//	s := &train.Supervised{..., Observers: []train.Observer{dash}}
//
// # What it does not do
//
// viz never fetches anything over the network, and never lets go-echarts
// write a page (its templates reference a CDN): go-echarts only builds the
// option. Charts are not live-editable from Go once rendered: render again,
// or send a new option. A fragment whose library-carrying output was
// removed from a saved notebook shows its static SVG and says why.
package viz
