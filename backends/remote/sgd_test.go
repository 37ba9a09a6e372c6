package remote_test

import (
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/remote"
	"github.com/kiln-ml/kiln/tensor"
)

// sgdSteps takes three in-place SGD steps with momentum (the first makes
// the buffer, the others update it) on dev and returns the parameter and
// buffer after the last.
func sgdSteps(dev tensor.Device, dtype tensor.DType, cfg tensor.SGDConfig) (p, buf []float64) {
	dev = dev.NoGrad()
	dev.Seed(3)
	param := tensor.Randn(dev, 17, 9).To(dtype)
	var st tensor.SGDState
	for step := 1; step <= 3; step++ {
		g := tensor.Randn(dev, 17, 9).MulScalar(float64(step)).To(dtype)
		param, st = tensor.SGDStep(param, g, st, cfg)
	}
	return param.Float64s(), st.MomentumBuffer.Float64s()
}

// TestSGDStepRemotelyAsLocally: a remote CPU forwards backends.SGDFusion,
// and its updates are the local CPU's bit for bit.
func TestSGDStepRemotelyAsLocally(t *testing.T) {
	_, addr := startServer(t, nil)
	t.Setenv(remote.EnvToken, testToken)
	t.Setenv(remote.EnvCA, "")
	dev, err := tensor.OpenURL("remote://" + addr + "/cpu:0")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := dev.Backend().(backends.SGDFusion); !ok {
		t.Errorf("remote CPU backend %T does not forward SGDFusion", dev.Backend())
	}
	cfgs := []tensor.SGDConfig{
		{LR: 0.1, Momentum: 0.9, InPlace: true},
		{LR: 0.05, Momentum: 0.8, WeightDecay: 0.01, Nesterov: true, Maximize: true},
		{LR: 0.05, Momentum: 0.7, Dampening: 0.2, WeightDecay: 0.1, InPlace: true},
	}
	for _, dtype := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for i, cfg := range cfgs {
			wantP, wantB := sgdSteps(tensor.CPU(), dtype, cfg)
			gotP, gotB := sgdSteps(dev, dtype, cfg)
			for j := range wantP {
				if math.Float64bits(gotP[j]) != math.Float64bits(wantP[j]) || math.Float64bits(gotB[j]) != math.Float64bits(wantB[j]) {
					t.Fatalf("%s config %d element %d: remote parameter %v and buffer %v, local %v and %v",
						dtype, i, j, gotP[j], gotB[j], wantP[j], wantB[j])
				}
			}
		}
	}
	if err := dev.Sync(); err != nil {
		t.Fatal(err)
	}
}
