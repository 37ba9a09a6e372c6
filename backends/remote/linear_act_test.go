package remote_test

import (
	"math"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/backends/remote"
	"github.com/kiln-ml/kiln/tensor"
)

// withoutLinearAct is a CPU backend with every fused interface a Fused
// remote backend forwards but backends.LinearActFusion, as a server's
// device without the fused linear activation has them.
type withoutLinearAct struct {
	backends.Backend
	backends.CrossEntropyFusion
	backends.AdamFusion
	backends.MultiAdamFusion
	backends.LinearFusion
	backends.SGDFusion
}

// linearActs runs tensor.LinearActivation forward and backward on dev for
// each activation and returns the outputs and the gradients of x, w and b.
func linearActs(dev tensor.Device, dtype tensor.DType) [][]float64 {
	var got [][]float64
	for _, act := range []string{"relu", "gelu", "silu"} {
		d := dev.Autodiff()
		d.Seed(7)
		x := tensor.Randn(d, 37, 19).To(dtype).RequireGrad()
		w := tensor.Randn(d, 23, 19).To(dtype).RequireGrad()
		b := tensor.Randn(d, 23).To(dtype).RequireGrad()
		y := tensor.LinearActivation(x, w, b, act)
		g := y.Sum().Backward()
		got = append(got, y.Float64s(), g.Get(x).Float64s(), g.Get(w).Float64s(), g.Get(b).Float64s())
	}
	return got
}

// TestLinearActivationRemotelyAsLocally: a remote CPU forwards
// backends.LinearActFusion, and a server whose device lacks it gets
// MatmulBias and Unary instead; both give the local CPU's bits, forward
// and backward. An op the fused call does not take is refused with an
// error naming it, as the CPU backend refuses it.
func TestLinearActivationRemotelyAsLocally(t *testing.T) {
	local := cpu.New(0)
	_, withAct := startServer(t, nil)
	_, without := startServer(t, &remote.ServerConfig{Token: testToken, Open: func(string, int) (backends.Backend, error) {
		return withoutLinearAct{local, local, local, local, local, local}, nil
	}})
	t.Setenv(remote.EnvToken, testToken)
	t.Setenv(remote.EnvCA, "")
	for _, addr := range []string{withAct, without} {
		dev, err := tensor.OpenURL("remote://" + addr + "/cpu:0")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := dev.Backend().(backends.LinearActFusion); !ok {
			t.Fatalf("remote CPU backend %T does not implement LinearActFusion", dev.Backend())
		}
		for _, dtype := range []tensor.DType{tensor.Float32, tensor.Float64} {
			want, got := linearActs(tensor.CPU(), dtype), linearActs(dev, dtype)
			for i := range want {
				for j := range want[i] {
					if math.Float64bits(got[i][j]) != math.Float64bits(want[i][j]) {
						t.Fatalf("server %s, %s, result %d element %d: remote %v, local %v", addr, dtype, i, j, got[i][j], want[i][j])
					}
				}
			}
		}
		if err := dev.Sync(); err != nil {
			t.Fatal(err)
		}
		// a bad op, straight to the backend (tensor checks it first)
		b := dial(t, addr).Decorated()
		buf := func(n int) backends.View {
			m, err := b.Alloc(backends.Float32, n)
			if err != nil {
				t.Fatal(err)
			}
			return backends.Contiguous(m, backends.Float32, n)
		}
		out, pre, x, w, bias := buf(6), buf(6), buf(6), buf(9), buf(3)
		out.Shape, pre.Shape, x.Shape, w.Shape, bias.Shape = []int{2, 3}, []int{2, 3}, []int{2, 3}, []int{3, 3}, []int{3}
		out.Strides, pre.Strides, x.Strides, w.Strides = []int{3, 1}, []int{3, 1}, []int{3, 1}, []int{3, 1}
		b.(backends.LinearActFusion).MatmulBiasAct(out, pre, x, w, bias, backends.Exp)
		if err := b.Sync(); err == nil || !strings.Contains(err.Error(), "MatmulBiasAct") || !strings.Contains(err.Error(), "exp") {
			t.Errorf("server %s: MatmulBiasAct with exp: error %v, want one naming MatmulBiasAct and exp", addr, err)
		}
	}
}
