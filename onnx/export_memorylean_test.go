package onnx_test

import (
	"path/filepath"
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// TestExportCheckpointedAndLoRA exports models built with the memory-lean
// training wrappers of package nn: checkpointed layers (a
// CheckpointedSequential with a dropout, whose mode it follows, and a
// Checkpointed module, both left in training mode; Export traces in evaluation mode, where checkpointing steps aside, so
// no "checkpoint" node reaches the graph) and a LoRA-adapted model, whose
// adapted weights W + s·B·A are exported as graph ops over the base
// weights and the adapters, and, merged, as plain weights. Each file is
// loaded back with onnx.Load and must give Kiln's outputs.
func TestExportCheckpointedAndLoRA(t *testing.T) {
	ad := tensor.CPU().Autodiff()
	ad.Seed(4)
	seq := nn.NewSequential(nn.NewLinear(ad, 6, 8), nn.NewDropout(0.1), nn.GELU{}, nn.NewLinear(ad, 8, 3))
	plain := nn.NewSequential(nn.NewLinear(ad, 6, 8), nn.Tanh{}, nn.NewLinear(ad, 8, 3))
	loraBase := nn.NewSequential(nn.NewLinear(ad, 6, 8), nn.ReLU{}, nn.NewLinear(ad, 8, 3))
	lora, err := nn.NewLoRA(loraBase, nn.LoRAConfig{Rank: 2, Alpha: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range lora.Adapters { // trained-looking adapters: B ≠ 0
		a.B.Assign(tensor.Randn(ad, a.B.Shape()...).MulScalar(0.1).Detach())
	}
	defer nn.Release(seq)
	defer nn.Release(plain)
	defer nn.Release(lora)
	models := []struct {
		name  string
		model nn.Module
		input []int
		merge bool
	}{
		{"checkpointed sequential", nn.CheckpointedSequential(seq), []int{2, 6}, false},
		{"checkpointed module", nn.NewCheckpointed(plain), []int{2, 6}, false},
		{"lora", lora, []int{2, 6}, false},
		{"lora merged", lora, []int{2, 6}, true},
	}
	for _, m := range models {
		t.Run(m.name, func(t *testing.T) {
			if m.merge {
				lora.Merge()
				defer lora.Unmerge()
			}
			path := filepath.Join(t.TempDir(), "model.onnx")
			x := tensor.Randn(tensor.CPU(), m.input...)
			if err := onnx.Export(m.model, x, path); err != nil {
				t.Fatal(err)
			}
			if !nn.IsTraining(m.model) {
				t.Error("Export left the model in evaluation mode")
			}
			loaded, err := onnx.Load(path, tensor.CPU())
			if err != nil {
				t.Fatal(err)
			}
			nn.Eval(m.model)
			defer nn.Train(m.model)
			tensor.Scope(func() {
				want := m.model.Forward(x).Float64s()
				got := loaded.Forward(x).Float64s()
				if len(got) != len(want) {
					t.Fatalf("%d outputs, want %d", len(got), len(want))
				}
				for i := range want {
					if d := got[i] - want[i]; d > 1e-5 || d < -1e-5 {
						t.Fatalf("output %d: %v from ONNX, %v from Kiln", i, got[i], want[i])
					}
				}
			})
		})
	}
}
