package nn_test

import (
	"errors"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
)

// loraLayer builds the layer of a lora.json case on dev in dtype dt, with
// the fixture's base weights, and returns it with a forward function.
func loraLayer(t *testing.T, name string, c testutil.FixtureCase, dev tensor.Device, dt tensor.DType) (any, func(l *nn.LoRA, x *tensor.Tensor) *tensor.Tensor) {
	t.Helper()
	get := func(k string) *tensor.Tensor { return c[k].Tensor(dev).To(dt).Detach() }
	load := func(m any, sd map[string]*tensor.Tensor) {
		if _, _, err := nn.LoadStateDict(m, sd); err != nil {
			t.Fatal(err)
		}
	}
	switch {
	case strings.HasPrefix(name, "linear"):
		lin := nn.NewLinear(dev, 6, 5, nn.LinearConfig{DType: dt})
		load(lin, map[string]*tensor.Tensor{"weight": get("W"), "bias": get("b")})
		return lin, func(l *nn.LoRA, x *tensor.Tensor) *tensor.Tensor { return l.Forward(x) }
	case name == "conv2d":
		conv := nn.NewConv2d(dev, 3, 4, 3, nn.ConvConfig{Stride: []int{2}, Padding: []int{1}, DType: dt})
		load(conv, map[string]*tensor.Tensor{"weight": get("W"), "bias": get("b")})
		return conv, func(l *nn.LoRA, x *tensor.Tensor) *tensor.Tensor { return l.Forward(x) }
	default:
		mha := nn.NewMultiHeadAttention(dev, 8, 2, nn.MultiHeadAttentionConfig{BatchFirst: true, DType: dt})
		load(mha, map[string]*tensor.Tensor{"in_proj_weight": get("W"), "in_proj_bias": get("b"),
			"out_proj.weight": get("Wo"), "out_proj.bias": get("bo")})
		return mha, func(l *nn.LoRA, x *tensor.Tensor) *tensor.Tensor {
			var y *tensor.Tensor
			l.Run(func() { y, _ = mha.Forward(x, x, x, nn.AttentionOptions{SkipWeights: true}) })
			return y
		}
	}
}

// loraAdapters maps a case's adapter tensors to PEFT names: the layer is
// the root (path ""), attention's out_proj is "out_proj".
func loraAdapters(c testutil.FixtureCase, dev tensor.Device, dt tensor.DType) map[string]*tensor.Tensor {
	sd := map[string]*tensor.Tensor{
		"base_model.model.lora_A.weight": c["A"].Tensor(dev).To(dt).Detach(),
		"base_model.model.lora_B.weight": c["B"].Tensor(dev).To(dt).Detach(),
	}
	if _, ok := c["Ao"]; ok {
		sd["base_model.model.out_proj.lora_A.weight"] = c["Ao"].Tensor(dev).To(dt).Detach()
		sd["base_model.model.out_proj.lora_B.weight"] = c["Bo"].Tensor(dev).To(dt).Detach()
	}
	return sd
}

// TestLoRAMatchesPEFTFixtures checks outputs and the gradients of the input
// and of A and B against PEFT's LoRA forward written out in PyTorch
// (testdata/gen_lora.py), for Linear (2-D, 3-D, transposed and empty
// inputs), Conv2d and MultiHeadAttention with its out_proj, in float32 and
// float64 on every test device. The adapters are loaded under PEFT's names.
func TestLoRAMatchesPEFTFixtures(t *testing.T) {
	cases := testutil.LoadFixtures(t, "lora.json")
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		c := cases[name]
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			t.Run(name+"/"+dt.String(), func(t *testing.T) {
				testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
					ad := dev.Autodiff()
					layer, forward := loraLayer(t, name, c, ad, dt)
					r := c["A"].Shape[0]
					l, err := nn.NewLoRA(layer, nn.LoRAConfig{Rank: r, Alpha: 2 * float64(r)})
					if err != nil {
						t.Fatal(err)
					}
					defer nn.Release(l)
					if err := l.LoadAdapterStateDict(loraAdapters(c, ad, dt)); err != nil {
						t.Fatal(err)
					}
					x := c["x"].Tensor(ad).To(dt).Detach().RequireGrad()
					in := x
					if name == "linear_t" {
						in = x.Transpose(0, 1)
					}
					y := forward(l, in)
					rtol, atol := 1e-10, 1e-10
					if dt == tensor.Float32 {
						rtol, atol = 1e-5, 1e-4
						if name == "attention" { // logits of a few units: softmax amplifies float32 rounding
							rtol, atol = 1e-3, 5e-3
						}
					}
					testutil.AssertClose(t, "y", y, c["y"], rtol, atol)
					g := y.Mul(c["gy"].Tensor(ad).To(dt)).Sum().Backward()
					testutil.AssertClose(t, "grad x", g.Get(x), c["grad.x"], rtol, atol)
					for key, path := range map[string]string{"A": "", "Ao": "out_proj"} {
						if _, ok := c[key]; !ok {
							continue
						}
						a := l.Adapters[path]
						testutil.AssertClose(t, "grad "+key, a.A.Grad(g), c["grad."+key], rtol, atol)
						bkey := "B" + strings.TrimPrefix(key, "A")
						gb := a.B.Grad(g).Reshape(c["grad."+bkey].Shape...)
						testutil.AssertClose(t, "grad "+bkey, gb, c["grad."+bkey], rtol, atol)
					}
				})
			})
		}
	}
}

// TestLoRAGradientsFiniteDifferences checks the gradients of the input, A
// and B of adapted Linear, Conv2d and attention layers by central
// differences.
func TestLoRAGradientsFiniteDifferences(t *testing.T) {
	cases := testutil.LoadFixtures(t, "lora.json")
	for _, name := range []string{"linear_3d", "conv2d", "attention"} {
		c := cases[name]
		t.Run(name, func(t *testing.T) {
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				layer, forward := loraLayer(t, name, c, dev.Autodiff(), tensor.Float64)
				l, err := nn.NewLoRA(layer, nn.LoRAConfig{Rank: c["A"].Shape[0], Alpha: 3})
				if err != nil {
					t.Fatal(err)
				}
				defer nn.Release(l)
				a := l.Adapters[""]
				a.A.Release()
				a.B.Release()
				f := func(in []*tensor.Tensor) *tensor.Tensor {
					a.A.Tensor, a.B.Tensor = in[1], in[2]
					return forward(l, in[0])
				}
				testutil.GradCheck(t, dev, f, c["x"].Tensor(dev), c["A"].Tensor(dev), c["B"].Tensor(dev))
			})
		})
	}
}

// pretrainedEncoder builds the base model of the fine-tuning test: a
// 4-layer transformer encoder (width 128, 4 heads, feed-forward 1024, no
// dropout) and a linear head over 4 classes, loaded from weights saved at
// path (a fresh model when path is "").
type encoderClassifier struct {
	Encoder *nn.TransformerEncoder `kiln:"encoder"`
	Head    *nn.Linear             `kiln:"head"`
}

func (m *encoderClassifier) Forward(x *tensor.Tensor) *tensor.Tensor {
	return m.Head.Forward(m.Encoder.Forward(x))
}

func newEncoderClassifier(ad tensor.Device) *encoderClassifier {
	var m *encoderClassifier
	tensor.NoScope(func() {
		layer := nn.NewTransformerEncoderLayer(ad, 128, 4, nn.TransformerLayerConfig{DimFeedforward: 1024, NoDropout: true, BatchFirst: true})
		m = &encoderClassifier{Encoder: nn.NewTransformerEncoder(layer, 4, nil), Head: nn.NewLinear(ad, 128, 4)}
	})
	return m
}

func classify(model nn.Module, x, y *tensor.Tensor) *tensor.Tensor {
	return nn.CrossEntropy(model.Forward(x).Reshape(-1, 4), y.Reshape(-1), nn.CrossEntropyOptions{})
}

func hostValues(t *testing.T, m any) map[string][]float64 {
	t.Helper()
	out := map[string][]float64{}
	tensor.Scope(func() {
		for k, v := range nn.StateDict(m) {
			out[k] = v.Float64s()
		}
	})
	return out
}

// TestLoRAFineTune is issue 22's check: a pretrained-style model (trained
// briefly, saved, loaded into a fresh model) fine-tuned on a new task with
// LoRA rank 8 on its attention projections trains at most 2% of its
// parameters, its loss falls, its base weights stay bit for bit, merging
// gives the same outputs within 1e-5, and the adapters saved alone under
// PEFT's names and loaded onto another fresh copy of the base model give
// the same outputs.
func TestLoRAFineTune(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.safetensors")
	ad := tensor.CPU().Autodiff()
	ad.Seed(1)
	x := tensor.Randn(ad, 8, 16, 128)
	pre := tensor.RandInt(ad, 0, 4, 8, 16)
	task := tensor.RandInt(ad, 0, 4, 8, 16)

	// Pretrain briefly on one task and save.
	{
		m := newEncoderClassifier(ad)
		opt := optim.NewAdamW(optim.AdamWConfig{LR: 1e-3})
		for range 3 {
			tensor.Scope(func() { opt.Step(m, classify(m, x, pre).Backward()) })
		}
		if err := store.SaveModel(m, base); err != nil {
			t.Fatal(err)
		}
		opt.ZeroState()
		nn.Release(m)
	}
	loadBase := func() *encoderClassifier {
		m := newEncoderClassifier(ad)
		if err := store.LoadModel(m, base); err != nil {
			t.Fatal(err)
		}
		return m
	}

	model := loadBase()
	defer nn.Release(model)
	before := hostValues(t, model)
	l, err := nn.NewLoRA(model, nn.LoRAConfig{Rank: 8, Alpha: 16, TargetModules: []string{"self_attn", "out_proj"}})
	if err != nil {
		t.Fatal(err)
	}
	trainable, total := 0, 0
	for _, np := range nn.TrainableParams(l) {
		trainable += np.Param.NumElements()
	}
	total = nn.NumParams(l)
	frac := float64(trainable) / float64(total)
	t.Logf("trainable %d of %d parameters (%.2f%%), %d adapters", trainable, total, 100*frac, len(l.Adapters))
	if frac > 0.02 || len(l.Adapters) != 8 {
		t.Fatalf("LoRA trains %.2f%% of the parameters with %d adapters, want ≤ 2%% with 8", 100*frac, len(l.Adapters))
	}

	opt := optim.NewAdamW(optim.AdamWConfig{LR: 5e-3})
	var losses []float64
	for range 15 {
		tensor.Scope(func() {
			loss := classify(l, x, task)
			opt.Step(l, loss.Backward())
			losses = append(losses, loss.Item())
		})
	}
	opt.ZeroState()
	t.Logf("fine-tuning losses %v", losses)
	if !(losses[len(losses)-1] < 0.8*losses[0]) {
		t.Errorf("fine-tuning loss went from %v to %v, want it to fall by a fifth", losses[0], losses[len(losses)-1])
	}
	after := hostValues(t, model)
	for k, v := range before {
		if !slices.Equal(v, after[k]) {
			t.Errorf("base weight %s changed during fine-tuning", k)
		}
	}

	nn.Eval(l)
	out := func(m nn.Module) []float64 {
		var o []float64
		tensor.Scope(func() { o = m.Forward(x).Float64s() })
		return o
	}
	adapted := out(l)
	l.Merge()
	merged := out(l)
	if !l.Merged() {
		t.Fatal("Merged false after Merge")
	}
	maxDiff := func(a, b []float64) float64 {
		d := 0.0
		for i := range a {
			d = math.Max(d, math.Abs(a[i]-b[i]))
		}
		return d
	}
	if d := maxDiff(adapted, merged); d > 1e-5 {
		t.Errorf("merged outputs differ from the adapted ones by %g", d)
	}
	if d := maxDiff(out(model), merged); d != 0 {
		t.Errorf("the merged base model alone differs from the merged LoRA by %g", d)
	}
	l.Unmerge()
	if d := maxDiff(adapted, out(l)); d > 1e-5 {
		t.Errorf("after Unmerge outputs differ from before Merge by %g", d)
	}
	restored := hostValues(t, model)
	for k, v := range before {
		if d := maxDiff(v, restored[k]); d > 1e-6 {
			t.Errorf("Unmerge left %s off by %g", k, d)
		}
	}

	// Save the adapters alone, under PEFT's names, and load them onto a
	// fresh copy of the base model.
	adapters := filepath.Join(dir, "adapter_model.safetensors")
	var werr error
	tensor.Scope(func() {
		werr = store.WriteSafetensors(adapters, l.AdapterStateDict(), map[string]string{"format": "pt"})
	})
	if werr != nil {
		t.Fatal(werr)
	}
	sd, _, err := store.ReadSafetensors(adapters, tensor.CPU())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range sd {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) != 16 || keys[0] != "base_model.model.encoder.layers.0.self_attn.lora_A.weight" ||
		keys[2] != "base_model.model.encoder.layers.0.self_attn.out_proj.lora_A.weight" {
		t.Fatalf("adapter file holds %v", keys)
	}
	if s := sd[keys[0]].Shape(); !slices.Equal(s, []int{8, 128}) {
		t.Errorf("lora_A of self_attn is %v, want [8 128]", s)
	}
	if s := sd[keys[1]].Shape(); !slices.Equal(s, []int{384, 8}) {
		t.Errorf("lora_B of self_attn is %v, want [384 8]", s)
	}
	cfg, err := l.AdapterConfigJSON("")
	if err != nil || !strings.Contains(string(cfg), `"peft_type": "LORA"`) || !strings.Contains(string(cfg), `"r": 8`) ||
		!strings.Contains(string(cfg), `"lora_alpha": 16`) || !strings.Contains(string(cfg), `"out_proj"`) {
		t.Errorf("adapter config %s, %v", cfg, err)
	}
	fresh := loadBase()
	defer nn.Release(fresh)
	l2, err := nn.NewLoRA(fresh, nn.LoRAConfig{Rank: 8, Alpha: 16, TargetModules: []string{"self_attn", "out_proj"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := l2.LoadAdapterStateDict(sd); err != nil {
		t.Fatal(err)
	}
	nn.Eval(l2)
	if d := maxDiff(adapted, out(l2)); d > 1e-6 {
		t.Errorf("reloaded adapters give outputs off by %g", d)
	}
}

func TestLoRAFreezesAndTargets(t *testing.T) {
	ad := tensor.CPU().Autodiff()
	seq := nn.NewSequential(nn.NewLinear(ad, 4, 8), nn.ReLU{}, nn.NewFlatten(0, -1), nn.NewLinear(ad, 24, 2))
	l, err := nn.NewLoRA(seq, nn.LoRAConfig{Rank: 2, TargetModules: []string{"0", "3"}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, np := range nn.TrainableParams(l) {
		names = append(names, np.Name)
	}
	want := []string{"adapters.0.lora_A", "adapters.0.lora_B", "adapters.3.lora_A", "adapters.3.lora_B"}
	if !slices.Equal(names, want) {
		t.Errorf("trainable %v, want %v", names, want)
	}
	for _, np := range nn.Params(seq) {
		if !np.Param.Frozen() {
			t.Errorf("%s not frozen", np.Name)
		}
	}
	a := l.Adapters["0"]
	if a.Scaling != 4 || a.B.Float64s()[0] != 0 {
		t.Errorf("scaling %v (want alpha 8 / rank 2), B starts %v", a.Scaling, a.B.Float64s()[0])
	}
	// PEFT's init: A ~ U(−1/√in, 1/√in) (Kaiming-uniform with a = √5), B zero.
	for _, v := range a.A.Float64s() {
		if math.Abs(v) > 1/math.Sqrt(4)+1e-7 {
			t.Fatalf("A value %v outside the Kaiming bound 1/√4", v)
		}
	}
	// A fresh adapter changes nothing: B is zero.
	x := tensor.Randn(ad, 3, 4)
	if d := l.Forward(x).Sub(seq.Forward(x)).Abs().Max().Item(); d != 0 {
		t.Errorf("a fresh adapter changed the output by %g", d)
	}
	nn.Eval(l)
	if l.Training() {
		t.Error("Eval left the LoRA training")
	}
	// Every supported layer when no target is given; a conv with dropout.
	all, err := nn.NewLoRA(nn.NewSequential(nn.NewConv2d(ad, 2, 3, 3), nn.NewLinear(ad, 3, 3)), nn.LoRAConfig{Dropout: 0.5})
	if err != nil || len(all.Adapters) != 2 || all.Adapters["0"].Kind != "conv" {
		t.Fatalf("default targets: %v, %v", err, all)
	}
	if s := all.Adapters["0"].B.Shape(); !slices.Equal(s, []int{3, 8, 1, 1}) {
		t.Errorf("conv lora_B %v, want [3 8 1 1]", s)
	}
	c1, err := nn.NewLoRA(nn.NewSequential(nn.NewConv1d(ad, 2, 3, 3)), nn.LoRAConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if s := c1.Adapters["0"].B.Shape(); !slices.Equal(s, []int{3, 8, 1}) {
		t.Errorf("conv1d lora_B %v, want [3 8 1]", s)
	}
	y := all.Forward(tensor.Randn(ad, 1, 2, 5, 5))
	if s := y.Shape(); !slices.Equal(s, []int{1, 3, 3, 3}) {
		t.Errorf("conv output %v", s)
	}
}

func TestLoRABadInput(t *testing.T) {
	ad := tensor.CPU().Autodiff()
	newSeq := func() nn.Sequential { return nn.NewSequential(nn.NewLinear(ad, 4, 4)) }
	cases := []struct {
		name string
		cfg  nn.LoRAConfig
		m    any
		want error
	}{
		{"negative rank", nn.LoRAConfig{Rank: -1}, newSeq(), tensor.ErrArgument},
		{"negative alpha", nn.LoRAConfig{Alpha: -2}, newSeq(), tensor.ErrArgument},
		{"dropout one", nn.LoRAConfig{Dropout: 1}, newSeq(), tensor.ErrArgument},
		{"no match", nn.LoRAConfig{TargetModules: []string{"q_proj"}}, newSeq(), tensor.ErrArgument},
		{"malformed pattern", nn.LoRAConfig{TargetModules: []string{"[a"}}, newSeq(), tensor.ErrArgument},
		{"nil model", nn.LoRAConfig{}, nil, tensor.ErrArgument},
		{"grouped conv", nn.LoRAConfig{}, nn.NewSequential(nn.NewConv2d(ad, 4, 4, 1, nn.ConvConfig{Groups: 2})), nn.ErrModule},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := nn.NewLoRA(c.m, c.cfg); !errors.Is(err, c.want) || !strings.Contains(err.Error(), "nn.NewLoRA") {
				t.Fatalf("got %v, want an nn.NewLoRA error wrapping %v", err, c.want)
			}
		})
	}
	l, err := nn.NewLoRA(newSeq(), nn.LoRAConfig{Rank: 2})
	if err != nil {
		t.Fatal(err)
	}
	good := l.AdapterStateDict()
	wrongShape := map[string]*tensor.Tensor{"base_model.model.0.lora_A.weight": tensor.Zeros(ad, 3, 4),
		"base_model.model.0.lora_B.weight": good["base_model.model.0.lora_B.weight"]}
	extra := map[string]*tensor.Tensor{"base_model.model.1.lora_A.weight": tensor.Zeros(ad, 2, 4)}
	for k, v := range good {
		extra[k] = v
	}
	for name, sd := range map[string]map[string]*tensor.Tensor{
		"missing":     {"base_model.model.0.lora_A.weight": good["base_model.model.0.lora_A.weight"]},
		"wrong shape": wrongShape,
		"unexpected":  extra,
	} {
		if err := l.LoadAdapterStateDict(sd); !errors.Is(err, nn.ErrStateDict) {
			t.Errorf("%s: got %v, want ErrStateDict", name, err)
		}
	}
	l.Merge()
	if err := l.LoadAdapterStateDict(good); !errors.Is(err, nn.ErrModule) {
		t.Errorf("loading while merged: got %v, want ErrModule", err)
	}
	if err := tensor.Try(func() { (&nn.LoRA{Model: struct{}{}}).Forward(tensor.Zeros(ad, 1)) }); !errors.Is(err, tensor.ErrArgument) {
		t.Errorf("Forward of a model without Forward: %v", err)
	}
}

// TestLoRADropout checks the adapters' dropout: in training mode the
// update of an adapter with dropout differs between forward passes (new
// masks of A's columns) while gradients still reach A and B; in evaluation
// mode there is none, and the output is the dropout-free one.
func TestLoRADropout(t *testing.T) {
	ad := tensor.CPU().Autodiff()
	ad.Seed(8)
	seq := nn.NewSequential(nn.NewLinear(ad, 16, 4))
	l, err := nn.NewLoRA(seq, nn.LoRAConfig{Rank: 4, Dropout: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(l)
	a := l.Adapters["0"]
	a.B.Assign(tensor.Randn(ad, 4, 4).Detach())
	x := tensor.Randn(ad, 3, 16)
	y1, y2 := l.Forward(x), l.Forward(x)
	if y1.Sub(y2).Abs().Max().Item() == 0 {
		t.Error("two training passes drew the same adapter dropout mask")
	}
	g := y1.Sum().Backward()
	if a.A.Grad(g) == nil || a.B.Grad(g) == nil {
		t.Fatal("no gradient for A or B with dropout")
	}
	nn.Eval(l)
	want := x.Matmul(seq[0].(*nn.Linear).Weight.T()).Add(seq[0].(*nn.Linear).Bias.Tensor).
		Add(x.Matmul(a.A.Detach().T()).Matmul(a.B.Detach().T()).MulScalar(a.Scaling))
	if d := l.Forward(x).Sub(want).Abs().Max().Item(); d > 1e-5 {
		t.Errorf("evaluation output off the dropout-free LoRA by %g", d)
	}
}

// TestLoRAWithCheckpointing trains LoRA adapters through a checkpointed
// encoder, the usual memory-lean pairing: the recomputation must use the
// adapted weights W + s·B·A of the forward pass (LoRA.Run has put W back
// by then), so the adapters' gradients equal those without checkpointing.
func TestLoRAWithCheckpointing(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		ad.Seed(6)
		enc := nn.NewTransformerEncoder(nn.NewTransformerEncoderLayer(ad, 8, 2,
			nn.TransformerLayerConfig{DimFeedforward: 16, Dropout: 0.2, BatchFirst: true}), 2, nil)
		defer nn.Release(enc)
		x := tensor.Randn(ad, 2, 5, 8)
		grads := func(m nn.Module) [][]float64 {
			l, err := nn.NewLoRA(m, nn.LoRAConfig{Rank: 2, TargetModules: []string{"self_attn", "linear1"}})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				for _, a := range l.Adapters {
					nn.Release(a)
				}
			}()
			ad.Seed(1) // the same adapters and dropout masks for both
			paths := make([]string, 0, len(l.Adapters))
			for p := range l.Adapters {
				paths = append(paths, p)
			}
			sort.Strings(paths)
			for _, p := range paths {
				a := l.Adapters[p]
				a.A.Assign(tensor.Randn(ad, a.A.Shape()...).To(a.A.DType()).Detach())
				a.B.Assign(tensor.Randn(ad, a.B.Shape()...).To(a.B.DType()).Detach())
			}
			g := l.Forward(x).Square().Sum().Backward()
			var out [][]float64
			for _, np := range nn.TrainableParams(l) {
				gp := np.Param.Grad(g)
				if gp == nil {
					t.Fatalf("%s: no gradient", np.Name)
				}
				out = append(out, gp.Float64s())
			}
			return out
		}
		plain := grads(enc)
		ckpt := grads(nn.NewCheckpointedEncoder(enc))
		if len(plain) != 8 || len(ckpt) != len(plain) {
			t.Fatalf("%d and %d adapter gradients, want 8", len(plain), len(ckpt))
		}
		for i := range plain {
			closeAll(t, "adapter gradient", ckpt[i], plain[i], 1e-5)
		}
	})
}
