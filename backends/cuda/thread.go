//go:build !kiln_nocuda

package cuda

import (
	"runtime"
	"sync"
)

// deviceThread runs closures one at a time, in submission order, on a single
// goroutine locked to its OS thread. A CUDA context is current per OS thread,
// so every driver, NVRTC and cuBLAS call for one GPU goes through its thread.
type deviceThread struct {
	work chan func()
	stop sync.Once
	done chan struct{}
}

// newDeviceThread starts the thread and runs init on it first.
func newDeviceThread(init func() error) (*deviceThread, error) {
	t := &deviceThread{work: make(chan func(), 1024), done: make(chan struct{})}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread holds the context
		defer close(t.done)
		errc <- init()
		for f := range t.work {
			f()
		}
	}()
	if err := <-errc; err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// post queues f and returns at once.
func (t *deviceThread) post(f func()) { t.work <- f }

// call runs f on the thread and waits for it.
func (t *deviceThread) call(f func()) {
	done := make(chan struct{})
	t.work <- func() { f(); close(done) }
	<-done
}

// close stops the thread after the queued work.
func (t *deviceThread) close() {
	t.stop.Do(func() { close(t.work) })
	<-t.done
}
