// Package testutil holds the test harness shared by Kiln's packages: every
// test runs on the CPU and on the strict backend (which fails the test on a
// leak or a device error), gradients are checked against finite
// differences, and forward values against fixtures that reference tools
// (PyTorch, NumPy) wrote into the package's testdata folder.
package testutil
