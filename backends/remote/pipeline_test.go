package remote_test

import (
	"testing"
	"time"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/backends/remote"
)

// matmulSpy is a server-side CPU backend that reports each Matmul it runs.
type matmulSpy struct {
	backends.Backend
	ran chan struct{}
}

func (s *matmulSpy) Matmul(out, a, b backends.View) {
	s.Backend.Matmul(out, a, b)
	s.ran <- struct{}{}
}

// TestLongKernelsAreSentBeforeASyncPoint: light calls wait in the client's
// batch until a sync point (no frame leaves), while a batch holding
// milliseconds of work (a 256×1024·1024×256 product) goes out with the
// next call, so that the server runs it while the client goes on
// recording, and no Sync or Read is needed for it to start.
func TestLongKernelsAreSentBeforeASyncPoint(t *testing.T) {
	spy := &matmulSpy{Backend: cpu.New(0), ran: make(chan struct{}, 4)}
	_, addr := startServer(t, &remote.ServerConfig{Token: testToken,
		Open: func(string, int) (backends.Backend, error) { return spy, nil }})
	c := dial(t, addr)
	_, frames0, _, _ := remote.WireCounts(c)
	small, _ := c.Alloc(backends.Float32, 16)
	sv := backends.Contiguous(small, backends.Float32, 4, 4)
	c.Fill(sv, 1)
	c.Matmul(sv, sv, sv)
	c.Fill(sv, 2)
	if _, frames, _, _ := remote.WireCounts(c); frames != frames0 {
		t.Fatalf("light calls sent %d frames before a sync point, want none", frames-frames0)
	}
	if err := c.Sync(); err != nil {
		t.Fatal(err)
	}
	<-spy.ran // the small product, run at the Sync

	a, _ := c.Alloc(backends.Float32, 256*1024)
	bb, _ := c.Alloc(backends.Float32, 1024*256)
	out, _ := c.Alloc(backends.Float32, 256*256)
	av := backends.Contiguous(a, backends.Float32, 256, 1024)
	bv := backends.Contiguous(bb, backends.Float32, 1024, 256)
	ov := backends.Contiguous(out, backends.Float32, 256, 256)
	c.Fill(av, 1)
	c.Fill(bv, 0.5)
	c.Matmul(ov, av, bv)
	c.Fill(sv, 3) // the next call sends the batch
	select {
	case <-spy.ran:
	case <-time.After(30 * time.Second):
		t.Fatal("a long product queued without a sync point did not reach the server in 30s")
	}
	got := make([]byte, 4)
	if err := c.Read(out, 0, got); err != nil || string(got) != string(f32bytes(512)) {
		t.Fatalf("product element: %v, % x, want 512", err, got)
	}
}
