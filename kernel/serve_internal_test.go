package kernel

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestPageTarget(t *testing.T) {
	cases := []struct {
		code, name string
		ok         bool
	}{
		{"tensor.Zeros?", "tensor.Zeros", true},
		{"?tensor.Zeros", "tensor.Zeros", true},
		{"  x??\n", "x", true},
		{"??fmt.Println", "fmt.Println", true},
		{"größe?", "größe", true},
		{"x", "", false},
		{"?x?", "", false},
		{"x ? y", "", false},
		{"f()?", "", false},
		{"x := 1?", "", false},
		{"?", "", false},
		{"x???", "", false},
	}
	for _, c := range cases {
		name, ok := pageTarget(c.code)
		if name != c.name || ok != c.ok {
			t.Errorf("pageTarget(%q) = %q, %v; want %q, %v", c.code, name, ok, c.name, c.ok)
		}
	}
}

func TestWatchParent(t *testing.T) {
	t.Run("parent gone", func(t *testing.T) {
		stopped := make(chan struct{})
		go watchParent(context.Background(), os.Getppid()+1, time.Millisecond, func() { close(stopped) })
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			t.Fatal("a changed parent pid did not stop the kernel")
		}
	})
	t.Run("parent alive", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			watchParent(ctx, os.Getppid(), time.Millisecond, func() { t.Error("stopped while the parent lives") })
			close(done)
		}()
		time.Sleep(20 * time.Millisecond)
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("watchParent did not return when ctx ended")
		}
	})
}
