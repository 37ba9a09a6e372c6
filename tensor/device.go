package tensor

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kiln-ml/kiln/backends"
	_ "github.com/kiln-ml/kiln/backends/cpu" // the CPU is always there
)

// Device selects where tensors live and how ops on them run. It is a small
// value: the device itself plus flags that make it a view (Autodiff,
// NoGrad). Copy it freely. The zero Device is invalid; use CPU,
// ParseDevice or DefaultDevice.
type Device struct {
	st       *deviceState
	autodiff bool
	noGrad   bool
	autocast DType // Float16 or BFloat16 when casting is set (see Autocast)
	casting  bool
}

// deviceState is shared by every view of one physical device.
type deviceState struct {
	name    string // "cpu", "cuda:0"
	info    backends.DeviceInfo
	backend backends.Backend

	seed    atomic.Uint64
	counter atomic.Uint64 // random stream position, advanced per random op

	live   atomic.Int64 // bytes held by tensors' storage
	peak   atomic.Int64
	count  atomic.Int64 // live storages
	budget atomic.Int64 // bytes; 0 means no limit

	// hostReads counts copies of tensor data to the host (host reads and
	// holds), so tests can tell an op that stays on the device from one
	// that computes on the host.
	hostReads atomic.Int64
}

var (
	devicesMu sync.Mutex
	opened    = map[string]*deviceState{}
)

// openDevice returns the shared state of kind:index, opening it once.
func openDevice(kind string, index int) (*deviceState, error) {
	name := kind
	if kind != "cpu" && kind != "strict" {
		name = fmt.Sprintf("%s:%d", kind, index)
	}
	key := fmt.Sprintf("%s:%d", kind, index)
	devicesMu.Lock()
	defer devicesMu.Unlock()
	if st, ok := opened[key]; ok {
		return st, nil
	}
	drv, err := backends.Lookup(kind)
	if err != nil && kind == "cuda" {
		return nil, fmt.Errorf("tensor: device %q: %w: this build of Kiln has no CUDA backend "+
			"(it was built with -tags kiln_nocuda; rebuild without that tag)", name, ErrNoDevice)
	}
	if err != nil && kind == "vulkan" {
		return nil, fmt.Errorf("tensor: device %q: %w: this build of Kiln has no Vulkan backend "+
			"(it was built with -tags kiln_novulkan, or for WebAssembly; rebuild without that tag)", name, ErrNoDevice)
	}
	if err != nil {
		return nil, fmt.Errorf("tensor: device %q: %w: %v", name, ErrNoDevice, err)
	}
	b, err := drv.Open(index)
	if err != nil {
		return nil, fmt.Errorf("tensor: device %q: %w: %v", name, ErrNoDevice, err)
	}
	st := &deviceState{name: name, info: b.Info(), backend: b}
	if st.info.MemoryBytes > 0 {
		// Leave headroom for everything that is not a tensor; going past
		// the budget is an error, where going past physical memory kills
		// the process.
		st.budget.Store(st.info.MemoryBytes / 10 * 8)
	}
	opened[key] = st
	return st, nil
}

// CPU returns the CPU device, which is always present.
func CPU() Device {
	st, err := openDevice("cpu", 0)
	if err != nil {
		panic(err) // the cpu driver is compiled in; this cannot happen
	}
	return Device{st: st}
}

// Cuda returns NVIDIA GPU number i, or an error saying what is missing (no
// driver library, no such device).
func Cuda(i int) (Device, error) { return Open("cuda", i) }

// Vulkan returns Vulkan device number i ("vulkan:i"), in the backend's
// order: discrete GPUs first, then integrated, virtual and software devices
// (Mesa's lavapipe, which runs Vulkan on the CPU, comes last and is never
// the default device). It returns an error wrapping ErrNoDevice saying what
// is missing: no Vulkan loader or driver, no such device, a device without
// a feature the backend needs, or a build without the backend
// (-tags kiln_novulkan, WebAssembly).
func Vulkan(i int) (Device, error) { return Open("vulkan", i) }

// Open returns device index of kind ("cpu", "cuda", "strict", or any kind a
// linked backend registered).
func Open(kind string, index int) (Device, error) {
	st, err := openDevice(kind, index)
	if err != nil {
		return Device{}, err
	}
	return Device{st: st}, nil
}

// ParseDevice parses a device name: "cpu", "cuda", "cuda:1", "vulkan" (=
// "vulkan:0"), "strict", with
// optional "+fused" (see Device.Fused) and "+autodiff" suffixes, in either
// order ("cpu+fused+autodiff").
func ParseDevice(name string) (Device, error) {
	s := strings.TrimSpace(strings.ToLower(name))
	ad, fused := false, false
	for {
		if base, ok := strings.CutSuffix(s, "+autodiff"); ok {
			s, ad = base, true
		} else if base, ok := strings.CutSuffix(s, "+fused"); ok {
			s, fused = base, true
		} else {
			break
		}
	}
	var d Device
	if strings.Contains(s, "://") { // a URL such as remote://host:port/cpu:0
		var err error
		if d, err = OpenURL(s); err != nil {
			return Device{}, err
		}
	} else {
		kind, idx := s, 0
		if k, i, ok := strings.Cut(s, ":"); ok {
			n, err := strconv.Atoi(i)
			if err != nil || n < 0 {
				return Device{}, fmt.Errorf("tensor: device %q: bad index %q: %w", name, i, ErrArgument)
			}
			kind, idx = k, n
		}
		if kind == "" {
			return Device{}, fmt.Errorf("tensor: empty device name: %w", ErrArgument)
		}
		var err error
		if d, err = Open(kind, idx); err != nil {
			return Device{}, err
		}
	}
	if fused {
		d = d.Fused()
	}
	if ad {
		d = d.Autodiff()
	}
	return d, nil
}

// MustDevice is ParseDevice that panics with the error, for examples and tests.
func MustDevice(name string) Device {
	d, err := ParseDevice(name)
	if err != nil {
		panic(err)
	}
	return d
}

// Devices lists every device the linked backends detect, highest priority
// kind first, software devices (a GPU API emulated on the CPU) last. Kinds whose driver or hardware is missing list nothing.
func Devices() DeviceList {
	var out, software DeviceList
	def, _ := DefaultDevice()
	for _, drv := range backends.Drivers() {
		if drv.Kind() == "strict" {
			continue // a test decorator, not hardware
		}
		for _, info := range drv.Enumerate() {
			e := DeviceEntry{DeviceInfo: info, Default: def.valid() && info.String() == def.st.name}
			if info.Software {
				if !e.Default {
					e.NotDefault = softwareReason
				}
				software = append(software, e)
				continue
			}
			out = append(out, e)
		}
	}
	return append(out, software...) // emulated devices after every real one, the CPU included
}

// softwareReason says why DefaultDevice passes over a software device.
const softwareReason = "software device: a GPU API emulated on the CPU, slower than the cpu backend (use it by name)"

// DeviceEntry is one row of Devices.
type DeviceEntry struct {
	backends.DeviceInfo
	Default    bool   // DefaultDevice picks this one
	NotDefault string // why DefaultDevice never picks this device (a software device), "" otherwise
}

// DeviceList is the result of Devices; it prints as a table.
type DeviceList []DeviceEntry

// String renders the list as an aligned text table.
func (l DeviceList) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %-40s %-16s %10s %6s  %s\n", "DEVICE", "NAME", "VENDOR", "MEMORY", "CORES", "DEFAULT")
	for _, e := range l {
		mark := ""
		if e.Default {
			mark = "yes (" + DefaultDeviceReason() + ")"
		} else if e.NotDefault != "" {
			mark = "no (" + e.NotDefault + ")"
		}
		mem := "-" // unknown
		if e.MemoryBytes > 0 {
			mem = FormatBytes(e.MemoryBytes)
		}
		vendor := e.Vendor
		if vendor == "" {
			vendor = "-"
		}
		fmt.Fprintf(&b, "%-8s %-40s %-16s %10s %6d  %s\n", e.String(), e.Name, vendor, mem, e.Cores, mark)
	}
	return b.String()
}

// FormatBytes formats a byte count for people: "-" for a negative (unknown) count,
// else B, KiB, MiB or GiB with one decimal.
func FormatBytes(n int64) string {
	switch {
	case n < 0:
		return "-"
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

var (
	defaultMu     sync.Mutex
	defaultDev    Device
	defaultReason string
	defaultErr    error
	defaultSet    bool
)

// DefaultDevice returns the device Kiln uses when none is given: the one
// named by KILN_DEVICE if set (an unknown or absent device is an error,
// never a silent fallback), else the best detected hardware device (a GPU
// before the CPU; software implementations of GPU APIs, such as Mesa's
// lavapipe for Vulkan, are never chosen: the CPU backend is faster).
// DefaultDeviceReason says which rule chose it, and which software devices
// it passed over.
func DefaultDevice() (Device, error) {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if !defaultSet {
		defaultDev, defaultReason, defaultErr = chooseDefault()
		defaultSet = true
	}
	return defaultDev, defaultErr
}

// SetDefaultDevice makes d the default device for the rest of the process
// (the kernel's %device magic uses it).
func SetDefaultDevice(d Device, reason string) {
	d.check("SetDefaultDevice")
	defaultMu.Lock()
	defer defaultMu.Unlock()
	defaultDev, defaultReason, defaultErr, defaultSet = d, reason, nil, true
}

// DefaultDeviceReason says why DefaultDevice chose its device, e.g.
// "KILN_DEVICE=cuda:0" or "best detected: cuda:0 (NVIDIA H200)".
func DefaultDeviceReason() string {
	_, _ = DefaultDevice()
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if defaultErr != nil {
		return defaultErr.Error()
	}
	return defaultReason
}

func chooseDefault() (Device, string, error) {
	if env, ok := os.LookupEnv("KILN_DEVICE"); ok {
		d, err := ParseDevice(env)
		if err != nil {
			return Device{}, "", &kilnDeviceError{value: env, err: err}
		}
		return d, "KILN_DEVICE=" + env, nil
	}
	var skipped []string
	skippedNote := func() string {
		if len(skipped) == 0 {
			return ""
		}
		return "; not " + strings.Join(skipped, ", ") + ": software, slower than the cpu backend"
	}
	for _, drv := range backends.Drivers() {
		if drv.Kind() == "strict" {
			continue
		}
		for _, info := range drv.Enumerate() {
			if info.Software {
				skipped = append(skipped, fmt.Sprintf("%s (%s)", info.String(), info.Name))
				continue
			}
			d, err := Open(info.Kind, info.Index)
			if err != nil {
				continue
			}
			return d, fmt.Sprintf("best detected: %s (%s)", info.String(), info.Name) + skippedNote(), nil
		}
	}
	return CPU(), "fallback: cpu" + skippedNote(), nil
}

// kilnDeviceError is DefaultDevice's error for a KILN_DEVICE that names
// no usable device: it names the variable and its value, then says why
// (ParseDevice's error, which it wraps).
type kilnDeviceError struct {
	value string
	err   error
}

func (e *kilnDeviceError) Error() string {
	return fmt.Sprintf("tensor: KILN_DEVICE=%q: %s", e.value, strings.TrimPrefix(e.err.Error(), "tensor: "))
}

func (e *kilnDeviceError) Unwrap() error { return e.err }

func (d Device) valid() bool { return d.st != nil }

// check panics with a clear error for the zero Device.
func (d Device) check(op string) {
	if d.st == nil {
		fail(op, ErrNoDevice, "zero Device value (use tensor.CPU(), tensor.ParseDevice or tensor.DefaultDevice)")
	}
}

// String names the device as ParseDevice accepts it ("cpu", "cuda:0+autodiff").
func (d Device) String() string {
	if d.st == nil {
		return "<no device>"
	}
	s := d.st.name
	if d.autodiff {
		s += "+autodiff"
	}
	if d.noGrad {
		s += "+nograd"
	}
	return s
}

// Kind returns the device kind ("cpu", "cuda", "vulkan", "strict").
func (d Device) Kind() string { d.check("Device.Kind"); return d.st.info.Kind }

// Info describes the physical device.
func (d Device) Info() backends.DeviceInfo { d.check("Device.Info"); return d.st.info }

// Backend returns the backend that runs this device's kernels.
func (d Device) Backend() backends.Backend { d.check("Device.Backend"); return d.st.backend }

// Autodiff returns a view of d that records operations for reverse-mode
// differentiation. Calling it on a view that already records returns it
// unchanged.
func (d Device) Autodiff() Device {
	d.check("Device.Autodiff")
	d.autodiff, d.noGrad = true, false
	return d
}

// IsAutodiff reports whether ops on this view record gradients.
func (d Device) IsAutodiff() bool { return d.autodiff && !d.noGrad }

// NoGrad returns a view of d on which nothing is recorded, whatever its
// inputs: an op with any input on a NoGrad view records no graph node, and
// its output stays on the NoGrad view. It is a device view, not a global
// switch, so training running elsewhere on d is unaffected.
func (d Device) NoGrad() Device { d.check("Device.NoGrad"); d.noGrad = true; return d }

// Autocast returns a view of d on which matrix products, Linear and
// convolutions cast their floating-point inputs to dtype (Float16 or
// BFloat16) before computing, as torch.autocast does. The casts are graph
// nodes, so float32 parameters still receive float32 gradients. Results of
// ops with an input on the view stay on it, so a whole forward pass
// autocasts once its input does. Other ops run in their inputs' dtypes.
// With BFloat16 on a backend that offers a bfloat16 GEMM from float32
// operands (the CPU's MatmulBF16), matrix products and Linear instead
// multiply their float32 inputs as bfloat16 (rounded while packing, sums
// in float32) into float32 results, as PyTorch's CPU autocast does, so
// the ops after them stay float32; their gradients are float32. On such
// a backend convolutions keep float32 tensors where its fused convolution
// takes float32 (the CPU's), rather than being composed in bfloat16,
// which is several times slower: the CPU computes them, forward and
// gradients, with bfloat16 products summed in float32 where that is
// faster (AVX-512 BF16: 3×3 stride-1 layers on its Winograd path, whose
// transformed tiles and filters are rounded, other layers of at least 32
// input and 64 output channels) and in float32 elsewhere.
// It panics with ErrDType for any other dtype.
func (d Device) Autocast(dtype DType) Device {
	d.check("Device.Autocast")
	if dtype != Float16 && dtype != BFloat16 {
		fail("Device.Autocast", ErrDType, "autocast to %s: want float16 or bfloat16", dtype)
	}
	d.autocast, d.casting = dtype, true
	return d
}

// AutocastDType returns the dtype of an Autocast view, and false on a view
// that does not autocast.
func (d Device) AutocastDType() (DType, bool) { return d.autocast, d.casting }

// Inner returns the plain device under any views (no autodiff, no NoGrad).
func (d Device) Inner() Device { return Device{st: d.st} }

// Same reports whether d and e are the same physical device, whatever their views.
func (d Device) Same(e Device) bool { return d.st == e.st }

// Seed resets the device's random stream: every later random op draws from
// positions derived from seed, in order, whatever the thread count.
func (d Device) Seed(seed uint64) {
	d.check("Device.Seed")
	d.st.seed.Store(seed)
	d.st.counter.Store(0)
}

// RNGState returns the random stream's seed and position, for checkpoints.
func (d Device) RNGState() (seed, position uint64) {
	d.check("Device.RNGState")
	return d.st.seed.Load(), d.st.counter.Load()
}

// SetRNGState restores a state returned by RNGState.
func (d Device) SetRNGState(seed, position uint64) {
	d.check("Device.SetRNGState")
	d.st.seed.Store(seed)
	d.st.counter.Store(position)
}

// Sync waits for all work queued on the device and returns the first device
// failure since the last Sync or host read; each failure is reported once.
func (d Device) Sync() error {
	d.check("Device.Sync")
	if err := d.st.backend.Sync(); err != nil {
		return fmt.Errorf("tensor: %s: %w: %w", d.st.name, ErrDeviceFailed, err)
	}
	return nil
}

// MemoryStats describes a device's memory as tensors see it.
type MemoryStats struct {
	LiveBytes   int64 // bytes held by live tensor storage
	PeakBytes   int64 // the most LiveBytes has been
	LiveTensors int64 // live storages (views share one)
	BudgetBytes int64 // allocation limit; 0 means none
	Backend     backends.MemoryStats
}

// String formats the stats on one line.
func (m MemoryStats) String() string {
	budget := "none"
	if m.BudgetBytes > 0 {
		budget = FormatBytes(m.BudgetBytes)
	}
	return fmt.Sprintf("live %s in %d storages, peak %s, budget %s", FormatBytes(m.LiveBytes), m.LiveTensors,
		FormatBytes(m.PeakBytes), budget)
}

// MemoryStats reports the device's memory use.
func (d Device) MemoryStats() MemoryStats {
	d.check("Device.MemoryStats")
	return MemoryStats{LiveBytes: d.st.live.Load(), PeakBytes: d.st.peak.Load(), LiveTensors: d.st.count.Load(),
		BudgetBytes: d.st.budget.Load(), Backend: d.st.backend.MemoryStats()}
}

// SetMemoryBudget limits the bytes tensors may hold on the device; an
// allocation past it fails with ErrOutOfMemory. Zero removes the limit.
func (d Device) SetMemoryBudget(bytes int64) {
	d.check("Device.SetMemoryBudget")
	d.st.budget.Store(bytes)
}

// alloc reserves and allocates n elements, panicking with ErrOutOfMemory
// when the budget would be exceeded.
func (st *deviceState) alloc(op string, dtype backends.DType, n int) backends.Buffer {
	bytes := int64(n) * int64(dtype.Size())
	live := st.live.Add(bytes)
	if b := st.budget.Load(); b > 0 && live > b {
		st.live.Add(-bytes)
		st.failOverBudget(op, bytes, fmt.Sprintf("%d × %s", n, dtype), live-bytes, b)
	}
	for {
		p := st.peak.Load()
		if live <= p || st.peak.CompareAndSwap(p, live) {
			break
		}
	}
	buf, err := st.backend.Alloc(dtype, n)
	if err != nil {
		st.live.Add(-bytes)
		kind := ErrDeviceFailed
		if errors.Is(err, ErrOutOfMemory) || errors.Is(err, backends.ErrOutOfMemory) {
			kind = ErrOutOfMemory
		}
		fail(op, kind, "allocating %d × %s on %s: %v", n, dtype, st.name, err)
	}
	st.count.Add(1)
	return buf
}

// failOverBudget panics with ErrOutOfMemory for op: allocating bytes
// (what describes them) on top of live bytes would pass the budget.
func (st *deviceState) failOverBudget(op string, bytes int64, what string, live, budget int64) {
	fail(op, ErrOutOfMemory, "allocating %s (%s) on %s would exceed its budget: %s live of %s",
		FormatBytes(bytes), what, st.name, FormatBytes(live), FormatBytes(budget))
}

func (st *deviceState) free(buf backends.Buffer, bytes int64) {
	st.backend.Free(buf)
	st.live.Add(-bytes)
	st.count.Add(-1)
}

// ResetDefaultDevice forgets the chosen default device, so the next
// DefaultDevice call chooses again (reading KILN_DEVICE anew).
func ResetDefaultDevice() {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	defaultSet = false
}
