// Package viz turns Kiln's data into pictures: training curves and live
// dashboards from train events, plots of plain slices and tensors, device
// tables and model graphs. Every picture is a self-contained HTML fragment
// (an echarts chart whose library is embedded in the binary, never loaded
// from the network) with a static SVG rendering beside it, and renders
// itself in a notebook through the MIME() map[string]string method that
// the kernel's display hooks look for.
package viz
