//go:build !kiln_nocuda

package cuda

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeCompiler counts compilations and fails on sources containing "bad".
type fakeCompiler struct {
	major, minor int
	calls        int
}

func (c *fakeCompiler) Version() (int, int, error) { return c.major, c.minor, nil }

func (c *fakeCompiler) Compile(src, name string, opts []string) ([]byte, error) {
	c.calls++
	if strings.Contains(src, "bad") {
		return nil, errors.New(name + "(1): error: bad token")
	}
	return []byte("// PTX for " + name + " " + strings.Join(opts, " ")), nil
}

func TestCacheKeyChangesWithEveryInput(t *testing.T) {
	k := fillKernel(0)
	base, _ := newCompileCache(&fakeCompiler{major: 12, minor: 4}, "sm_90", "")
	key := base.key(k)
	newer, _ := newCompileCache(&fakeCompiler{major: 12, minor: 5}, "sm_90", "")
	other, _ := newCompileCache(&fakeCompiler{major: 12, minor: 4}, "sm_80", "")
	opts, _ := newCompileCache(&fakeCompiler{major: 12, minor: 4}, "sm_90", "")
	opts.opts = append(opts.opts, "--use_fast_math")
	changed := k
	changed.Source += " "
	for name, got := range map[string]string{
		"NVRTC version": newer.key(k), "architecture": other.key(k), "options": opts.key(k), "source": base.key(changed),
	} {
		if got == key {
			t.Errorf("changing the %s leaves the cache key unchanged", name)
		}
	}
	if base.key(fillKernel(0)) != key {
		t.Error("the same kernel gave two keys")
	}
}

func TestCacheReusesDiskImages(t *testing.T) {
	dir := t.TempDir()
	comp := &fakeCompiler{major: 12}
	c1, _ := newCompileCache(comp, "sm_90", dir)
	k := fillKernel(0)
	p1, err := c1.ptx(k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c1.ptx(k); err != nil || comp.calls != 1 {
		t.Fatalf("second lookup compiled again (%d calls, %v)", comp.calls, err)
	}
	c2, _ := newCompileCache(comp, "sm_90", dir) // a new process
	p2, err := c2.ptx(k)
	if err != nil || comp.calls != 1 || string(p1) != string(p2) {
		t.Fatalf("disk image not reused: %d calls, %v", comp.calls, err)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
	if len(matches) != 1 || strings.Contains(matches[0], ".tmp-") {
		t.Fatalf("cache directory holds %v, want one image and no temporary files", matches)
	}
}

func TestCacheDoesNotKeepFailures(t *testing.T) {
	dir := t.TempDir()
	comp := &fakeCompiler{major: 12}
	c, _ := newCompileCache(comp, "sm_90", dir)
	bad := kernel{Name: "kiln_bad", Source: "bad"}
	for range 2 {
		if _, err := c.ptx(bad); err == nil || !strings.Contains(err.Error(), "kiln_bad") {
			t.Fatalf("err = %v, want the compile error naming the kernel", err)
		}
	}
	if comp.calls != 2 {
		t.Errorf("failed compile was cached (%d calls)", comp.calls)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*", "*")); len(m) != 0 {
		t.Errorf("failure written to disk: %v", m)
	}
}

func TestCacheOffAndUnwritable(t *testing.T) {
	t.Setenv("KILN_CUDA_CACHE", "off")
	if d := cacheDir(); d != "" {
		t.Fatalf("KILN_CUDA_CACHE=off gives dir %q", d)
	}
	t.Setenv("KILN_CUDA_CACHE", "/some/where")
	if d := cacheDir(); d != "/some/where" {
		t.Fatalf("cacheDir = %q", d)
	}
	ro := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(ro, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c, _ := newCompileCache(&fakeCompiler{}, "sm_90", filepath.Join(ro, "sub")) // a file in the way
	if p, err := c.ptx(fillKernel(1)); err != nil || len(p) == 0 {
		t.Fatalf("unwritable cache broke compilation: %v", err)
	}
}
