package remote_test

import (
	"net"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/backends/remote"
)

const testToken = "s3cret-token"

// startServer serves a private CPU backend on a loopback port until the
// test ends. cfg may be nil.
func startServer(t testing.TB, cfg *remote.ServerConfig) (*remote.Server, string) {
	t.Helper()
	c := remote.ServerConfig{Token: testToken}
	if cfg != nil {
		c = *cfg
	}
	if c.Open == nil {
		local := cpu.New(0)
		c.Open = func(kind string, index int) (backends.Backend, error) {
			if kind == "cpu" && index == 0 {
				return local, nil
			}
			drv, err := backends.Lookup(kind)
			if err != nil {
				return nil, err
			}
			return drv.Open(index)
		}
	}
	srv, err := remote.NewServer(c)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	return srv, l.Addr().String()
}

// dial opens cpu:0 on addr with the test token, closed when the test ends.
func dial(t testing.TB, addr string) *remote.Backend {
	t.Helper()
	b, err := remote.Dial(addr, "cpu:0", remote.Options{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
