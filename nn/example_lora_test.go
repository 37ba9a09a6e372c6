package nn_test

import (
	"fmt"
	"sort"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// LoRA on the attention projections of a small transformer: the base model
// is frozen, only the adapters train, and the adapters alone are what a
// PEFT adapter_model.safetensors holds (store.WriteSafetensors writes the
// map). Merge folds them into the base weights.
func ExampleNewLoRA() {
	dev := tensor.CPU().Autodiff()
	dev.Seed(1)
	layer := nn.NewTransformerEncoderLayer(dev, 32, 4, nn.TransformerLayerConfig{DimFeedforward: 64, NoDropout: true, BatchFirst: true})
	model := nn.NewSequential(nn.NewTransformerEncoder(layer, 2, nil), nn.NewLinear(dev, 32, 3))

	lora, err := nn.NewLoRA(model, nn.LoRAConfig{Rank: 4, Alpha: 8, TargetModules: []string{"self_attn"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	trainable := 0
	for _, np := range nn.TrainableParams(lora) {
		trainable += np.Param.NumElements()
	}
	fmt.Printf("training %d of %d parameters\n", trainable, nn.NumParams(lora))

	x, y := tensor.Randn(dev, 4, 6, 32), tensor.RandInt(dev, 0, 3, 4*6)
	opt := optim.NewAdamW(optim.AdamWConfig{LR: 1e-2})
	for range 3 {
		tensor.Scope(func() {
			loss := nn.CrossEntropy(lora.Forward(x).Reshape(-1, 3), y, nn.CrossEntropyOptions{})
			opt.Step(lora, loss.Backward())
		})
	}

	var names []string
	for name, t := range lora.AdapterStateDict() {
		names = append(names, fmt.Sprint(name, " ", t.Shape()))
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Println(n)
	}

	nn.Eval(lora)
	before := lora.Forward(x)
	lora.Merge()
	diff := lora.Forward(x).Sub(before).Abs().Max().Item()
	fmt.Println("merged outputs within 1e-5:", diff < 1e-5)
	// Output:
	// training 1024 of 18211 parameters
	// base_model.model.0.layers.0.self_attn.lora_A.weight [4 32]
	// base_model.model.0.layers.0.self_attn.lora_B.weight [96 4]
	// base_model.model.0.layers.1.self_attn.lora_A.weight [4 32]
	// base_model.model.0.layers.1.self_attn.lora_B.weight [96 4]
	// merged outputs within 1e-5: true
}

// Gradient checkpointing of each layer of a transformer encoder: the same
// gradients as the plain encoder, for a fraction of the activation memory
// (each layer's activations are recomputed during Backward).
func ExampleNewCheckpointedEncoder() {
	dev := tensor.CPU().Autodiff()
	dev.Seed(2)
	layer := nn.NewTransformerEncoderLayer(dev, 16, 2, nn.TransformerLayerConfig{DimFeedforward: 32, BatchFirst: true})
	enc := nn.NewTransformerEncoder(layer, 4, nil)
	x := tensor.Randn(dev, 2, 10, 16)

	grad := func(m nn.Module) *tensor.Tensor {
		dev.Seed(7) // the same dropout masks for both runs
		g := m.Forward(x).Square().Mean().Backward()
		return enc.Layers[0].Linear1.Weight.Grad(g)
	}
	plain := grad(enc)
	checkpointed := grad(nn.NewCheckpointedEncoder(enc))
	fmt.Println("same gradients:", checkpointed.Sub(plain).Abs().Max().Item() < 1e-6)
	// Output:
	// same gradients: true
}
