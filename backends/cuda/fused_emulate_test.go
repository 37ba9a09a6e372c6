//go:build !kiln_nocuda && linux

package cuda

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/fusion"
	"github.com/kiln-ml/kiln/internal/conformance"
)

// emulatingDriver is the fake driver with kernels that run: the compiler
// hands it each kernel's CUDA C source instead of PTX, launches are queued
// with a copy of their arguments, and the queue runs, in order, before
// anything touches memory (a copy, a sync, a free): all queued kernels are
// built with g++ against the CUDA shim into one program that reads the
// fake device memory from a file, calls the kernels on a 1×1 grid (every
// kernel the backend launches here is a grid-stride loop, so one thread
// covers every element) and writes the memory back. The whole launch
// path — argument packing, pointers with offsets, views, sizes — is then
// what the test checks, not only the kernels' arithmetic.
type emulatingDriver struct {
	*fakeDriver
	dir string

	mu      sync.Mutex
	modules map[Module]string       // module → source
	fns     map[Function][2]string  // function → name, source
	queue   []emulatedLaunch        // launched, not yet run
	names   []string                // every kernel launched, in order
	runs    int                     // g++ programs built
	sizes   map[string][]paramClass // kernel name → parameter classes
}

type emulatedLaunch struct {
	name, src string
	args      [][]byte
}

// paramClass is a kernel parameter's C type.
type paramClass string

// sourceCompiler "compiles" a kernel to its own source, for emulatingDriver.
type sourceCompiler struct{}

func (sourceCompiler) Version() (int, int, error) { return 12, 4, nil }
func (sourceCompiler) Compile(src, _ string, _ []string) ([]byte, error) {
	return []byte(src), nil
}

// newEmulatedBackend returns a Backend on an emulatingDriver, or skips
// without g++.
func newEmulatedBackend(t *testing.T) (*Backend, *emulatingDriver) {
	t.Helper()
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("g++ not installed; kernels not emulated")
	}
	d := &emulatingDriver{fakeDriver: newFakeDriver(0), dir: t.TempDir(), modules: map[Module]string{},
		fns: map[Function][2]string{}, sizes: map[string][]paramClass{}}
	b, err := newBackend(d, sourceCompiler{}, 0, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b, d
}

func (d *emulatingDriver) ModuleLoad(image []byte) (Module, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	m := Module(len(d.modules) + 1)
	d.modules[m] = string(image)
	return m, nil
}

func (d *emulatingDriver) ModuleFunction(m Module, name string) (Function, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	src, ok := d.modules[m]
	if !ok || !strings.Contains(src, " "+name+"(") {
		return 0, fmt.Errorf("emulator: no kernel %s in module %d", name, m)
	}
	f := Function(len(d.fns) + 1)
	d.fns[f] = [2]string{name, src}
	return f, nil
}

// signature returns the C types of kernel name's parameters in src.
func signature(src, name string) ([]paramClass, error) {
	head := "void " + name + "("
	i := strings.Index(src, head)
	if i < 0 {
		return nil, fmt.Errorf("emulator: no signature for %s", name)
	}
	list := src[i+len(head):]
	list = list[:strings.Index(list, ")")]
	var out []paramClass
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		switch {
		case strings.Contains(p, "*"):
			out = append(out, "ptr")
		case strings.HasPrefix(p, "KView "):
			out = append(out, "KView")
		case strings.HasPrefix(p, "double "):
			out = append(out, "double")
		case strings.HasPrefix(p, "unsigned long long "):
			out = append(out, "unsigned long long")
		case strings.HasPrefix(p, "long long "):
			out = append(out, "long long")
		case strings.HasPrefix(p, "int "):
			out = append(out, "int")
		default:
			return nil, fmt.Errorf("emulator: kernel %s: parameter %q", name, p)
		}
	}
	return out, nil
}

var paramBytes = map[paramClass]int{"ptr": 8, "KView": kviewSize, "double": 8, "unsigned long long": 8, "long long": 8, "int": 4}

func (d *emulatingDriver) Launch(fn Function, _, _ [3]uint32, _ uint32, _ Stream, params []unsafe.Pointer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, ok := d.fns[fn]
	if !ok {
		return fmt.Errorf("emulator: launch of unknown function %d", fn)
	}
	sig, ok := d.sizes[f[0]]
	if !ok {
		var err error
		if sig, err = signature(f[1], f[0]); err != nil {
			return err
		}
		d.sizes[f[0]] = sig
	}
	if len(sig) != len(params) {
		return fmt.Errorf("emulator: kernel %s takes %d parameters, launched with %d", f[0], len(sig), len(params))
	}
	l := emulatedLaunch{name: f[0], src: f[1]}
	for i, p := range params {
		l.args = append(l.args, bytes.Clone(unsafe.Slice((*byte)(p), paramBytes[sig[i]])))
	}
	d.queue = append(d.queue, l)
	d.names = append(d.names, f[0])
	return nil
}

// source returns the source of the kernel launched as name.
func (d *emulatingDriver) source(name string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, f := range d.fns {
		if f[0] == name {
			return f[1]
		}
	}
	return ""
}

// launched returns the names of the kernels launched so far.
func (d *emulatingDriver) launched() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.names)
}

// run builds and runs the queued kernels over the fake memory.
func (d *emulatingDriver) run() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.queue) == 0 {
		return nil
	}
	queue := d.queue
	d.queue = nil
	d.fakeDriver.mu.Lock()
	defer d.fakeDriver.mu.Unlock()
	var bases []DevicePtr
	for p := range d.fakeDriver.mem {
		bases = append(bases, p)
	}
	slices.Sort(bases)
	where := func(p DevicePtr) (int, int64, error) {
		for k, base := range bases {
			if p >= base && p < base+DevicePtr(len(d.fakeDriver.mem[base])) {
				return k, int64(p - base), nil
			}
		}
		return 0, 0, fmt.Errorf("emulator: pointer %#x is not allocated", p)
	}
	var src, calls strings.Builder
	src.WriteString(cudaShim + emulatorGrid + "#include <cstdlib>\n" + prelude + fusedPrelude)
	seen := map[string]bool{}
	for _, l := range queue {
		if !seen[l.name] {
			seen[l.name] = true
			body := strings.TrimPrefix(strings.TrimPrefix(l.src, prelude), fusedPrelude)
			src.WriteString(body)
		}
	}
	src.WriteString(`
struct AnyPtr { unsigned char* p; template <class U> operator U*() const { return (U*)p; } };
template <class T> T from(const unsigned char* b) { T v; memcpy(&v, b, sizeof v); return v; }
`)
	for li, l := range queue {
		args := make([]string, len(l.args))
		for ai, a := range l.args {
			cls := d.sizes[l.name][ai]
			if cls == "ptr" {
				k, off, err := where(DevicePtr(uint64(a[0]) | uint64(a[1])<<8 | uint64(a[2])<<16 | uint64(a[3])<<24 |
					uint64(a[4])<<32 | uint64(a[5])<<40 | uint64(a[6])<<48 | uint64(a[7])<<56))
				if err != nil {
					return fmt.Errorf("%s argument %d: %w", l.name, ai, err)
				}
				args[ai] = fmt.Sprintf("AnyPtr{mem[%d] + %d}", k, off)
				continue
			}
			lit := make([]string, len(a))
			for i, c := range a {
				lit[i] = fmt.Sprint(c)
			}
			fmt.Fprintf(&src, "static const unsigned char A%d_%d[] = {%s};\n", li, ai, strings.Join(lit, ","))
			args[ai] = fmt.Sprintf("from<%s>(A%d_%d)", cls, li, ai)
		}
		fmt.Fprintf(&calls, "  %s(%s);\n", l.name, strings.Join(args, ", "))
	}
	sizes := make([]string, len(bases))
	var image []byte
	for k, base := range bases {
		sizes[k] = fmt.Sprint(len(d.fakeDriver.mem[base]))
		image = append(image, d.fakeDriver.mem[base]...)
	}
	fmt.Fprintf(&src, `int main(int argc, char** argv) {
  const long long size[] = {%s};
  const int count = %d;
  unsigned char* mem[%d];
  FILE* in = fopen(argv[1], "rb");
  for (int k = 0; k < count; k++) {
    mem[k] = (unsigned char*)malloc(size[k] + 1);
    if (fread(mem[k], 1, size[k], in) != (size_t)size[k]) return 3;
  }
  fclose(in);
%s  FILE* out = fopen(argv[2], "wb");
  for (int k = 0; k < count; k++) fwrite(mem[k], 1, size[k], out);
  fclose(out);
  return 0;
}
`, strings.Join(sizes, ", "), len(bases), max(len(bases), 1), calls.String())
	d.runs++
	dir := filepath.Join(d.dir, fmt.Sprint(d.runs))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cc, bin, in, out := filepath.Join(dir, "k.cc"), filepath.Join(dir, "k"), filepath.Join(dir, "in"), filepath.Join(dir, "out")
	if err := os.WriteFile(cc, []byte(src.String()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(in, image, 0o644); err != nil {
		return err
	}
	if msg, err := exec.Command("g++", "-O1", "-std=c++14", "-w", "-o", bin, cc).CombinedOutput(); err != nil {
		return fmt.Errorf("emulator: g++: %v\n%s", err, msg)
	}
	if msg, err := exec.Command(bin, in, out).CombinedOutput(); err != nil {
		return fmt.Errorf("emulator: kernels failed: %v\n%s", err, msg)
	}
	result, err := os.ReadFile(out)
	if err != nil || len(result) != len(image) {
		return fmt.Errorf("emulator: memory image of %d bytes back, want %d (%v)", len(result), len(image), err)
	}
	for _, base := range bases {
		n := copy(d.fakeDriver.mem[base], result)
		result = result[n:]
	}
	return nil
}

func (d *emulatingDriver) CopyHtoD(dst DevicePtr, src []byte, s Stream) error {
	if err := d.run(); err != nil {
		return err
	}
	return d.fakeDriver.CopyHtoD(dst, src, s)
}

func (d *emulatingDriver) CopyDtoH(dst []byte, src DevicePtr, s Stream) error {
	if err := d.run(); err != nil {
		return err
	}
	return d.fakeDriver.CopyDtoH(dst, src, s)
}

func (d *emulatingDriver) StreamSync(s Stream) error {
	if err := d.run(); err != nil {
		return err
	}
	return d.fakeDriver.StreamSync(s)
}

func (d *emulatingDriver) MemFree(p DevicePtr) error {
	if err := d.run(); err != nil {
		return err
	}
	return d.fakeDriver.MemFree(p)
}

// TestFusedGroupsMatchUnfusedEmulated runs compareFused with every CUDA
// kernel built by g++ and run on the fake device's memory.
func TestFusedGroupsMatchUnfusedEmulated(t *testing.T) {
	emu, drv := newEmulatedBackend(t)
	compareFused(t, emu, drv.launched, fusedCases())
	if drv.runs > 1 {
		t.Logf("the emulator built %d programs", drv.runs)
	}
}

// TestFusedWideIndexEmulated runs the chains with strided views again with
// the coordinates computed in 64-bit arithmetic, the variant groups of
// more than 2^31-1 elements get.
func TestFusedWideIndexEmulated(t *testing.T) {
	emu, drv := newEmulatedBackend(t)
	fusedWideIndex = true
	defer func() { fusedWideIndex = false }()
	var cases []fusedCase
	for _, c := range fusedCases() {
		if strings.Contains(c.name, "broadcast") || strings.Contains(c.name, "transposed") {
			cases = append(cases, c)
		}
	}
	if len(cases) != 2 {
		t.Fatalf("%d strided cases", len(cases))
	}
	compareFused(t, emu, drv.launched, cases)
	for _, name := range drv.launched() {
		if strings.HasPrefix(name, "kiln_fused_") && !strings.Contains(drv.source(name), "long long r_ = (long long)i;") {
			t.Errorf("%s does not compute coordinates in 64 bits", name)
		}
	}
}

// noFusedCompiler is sourceCompiler failing every fused kernel, as NVRTC
// would one it rejects.
type noFusedCompiler struct {
	sourceCompiler
	fused *int // fused kernels offered
}

func (c noFusedCompiler) Compile(src, name string, opts []string) ([]byte, error) {
	if strings.HasPrefix(name, "kiln_fused_") {
		*c.fused++
		return nil, fmt.Errorf("%s(1): error: rejected by the test", name)
	}
	return []byte(src), nil
}

// TestFusedCompileFailureFallsBack: when NVRTC rejects a group's kernel,
// RunGroup says so, the fusing decorator runs the group tile by tile with
// the per-op kernels, the results are still right and no error is left
// behind; the structure is not offered to the compiler again.
func TestFusedCompileFailureFallsBack(t *testing.T) {
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("g++ not installed; kernels not emulated")
	}
	d := &emulatingDriver{fakeDriver: newFakeDriver(0), dir: t.TempDir(), modules: map[Module]string{},
		fns: map[Function][2]string{}, sizes: map[string][]paramClass{}}
	offered := 0
	dev, err := newBackend(d, noFusedCompiler{fused: &offered}, 0, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	fb := fusion.New(dev)
	xs := conformance.Values(backends.Float32, 300, -3, 3, 1)
	buf, _ := fb.Alloc(backends.Float32, 300)
	fb.Write(buf, 0, conformance.Encode(backends.Float32, xs))
	x := backends.Contiguous(buf, backends.Float32, 300)
	for range 2 {
		c := &chain{b: fb, in: []backends.View{x}}
		out := c.unary(backends.Tanh, c.scalar(backends.Mul, x, 2), 0, 0)
		fb.Free(c.tmps[0])
		got := make([]byte, 4*300)
		if err := fb.Read(out.Buf, 0, got); err != nil {
			t.Fatalf("read after a refused group: %v", err)
		}
		for i, v := range conformance.Decode(backends.Float32, got) {
			if want := math.Tanh(2 * float64(float32(xs[i]))); math.Abs(v-want) > 1e-6 {
				t.Fatalf("element %d: %v, want %v", i, v, want)
			}
		}
		fb.Free(out.Buf)
	}
	var fused, perOp int
	for _, name := range d.launched() {
		if strings.HasPrefix(name, "kiln_fused_") {
			fused++
		} else {
			perOp++
		}
	}
	if fused != 0 || perOp != 4 {
		t.Errorf("launched %v: want the two per-op kernels twice and no fused one", d.launched())
	}
	if offered != 1 {
		t.Errorf("the group's kernel was offered to the compiler %d times, want once", offered)
	}
}
