//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// Tests of the runtime: enumeration, memory, the command stream and its
// errors. They run on vulkan:0 (lavapipe on machines without a GPU) and
// skip, saying why, where there is no Vulkan device.

func f32bytes(xs ...float32) []byte {
	out := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
	}
	return out
}

func readF32(t *testing.T, dev *Backend, buf backends.Buffer, n int) []float32 {
	t.Helper()
	raw := make([]byte, 4*n)
	if err := dev.Read(buf, 0, raw); err != nil {
		t.Fatalf("Read: %v", err)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}

func TestDevicesOrderedAndLabelled(t *testing.T) {
	ds := Devices()
	if len(ds) == 0 {
		t.Skip("no Vulkan device (install libvulkan1 and mesa-vulkan-drivers for lavapipe)")
	}
	seenSoftware := false
	for i, d := range ds {
		t.Logf("%s: %s, vendor %s, %d MiB, software %v, %s", d, d.Name, d.Vendor, d.MemoryBytes>>20, d.Software, d.Detail)
		if d.Kind != "vulkan" || d.Index != i || d.Name == "" || d.Vendor == "" {
			t.Errorf("device %d: incomplete info %+v", i, d)
		}
		if seenSoftware && !d.Software {
			t.Errorf("hardware device %d listed after a software one", i)
		}
		seenSoftware = seenSoftware || d.Software
		if d.Software && !strings.Contains(d.Vendor, "software") {
			t.Errorf("software device %d has vendor %q, want it labelled software", i, d.Vendor)
		}
	}
}

func TestOpenBadIndexNamesTheCount(t *testing.T) {
	_, err := Open(99)
	if err == nil || !strings.Contains(err.Error(), "device 99") {
		t.Fatalf("Open(99) = %v, want an error naming device 99", err)
	}
}

func TestWriteFillReadRoundTrip(t *testing.T) {
	dev := openDevice(t)
	buf, err := dev.Alloc(backends.Float32, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(buf)
	in := make([]float32, 1000)
	for i := range in {
		in[i] = float32(i) * 0.5
	}
	dev.Write(buf, 0, f32bytes(in...))
	got := readF32(t, dev, buf, 1000)
	for i := range in {
		if got[i] != in[i] {
			t.Fatalf("element %d: got %v, want %v", i, got[i], in[i])
		}
	}
	// Fill the odd elements (a strided view), then overwrite element 0 with
	// a Write queued after the Fill: the stream keeps the order.
	dev.Fill(backends.View{Buf: buf, DType: backends.Float32, Shape: []int{500}, Strides: []int{2}, Offset: 1}, -3)
	dev.Write(buf, 0, f32bytes(42))
	got = readF32(t, dev, buf, 1000)
	for i := range got {
		want := in[i]
		if i%2 == 1 {
			want = -3
		}
		if i == 0 {
			want = 42
		}
		if got[i] != want {
			t.Fatalf("element %d: got %v, want %v", i, got[i], want)
		}
	}
}

func TestManyBatchesKeepOrder(t *testing.T) {
	dev := openDevice(t)
	buf, _ := dev.Alloc(backends.Float32, 4)
	defer dev.Free(buf)
	v := backends.Contiguous(buf, backends.Float32, 4)
	for i := range 3*batchCommands + 7 { // several submissions
		dev.Fill(v, float64(i))
	}
	if got := readF32(t, dev, buf, 4); got[3] != float32(3*batchCommands+6) {
		t.Fatalf("got %v after the last fill, want %d", got, 3*batchCommands+6)
	}
}

func TestMemoryReturnsToZero(t *testing.T) {
	dev := openDevice(t)
	if err := dev.Sync(); err != nil {
		t.Fatal(err)
	}
	before := dev.MemoryStats()
	var bufs []backends.Buffer
	for _, n := range []int{1, 100, 1 << 12, 1 << 20, 3 << 20} {
		buf, err := dev.Alloc(backends.Float32, n)
		if err != nil {
			t.Fatal(err)
		}
		dev.Fill(backends.Contiguous(buf, backends.Float32, n), 1)
		bufs = append(bufs, buf)
	}
	mid := dev.MemoryStats()
	if mid.LiveBuffers-before.LiveBuffers != 5 || mid.LiveBytes-before.LiveBytes != 4*(1+100+1<<12+1<<20+3<<20) {
		t.Fatalf("stats after 5 allocs: %+v (before %+v)", mid, before)
	}
	for _, b := range bufs {
		dev.Free(b)
	}
	after := dev.MemoryStats()
	if after.LiveBytes != before.LiveBytes || after.LiveBuffers != before.LiveBuffers {
		t.Fatalf("after freeing: %+v, want live counts of %+v", after, before)
	}
	if after.PeakBytes < mid.LiveBytes || after.ReservedBytes < after.LiveBytes {
		t.Fatalf("peak or reserved wrong: %+v", after)
	}
	// A freed block is reused once its work is done: no new reservation.
	if err := dev.Sync(); err != nil {
		t.Fatal(err)
	}
	buf, _ := dev.Alloc(backends.Float32, 1<<20)
	if dev.MemoryStats().ReservedBytes != after.ReservedBytes {
		t.Errorf("re-allocating a freed size reserved more memory: %d -> %d", after.ReservedBytes, dev.MemoryStats().ReservedBytes)
	}
	dev.Free(buf)
	dev.EmptyCache()
	if s := dev.MemoryStats(); s.ReservedBytes != s.LiveBytes {
		t.Errorf("after EmptyCache with nothing live beyond %d bytes: reserved %d", s.LiveBytes, s.ReservedBytes)
	}
}

func TestBadViewIsRefusedWithStickyError(t *testing.T) {
	dev := openDevice(t)
	buf, _ := dev.Alloc(backends.Float32, 10)
	defer dev.Free(buf)
	dev.Fill(backends.Contiguous(buf, backends.Float32, 10), 7)
	dev.Fill(backends.Contiguous(buf, backends.Float32, 11), 1) // one element too many
	err := dev.Sync()
	if err == nil || !strings.Contains(err.Error(), "fill") || !strings.Contains(err.Error(), "10-element") {
		t.Fatalf("Sync after a view past the end = %v, want an error naming fill and the buffer size", err)
	}
	if err := dev.Sync(); err != nil {
		t.Fatalf("the error was not cleared: %v", err)
	}
	dev.Fill(backends.Contiguous(buf, backends.Int32, 10), 1) // wrong dtype
	if err := dev.Sync(); err == nil || !strings.Contains(err.Error(), "dtype int32") {
		t.Fatalf("Sync after a view of the wrong dtype = %v", err)
	}
	if got := readF32(t, dev, buf, 10); got[9] != 7 {
		t.Fatalf("a refused kernel wrote: %v", got)
	}
}

func TestShaderErrorSurfacesAtSyncNotEarlier(t *testing.T) {
	dev := openDevice(t)
	// Simulate a shader reporting an error: write the error word directly
	// from a queued copy, behind other work, as a shader would.
	buf, _ := dev.Alloc(backends.Float32, 1<<16)
	defer dev.Free(buf)
	v := backends.Contiguous(buf, backends.Float32, 1<<16)
	for range 10 {
		dev.Fill(v, 1)
	}
	word := make([]byte, 16)
	binary.LittleEndian.PutUint32(word, 2)
	dev.mu.Lock()
	dev.upload(dev.errWord, 0, word)
	dev.mu.Unlock()
	if err := dev.takeErr(); err != nil {
		t.Fatalf("an error surfaced before Sync: %v", err)
	}
	err := dev.Sync()
	if !errors.Is(err, backends.ErrDivideByZero) {
		t.Fatalf("Sync = %v, want ErrDivideByZero", err)
	}
	if err := dev.Sync(); err != nil {
		t.Fatalf("error not cleared after being reported: %v", err)
	}
}

func TestDeviceLossIsSticky(t *testing.T) {
	dev := openDevice(t)
	b := &Backend{index: dev.index, pd: dev.pd} // a copy that owns nothing
	b.fail(&vkError{"vkQueueSubmit", vkErrorDeviceLost})
	b.fail(errors.New("a later error"))
	for range 2 {
		if err := b.takeErr(); !errors.Is(err, ErrDeviceLost) {
			t.Fatalf("takeErr = %v, want ErrDeviceLost every time", err)
		}
	}
}

func TestIntegerDivisionByZeroReportedAtNextSync(t *testing.T) {
	dev := openDevice(t)
	a, _ := dev.Alloc(backends.Int64, 4)
	c, _ := dev.Alloc(backends.Int64, 4)
	o, _ := dev.Alloc(backends.Int64, 4)
	defer dev.Free(a)
	defer dev.Free(c)
	defer dev.Free(o)
	i64 := func(xs ...int64) []byte {
		out := make([]byte, 8*len(xs))
		for i, x := range xs {
			binary.LittleEndian.PutUint64(out[8*i:], uint64(x))
		}
		return out
	}
	dev.Write(a, 0, i64(7, -7, 9, 4))
	dev.Write(c, 0, i64(2, 2, 0, -3))
	av, cv, ov := backends.Contiguous(a, backends.Int64, 4), backends.Contiguous(c, backends.Int64, 4), backends.Contiguous(o, backends.Int64, 4)
	for _, op := range []backends.BinaryOp{backends.Rem, backends.FloorDiv} {
		dev.Binary(op, ov, av, cv)
		if err := dev.Sync(); !errors.Is(err, backends.ErrDivideByZero) {
			t.Fatalf("%s by zero: Sync = %v, want ErrDivideByZero", op, err)
		}
		if err := dev.Sync(); err != nil {
			t.Fatalf("%s: the error was not cleared: %v", op, err)
		}
		raw := make([]byte, 32)
		if err := dev.Read(o, 0, raw); err != nil {
			t.Fatal(err)
		}
		want := map[backends.BinaryOp][]int64{backends.Rem: {1, 1, 0, -2}, backends.FloorDiv: {3, -4, 0, -2}}[op]
		for i, w := range want {
			if i == 2 {
				continue // unspecified where the divisor is 0
			}
			if g := int64(binary.LittleEndian.Uint64(raw[8*i:])); g != w {
				t.Errorf("%s element %d: %d, want %d", op, i, g, w)
			}
		}
	}
	dev.BinaryScalar(backends.Rem, ov, av, 0, false)
	if err := dev.Sync(); !errors.Is(err, backends.ErrDivideByZero) {
		t.Fatalf("remainder by the scalar 0: Sync = %v", err)
	}
	// A division by zero queued behind other work is not reported before Sync.
	for range 5 {
		dev.Fill(ov, 1)
	}
	dev.Binary(backends.FloorDiv, ov, av, cv)
	if err := dev.takeErr(); err != nil {
		t.Fatalf("reported before Sync: %v", err)
	}
	if err := dev.Sync(); !errors.Is(err, backends.ErrDivideByZero) {
		t.Fatalf("Sync = %v", err)
	}
}

// On a discrete GPU device memory is not host-visible: Read and Write go
// through staging copies. Unmapped blocks exercise that path on any device.
func TestStagingPathRoundTrip(t *testing.T) {
	dev := openDevice(t)
	dev.mu.Lock()
	stagingOnly = true
	blk, err := dev.newBlock(sizeClass(3<<20), deviceMemory)
	stagingOnly = false
	dev.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if blk.host != nil {
		t.Fatal("block is mapped")
	}
	buf := &buffer{blk: blk, bytes: 3 << 20, dtype: backends.Float32, owner: dev}
	src := make([]byte, 3<<20) // several arena chunks
	for i := range src {
		src[i] = byte(i * 7)
	}
	dev.Write(buf, 0, src)
	dev.Fill(backends.View{Buf: buf, DType: backends.Float32, Shape: []int{2}, Strides: []int{1}, Offset: 1}, 1)
	got := make([]byte, len(src))
	if err := dev.Read(buf, 0, got); err != nil {
		t.Fatal(err)
	}
	copy(src[4:12], f32bytes(1, 1))
	for i := range src {
		if got[i] != src[i] {
			t.Fatalf("byte %d: got %d, want %d", i, got[i], src[i])
		}
	}
	dev.mu.Lock()
	dev.destroyBlock(blk)
	dev.mu.Unlock()
}

// The element-wise kernels of float32 training (forward and backward) run
// in shaders, never on the host.
func TestFloat32ElementwiseStaysOnDevice(t *testing.T) {
	dev := openDevice(t)
	x, _ := dev.Alloc(backends.Float32, 64)
	o, _ := dev.Alloc(backends.Float32, 64)
	c, _ := dev.Alloc(backends.Bool, 64)
	defer dev.Free(x)
	defer dev.Free(o)
	defer dev.Free(c)
	xv, ov, cv := backends.Contiguous(x, backends.Float32, 64), backends.Contiguous(o, backends.Float32, 64), backends.Contiguous(c, backends.Bool, 64)
	dev.Fill(xv, 0.5)
	before := dev.HostOps()
	for _, op := range []backends.UnaryOp{backends.Exp, backends.Log, backends.Tanh, backends.Sigmoid, backends.Relu, backends.Gelu, backends.Sqrt} {
		dev.Unary(op, ov, xv, 0, 0)
		dev.UnaryGrad(op, ov, xv, xv, 0, 0)
	}
	for _, op := range []backends.BinaryOp{backends.Add, backends.Sub, backends.Mul, backends.Div, backends.Maximum, backends.Pow} {
		dev.Binary(op, ov, xv, xv)
		dev.BinaryScalar(op, ov, xv, 2, true)
	}
	dev.BinaryScalar(backends.Gt, cv, xv, 0, false)
	dev.Where(ov, cv, xv, ov)
	dev.Copy(ov, xv)
	if err := dev.Sync(); err != nil {
		t.Fatal(err)
	}
	after := dev.HostOps()
	for k, v := range after {
		if v != before[k] {
			t.Errorf("%s ran on the host", k)
		}
	}
	if got := readF32(t, dev, o, 64); got[63] != 0.5 {
		t.Errorf("copy gave %v", got[63])
	}
}

// Several goroutines may drive one device at once; each sees its own work.
func TestConcurrentUse(t *testing.T) {
	dev := openDevice(t)
	done := make(chan error, 4)
	for g := range 4 {
		go func() {
			buf, err := dev.Alloc(backends.Float32, 1000)
			if err != nil {
				done <- err
				return
			}
			defer dev.Free(buf)
			v := backends.Contiguous(buf, backends.Float32, 1000)
			for i := range 50 {
				dev.Fill(v, float64(g*1000+i))
			}
			raw := make([]byte, 4)
			if err := dev.Read(buf, 3996, raw); err != nil {
				done <- err
				return
			}
			if got := math.Float32frombits(binary.LittleEndian.Uint32(raw)); got != float32(g*1000+49) {
				done <- errors.New("goroutine saw another's value")
				return
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
