// Package robusttest holds end-to-end robustness tests of the Kiln kernel:
// they build the kiln binary, start `kiln kernel run` as a subprocess and
// drive it over the Jupyter wire protocol with package jupyter's client
// (and, where Python's jupyter_client is installed, with Jupyter's own
// client library). They check that interrupts stop cells, that bad cells
// and bad messages leave the session intact, and that failures Go cannot
// recover from end the process with a clear reason that the client sees,
// after which a restarted kernel works.
//
// The package has no non-test code; run it with `go test ./kernel/robusttest`.
package robusttest
