package remote_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"net"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/remote"
)

// A server lends its CPU on a loopback port; a client allocates a buffer
// there, queues two kernels without waiting, and reads the result back.
func Example() {
	srv, err := remote.NewServer(remote.ServerConfig{Token: "example-token"})
	if err != nil {
		panic(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(l)
	defer srv.Stop()

	b, err := remote.Dial(l.Addr().String(), "cpu:0", remote.Options{Token: "example-token"})
	if err != nil {
		panic(err)
	}
	defer b.Close()
	fmt.Println("kind:", b.Info().Kind)

	buf, _ := b.Alloc(backends.Float64, 3)
	v := backends.Contiguous(buf, backends.Float64, 3)
	b.Fill(v, 2)                                  // queued
	b.BinaryScalar(backends.Pow, v, v, 10, false) // queued: 2¹⁰
	out := make([]byte, 24)
	if err := b.Read(buf, 0, out); err != nil { // sends the batch, waits
		panic(err)
	}
	fmt.Println(math.Float64frombits(binary.LittleEndian.Uint64(out)))

	_, err = remote.Dial(l.Addr().String(), "cpu:0", remote.Options{Token: "guess"})
	fmt.Println("wrong token refused:", err != nil)
	// Output:
	// kind: remote
	// 1024
	// wrong token refused: true
}
