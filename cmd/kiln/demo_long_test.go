//go:build long

package main

import (
	"path/filepath"
	"testing"
)

// TestTrainMNISTDemo is what `make run` does, checked (`make test-long`):
// two epochs over all 60000 training images, at least 97% on all 10000
// test images. The output, with each epoch's time, goes to the test log.
func TestTrainMNISTDemo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	out := runDemoFor(t, "-device", "cpu", "-run-dir", dir)
	t.Log("\n" + out)
	if acc := checkMNISTDemo(t, out, dir, 2, 10000); acc < 0.97 {
		t.Errorf("test accuracy %.2f%% after 2 epochs, want at least 97%%", 100*acc)
	}
}
