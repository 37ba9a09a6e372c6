//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSPIRVUpToDate recompiles every shader with glslc, exactly as `go
// generate` does, and fails when a committed spv/*.spv differs from its
// source or has none; it skips, saying so, where glslc is not installed.
func TestSPIRVUpToDate(t *testing.T) {
	if raceEnabled {
		t.Skip("long; the plain run checks it (the race detector cannot see into the driver)")
	}
	glslc, err := exec.LookPath("glslc")
	if err != nil {
		t.Skip("glslc is not installed (apt-get install glslc): cannot check that spv/ matches shaders/")
	}
	sources, _ := filepath.Glob("shaders/*.comp")
	if len(sources) == 0 {
		t.Fatal("no shaders/*.comp")
	}
	want := map[string]bool{}
	dir := t.TempDir()
	for _, src := range sources {
		name := strings.TrimSuffix(filepath.Base(src), ".comp")
		want[name+".spv"] = true
		out := filepath.Join(dir, name+".spv")
		cmd := exec.Command(glslc, "--target-env=vulkan1.2", "-O", "-I", "shaders", src, "-o", out)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s does not compile: %v\n%s", src, err, msg)
			continue
		}
		fresh, _ := os.ReadFile(out)
		committed, err := os.ReadFile(filepath.Join("spv", name+".spv"))
		if err != nil {
			t.Errorf("%s has no spv/%s.spv: run go generate ./backends/vulkan", src, name)
			continue
		}
		if !bytes.Equal(fresh, committed) {
			t.Errorf("spv/%s.spv is stale: run go generate ./backends/vulkan", name)
		}
	}
	spvs, _ := filepath.Glob("spv/*.spv")
	for _, p := range spvs {
		if !want[filepath.Base(p)] {
			t.Errorf("%s has no shaders/*.comp source", p)
		}
	}
}
