// Package browsertest holds the workbench's end-to-end test: it builds
// `kiln`, starts the real `kiln workbench --browser` process on a free port
// over a temporary copy of notebooks/, and drives the embedded UI with
// headless chromium (chromedp) the way a user would: opening and running
// notebooks, choosing a device, watching and stopping a training run,
// looking at a model, exporting a checkpoint, surviving a kernel crash and
// bad files. Screenshots go to bin/screenshots/ (or $KILN_SCREENSHOTS).
//
// The test needs Debian's chromium (KILN_CHROMIUM overrides its path) and
// the built UI (make assets); it skips, saying why, without them, and under
// -short.
package browsertest
