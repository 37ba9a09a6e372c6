package sizeclass

import "testing"

func TestOf(t *testing.T) {
	for _, c := range []struct{ n, min, want int64 }{
		{0, 256, 256}, {1, 256, 256}, {256, 256, 256}, {257, 256, 512}, {1000, 512, 1024},
		{1 << 20, 512, 1 << 20}, {1<<20 + 1, 512, 2 << 20}, {5 << 20, 256, 6 << 20}, {6 << 20, 256, 6 << 20},
	} {
		if got := Of(c.n, c.min); got != c.want {
			t.Errorf("Of(%d, %d) = %d, want %d", c.n, c.min, got, c.want)
		}
	}
}
