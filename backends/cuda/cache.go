//go:build !kiln_nocuda

package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// compileCache compiles kernels through a Compiler and keeps the PTX on
// disk, so a process compiles each kernel once per machine, not per run.
type compileCache struct {
	comp    Compiler
	arch    string // "sm_90"
	opts    []string
	dir     string // "" when the disk cache is off
	version string // NVRTC version, part of every key

	mu  sync.Mutex
	mem map[string][]byte // key → PTX, for this process
}

// cacheDir returns where compiled kernels are kept: KILN_CUDA_CACHE if set
// ("off" disables the cache), else <user cache dir>/kiln/cuda.
func cacheDir() string {
	v := os.Getenv("KILN_CUDA_CACHE")
	switch {
	case strings.EqualFold(v, "off") || v == "0":
		return ""
	case v != "":
		return v
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "kiln", "cuda")
}

func newCompileCache(c Compiler, arch, dir string) (*compileCache, error) {
	major, minor, err := c.Version()
	if err != nil {
		return nil, err
	}
	return &compileCache{comp: c, arch: arch, dir: dir, mem: map[string][]byte{},
		version: fmt.Sprintf("%d.%d", major, minor),
		opts:    []string{"--gpu-architecture=compute_" + strings.TrimPrefix(arch, "sm_"), "--std=c++14"}}, nil
}

// key hashes everything that changes the compiled image.
func (c *compileCache) key(k kernel) string {
	h := sha256.New()
	for _, part := range append([]string{k.Name, k.Source, c.arch, c.version}, c.opts...) {
		fmt.Fprintf(h, "%d:%s\x00", len(part), part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ptx returns the compiled image of k, from memory, disk or NVRTC. Failed
// compilations are not cached. A disk cache that cannot be written is
// ignored: the image is still returned.
func (c *compileCache) ptx(k kernel) ([]byte, error) {
	key := c.key(k)
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.mem[key]; ok {
		return p, nil
	}
	path := ""
	if c.dir != "" {
		path = filepath.Join(c.dir, key[:2], key+".ptx")
		if p, err := os.ReadFile(path); err == nil && len(p) > 0 {
			c.mem[key] = p
			return p, nil
		}
	}
	p, err := c.comp.Compile(k.Source, k.Name+".cu", c.opts)
	if err != nil {
		return nil, fmt.Errorf("cuda: compile kernel %s: %w", k.Name, err)
	}
	c.mem[key] = p
	if path != "" {
		_ = writeAtomic(path, p) // best effort: a read-only cache still works
	}
	return p, nil
}

// writeAtomic writes data to path through a temporary file and a rename, so
// a concurrent reader sees either nothing or the whole file.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
