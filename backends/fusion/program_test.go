package fusion_test

import (
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/backends/fusion"
)

// TestPlansAreReusedByStructure runs chains several times on new buffers:
// a chain of a structure seen before reuses its plan (and gives the same
// bits as a fresh one); a chain that differs in a scalar, in which buffer
// an op reads, in an offset or in whether an intermediate is freed is
// planned afresh.
func TestPlansAreReusedByStructure(t *testing.T) {
	const n = 3000
	xs, ys := tileInput(n), tileInput(n + 7)[28:]
	chain := func(s float64, readY, free bool, ofs int) func(e *chainEnv) {
		return func(e *chainEnv) {
			a, c := e.tmp(), e.tmp()
			if !free {
				e.temps = e.temps[:1] // c is not freed: it is written to memory
			}
			in := e.x
			if readY {
				in = e.y
			}
			e.be.Binary(backends.Mul, a, e.x, in)
			e.be.BinaryScalar(backends.Add, c, a, s, false)
			e.be.Binary(backends.Sub, e.out, c, e.y)
		}
	}
	fb := fusion.NewTiled(cpu.New(2), 1024)
	plain := cpu.New(1)
	cases := []struct {
		name  string
		chain func(e *chainEnv)
		ofs   int
		fresh bool
	}{
		{"first run", chain(0.5, false, true, 0), 0, true},
		{"same structure", chain(0.5, false, true, 0), 0, false},
		{"same structure again", chain(0.5, false, true, 0), 0, false},
		{"another scalar", chain(0.25, false, true, 0), 0, true},
		{"another input", chain(0.5, true, true, 0), 0, true},
		{"an intermediate kept", chain(0.5, false, false, 0), 0, true},
		{"another offset", chain(0.5, false, true, 0), 3, true},
		{"the first structure once more", chain(0.5, false, true, 0), 0, false},
	}
	for _, tc := range cases {
		before := fb.Stats().Compiled
		want := runChain(t, plain, n, tc.ofs, xs, ys, tc.chain)
		got := runChain(t, fb, n, tc.ofs, xs, ys, tc.chain)
		compareF32(t, tc.name, want, got, xs)
		if fresh := fb.Stats().Compiled > before; fresh != tc.fresh {
			t.Errorf("%s: planned afresh %v, want %v", tc.name, fresh, tc.fresh)
		}
	}
}
