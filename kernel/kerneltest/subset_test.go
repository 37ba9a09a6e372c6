//go:build !long

package kerneltest_test

import "time"

// The notebooks train on the first notebookSubset MNIST images (and test on
// a fifth as many) in `make test`; -tags long (make test-long) uses all.
const (
	notebookSubset  = "30000"
	notebookTimeout = 300 * time.Second
	minAccuracy     = 0.80 // far above chance (0.1), below what the subset reaches (0.88–0.93)
)
