//go:build long

package kerneltest_test

import "time"

// See subset_test.go: under -tags long the notebooks train on all of MNIST.
const (
	notebookSubset  = "60000"
	notebookTimeout = 1500 * time.Second
	minAccuracy     = 0.95
)
