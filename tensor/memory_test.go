package tensor_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/strict"
	"github.com/kiln-ml/kiln/tensor"
)

func TestScopeReleasesTemporariesAndKeeps(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		before := dev.MemoryStats().LiveBytes
		var kept, inner *tensor.Tensor
		tensor.Scope(func() {
			a := tensor.Ones(dev, 100)
			b := a.Add(a)
			kept = b.MulScalar(3).Keep()
			inner = b
		})
		if !inner.Released() || kept.Released() {
			t.Fatalf("after Scope: temporary released=%v, kept released=%v", inner.Released(), kept.Released())
		}
		r := tensor.ScopeResult(func() *tensor.Tensor { return tensor.Full(dev, 2, 3).Square() })
		tensor.Scope(func() {
			if got := kept.Sum().Item(); got != 600 {
				t.Fatalf("kept tensor sum %v, want 600", got)
			}
			if r.Released() || r.Sum().Item() != 12 {
				t.Fatal("ScopeResult lost its result")
			}
		})
		kept.Release()
		r.Release()
		if after := dev.MemoryStats().LiveBytes; after != before {
			t.Fatalf("live bytes %d after, %d before", after, before)
		}
	})
}

func TestNestedScopeKeepMovesOut(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		var x *tensor.Tensor
		tensor.Scope(func() {
			tensor.Scope(func() { x = tensor.Ones(dev, 4).Keep() })
			if x.Released() {
				t.Fatal("kept tensor released by the inner scope")
			}
		})
		if !x.Released() {
			t.Fatal("kept tensor not released by the outer scope")
		}
	})
}

func TestScopeReleasesOnPanic(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		var x *tensor.Tensor
		err := tensor.Try(func() {
			tensor.Scope(func() {
				x = tensor.Ones(dev, 4)
				tensor.Ones(dev, 2, 3).Matmul(tensor.Ones(dev, 2, 3)) // shape error
			})
		})
		if !errors.Is(err, tensor.ErrShape) {
			t.Fatalf("got %v", err)
		}
		if !x.Released() {
			t.Fatal("tensor created before the panic was not released")
		}
	})
}

func TestScopeIgnoresOtherGoroutines(t *testing.T) {
	dev := tensor.CPU()
	done := make(chan *tensor.Tensor)
	var other *tensor.Tensor
	tensor.Scope(func() {
		go func() { done <- tensor.Ones(dev, 8) }()
		other = <-done
	})
	if other.Released() {
		t.Fatal("a tensor created by another goroutine was released by this goroutine's scope")
	}
	other.Release()
}

func TestTrainingStepMemoryIsFlat(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		ad.Seed(3)
		w := tensor.Randn(ad, 32, 16).RequireGrad()
		x := tensor.Randn(ad, 64, 32)
		var live []int64
		for step := range 50 {
			tensor.Scope(func() {
				l := x.Matmul(w).Tanh().Square().Mean()
				g := l.Backward()
				w.Assign(w.Detach().Sub(g.Get(w).MulScalar(0.1)))
			})
			if step >= 1 {
				live = append(live, dev.MemoryStats().LiveBytes)
			}
		}
		for _, b := range live {
			if b > live[0] { // others' garbage may be freed meanwhile; growth is the bug
				t.Fatalf("live bytes grew across steps: %v", live)
			}
		}
	})
}

func TestMemoryBudgetIsAnError(t *testing.T) {
	dev := tensor.MustDevice("strict")
	old := dev.MemoryStats().BudgetBytes
	defer dev.SetMemoryBudget(old)
	dev.SetMemoryBudget(dev.MemoryStats().LiveBytes + 1000)
	err := tensor.Try(func() { tensor.Zeros(dev, 1000) })
	if !errors.Is(err, tensor.ErrOutOfMemory) {
		t.Fatalf("allocating past the budget: %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "3.9 KiB") || !strings.Contains(msg, "budget") {
		t.Fatalf("error should name the request and the budget: %s", msg)
	}
	// Within budget still works.
	tensor.Zeros(dev, 10).Release()
}

func TestReleasedTensorIsRefused(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := tensor.Ones(dev, 3)
		v := x.Reshape(3, 1) // a view keeps the storage alive
		x.Release()
		if got := v.Sum().Item(); got != 3 {
			t.Fatalf("view of a released tensor: sum %v, want 3", got)
		}
		for _, f := range []func(){func() { x.Float32s() }, func() { x.Add(v) }, func() { x.Reshape(3) }} {
			if err := tensor.Try(f); !errors.Is(err, tensor.ErrReleased) {
				t.Fatalf("use after release: %v", err)
			}
		}
	})
}

// TestStrictCatchesPlantedUseAfterFree frees a buffer and then queues a
// kernel that reads it, as a tensor-layer bug would, and checks that the
// strict backend refuses the kernel and reports it at the next sync.
func TestStrictCatchesPlantedUseAfterFree(t *testing.T) {
	dev := tensor.MustDevice("strict")
	be := dev.Backend()
	defer strict.Default().ClearError()
	src, _ := be.Alloc(tensor.Float32, 16)
	dst, _ := be.Alloc(tensor.Float32, 16)
	defer be.Free(dst)
	be.Free(src)
	be.Copy(backends.Contiguous(dst, tensor.Float32, 16), backends.Contiguous(src, tensor.Float32, 16))
	err := dev.Sync()
	if err == nil || !strings.Contains(err.Error(), "after it was freed") || !strings.Contains(err.Error(), "memory_test.go") {
		t.Fatalf("strict backend did not catch the use after free: %v", err)
	}
}

// TestStrictCatchesPlantedLeak leaves a tensor unreleased and checks that
// the leak check finds it, naming this test as where it was allocated.
func TestStrictCatchesPlantedLeak(t *testing.T) {
	dev := tensor.MustDevice("strict")
	mark := strict.Default().Mark()
	leaked := tensor.Ones(dev, 64)
	leaks := strict.Default().LiveSince(mark)
	if len(leaks) != 1 || !strings.Contains(leaks[0].Site, "TestStrictCatchesPlantedLeak") {
		t.Fatalf("leak check found %v", leaks)
	}
	leaked.Release()
	if l := strict.Default().LiveSince(mark); len(l) != 0 {
		t.Fatalf("after release: %v", l)
	}
}

func TestNoScopeEscapesEnclosingScope(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		var owned, temp, kept *tensor.Tensor
		tensor.Scope(func() {
			tensor.NoScope(func() {
				owned = tensor.Ones(dev, 3)
				tensor.Scope(func() {
					temp = tensor.Ones(dev, 3)
					kept = tensor.Ones(dev, 3).Keep()
				})
			})
		})
		if owned.Released() || kept.Released() || !temp.Released() {
			t.Fatalf("owned released=%v kept released=%v temp released=%v", owned.Released(), kept.Released(), temp.Released())
		}
		owned.Release()
		kept.Release()
	})
}

// TestUnreleasedTensorsAreCollected drops tensors without releasing them:
// one made outside any scope and one kept out of every scope (scoped
// tensors get the collector's clean-up only then); both storages must be
// freed once the garbage collector has run.
func TestUnreleasedTensorsAreCollected(t *testing.T) {
	dev := tensor.CPU()
	base := dev.MemoryStats().LiveBytes
	func() {
		_ = tensor.Zeros(dev, 1000, 100) // outside any scope
		tensor.Scope(func() {
			tensor.Scope(func() { tensor.Ones(dev, 1000, 100).Keep().Keep() })
		})
	}()
	for range 20 {
		runtime.GC()
		if dev.MemoryStats().LiveBytes <= base {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("live bytes %d after collection, %d before the tensors were made", dev.MemoryStats().LiveBytes, base)
}
