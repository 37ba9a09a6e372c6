// Package kerneltest holds end-to-end tests of Kiln's Jupyter kernel. They
// build the real kiln binary (go build ./cmd/kiln into a temporary
// directory), install its kernelspec under the name "kiln" into a temporary
// Jupyter data directory with `kiln kernel install`, and drive it with
// Jupyter's own Python tools from Debian (/usr/bin/python3):
//
//   - TestConformance runs Jupyter's conformance suite, jupyter_kernel_test
//     (python3-jupyter-kernel-test), through kernel/testdata/test_kiln_kernel.py,
//     which fills in every sample the suite offers, plus the front-end checks
//     in the same file (interrupt, restart, comm_info, stdin, display updates).
//   - TestNotebooks executes every notebook in notebooks/ with `jupyter
//     nbconvert --to notebook --execute` (nbclient, the runner behind
//     JupyterLab's and VS Code's "run all" outside the browser) and checks the
//     executed copies: every code cell ran, no cell failed unless it is
//     tagged raises-exception, and the values listed for each notebook in
//     notebookChecks came out.
//   - TestKernelOutlivesNoClient (Linux) kills a client that started a
//     kernel and checks that the kernel exits by itself.
//
// A test skips, saying what to install, only when /usr/bin/python3 or a
// Python package it needs is missing; `make deps` installs them
// (python3-jupyter-client, python3-jupyter-kernel-test, python3-nbclient,
// python3-nbformat, jupyter-nbconvert). The Jupyter environment is
// isolated: JUPYTER_DATA_DIR, JUPYTER_PATH, JUPYTER_RUNTIME_DIR and
// JUPYTER_CONFIG_DIR point into the temporary directory, so a kernelspec or
// configuration of the user's cannot interfere.
//
// The package has no code outside its tests. The kernel's speed (a trivial
// cell's round trip, the time to start) is measured through Python's client
// by kernel/bench/bench.py and through Kiln's Go client (the workbench's) by
// this package's benchmarks:
//
//	go test -run '^$' -bench . ./kernel/kerneltest
package kerneltest
