package nn_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// mhaRun runs m on a fixture's inputs: "x" (self-attention: one tensor as
// query, key and value) or "q", "k" and "v" (v defaults to k, the same
// tensor), with the fixture's masks and the options o.
func mhaRun(m *nn.MultiHeadAttention, o nn.AttentionOptions) seqRun {
	return func(in map[string]*tensor.Tensor) map[string]*tensor.Tensor {
		q, k, v := in["q"], in["k"], in["v"]
		if x := in["x"]; x != nil {
			q, k, v = x, x, x
		} else if v == nil {
			v = k
		}
		o.AttentionMask, o.KeyPaddingMask = in["attn_mask"], in["key_padding_mask"]
		out, w := m.Forward(q, k, v, o)
		res := map[string]*tensor.Tensor{"out": out}
		if w != nil {
			res["weights"] = w
		}
		return res
	}
}

// TestMultiHeadAttentionMatchesPyTorch checks outputs, attention weights
// and gradients against torch.nn.MultiheadAttention.
func TestMultiHeadAttentionMatchesPyTorch(t *testing.T) {
	fixtures := testutil.LoadFixtures(t, "seq_attention.json")
	cases := []struct {
		name  string
		heads int
		cfg   nn.MultiHeadAttentionConfig
		opts  nn.AttentionOptions
	}{
		{"mha_self", 2, nn.MultiHeadAttentionConfig{}, nn.AttentionOptions{}},
		{"mha_cross_batch_first_per_head", 2, nn.MultiHeadAttentionConfig{BatchFirst: true}, nn.AttentionOptions{PerHeadWeights: true}},
		{"mha_bool_masks", 2, nn.MultiHeadAttentionConfig{}, nn.AttentionOptions{}},
		{"mha_float_mask_per_head", 4, nn.MultiHeadAttentionConfig{BatchFirst: true}, nn.AttentionOptions{SkipWeights: true}},
		{"mha_unbatched_padding", 2, nn.MultiHeadAttentionConfig{}, nn.AttentionOptions{}},
		{"mha_no_bias", 2, nn.MultiHeadAttentionConfig{NoBias: true}, nn.AttentionOptions{}},
		{"mha_causal_padding", 2, nn.MultiHeadAttentionConfig{BatchFirst: true}, nn.AttentionOptions{SkipWeights: true, IsCausal: true}},
	}
	if len(cases) != len(fixtures) {
		t.Errorf("%d cases for %d fixtures", len(cases), len(fixtures))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fc, ok := fixtures[c.name]
			if !ok {
				t.Fatalf("no fixture %s", c.name)
			}
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				m := nn.NewMultiHeadAttention(dev.Autodiff(), 8, c.heads, c.cfg)
				nn.Eval(m)
				checkSeqFixture(t, dev, fc, m, mhaRun(m, c.opts), 1e-5, 1e-6)
			})
		})
	}
}

// TestMultiHeadAttentionParams checks PyTorch's names, shapes and
// initialisation.
func TestMultiHeadAttentionParams(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m := nn.NewMultiHeadAttention(dev, 16, 4)
		var got []string
		for _, np := range nn.Params(m) {
			got = append(got, fmt.Sprint(np.Name, np.Param.Shape()))
		}
		want := "[in_proj_weight[48 16] in_proj_bias[48] out_proj.weight[16 16] out_proj.bias[16]]"
		if fmt.Sprint(got) != want {
			t.Errorf("params %v, want %s", got, want)
		}
		bound := math.Sqrt(6.0 / (16 + 48)) // Xavier-uniform on [3E, E]
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range m.InProjWeight.Float64s() {
			lo, hi = min(lo, v), max(hi, v)
		}
		if lo < -bound || hi > bound || hi-lo < bound {
			t.Errorf("in_proj_weight in [%v, %v], want spread over ±%v", lo, hi, bound)
		}
		for _, p := range []*nn.Param{m.InProjBias, m.OutProj.Bias} {
			if p.Abs().Max().Item() != 0 {
				t.Errorf("biases must start at zero")
			}
		}
		nb := nn.NewMultiHeadAttention(dev, 16, 4, nn.MultiHeadAttentionConfig{NoBias: true})
		if n := len(nn.Params(nb)); n != 2 {
			t.Errorf("NoBias: %d params, want 2", n)
		}
	})
}

// TestKVCacheMatchesCausalAttention feeds a sequence in pieces through a
// KV cache and checks that the outputs equal one causal call over the
// whole sequence, and that the cache survives the Scopes of the steps.
func TestKVCacheMatchesCausalAttention(t *testing.T) {
	for _, batchFirst := range []bool{false, true} {
		t.Run(fmt.Sprint("batch_first=", batchFirst), func(t *testing.T) {
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				dev.Seed(5)
				const n, l, e = 2, 6, 8
				m := nn.NewMultiHeadAttention(dev, e, 2, nn.MultiHeadAttentionConfig{BatchFirst: batchFirst})
				x := tensor.Randn(dev, l, n, e) // [L, N, E]
				seqDim := 0
				if batchFirst {
					x = x.Transpose(0, 1).Contiguous()
					seqDim = 1
				}
				full, fullW := m.Forward(x, x, x, nn.AttentionOptions{IsCausal: true})
				var cache nn.KVCache
				var pieces, weights []*tensor.Tensor
				for _, span := range [][2]int{{0, 1}, {1, 3}, {3, 4}, {4, 6}} {
					tensor.Scope(func() {
						xs := x.Narrow(seqDim, span[0], span[1]-span[0])
						out, w := m.Forward(xs, xs, xs, nn.AttentionOptions{IsCausal: true, Cache: &cache})
						pieces = append(pieces, out.Keep())
						weights = append(weights, w.Keep())
					})
					if cache.Len() != span[1] {
						t.Fatalf("cache holds %d positions after %v", cache.Len(), span)
					}
				}
				got := tensor.Cat(pieces, seqDim)
				testutil.AssertValues(t, "incremental output", got, full.Shape(), full.Float64s(), 1e-5, 1e-6)
				// The weights of step [a, b) are rows a..b of the full weights, over keys 0..b.
				for i, span := range [][2]int{{0, 1}, {1, 3}, {3, 4}, {4, 6}} {
					want := fullW.Narrow(1, span[0], span[1]-span[0]).Narrow(2, 0, span[1])
					testutil.AssertValues(t, fmt.Sprint("weights of step ", i), weights[i], want.Shape(), want.Float64s(), 1e-5, 1e-6)
				}
				if cache.Key.Shape()[2] != l || fmt.Sprint(cache.Value.Shape()) != fmt.Sprint([]int{n, 2, l, 4}) {
					t.Errorf("cache shapes %v %v", cache.Key.Shape(), cache.Value.Shape())
				}
				cache.Reset()
				if cache.Len() != 0 || cache.Key != nil {
					t.Errorf("Reset left %d positions", cache.Len())
				}
			})
		})
	}
}

// TestKVCacheGradients checks that gradients reach the current step's
// inputs through a cached call.
func TestKVCacheGradients(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		m := nn.NewMultiHeadAttention(ad, 4, 2, nn.MultiHeadAttentionConfig{DType: tensor.Float64})
		var cache nn.KVCache
		defer cache.Reset()
		m.Forward(testutil.RandFloat64(dev, 1, -1, 1, 3, 4), testutil.RandFloat64(dev, 2, -1, 1, 3, 4),
			testutil.RandFloat64(dev, 3, -1, 1, 3, 4), nn.AttentionOptions{Cache: &cache})
		testutil.GradCheck(t, dev, func(in []*tensor.Tensor) *tensor.Tensor {
			// Work on views of the cache, so every evaluation sees the same three cached positions.
			c := nn.KVCache{Key: cache.Key.Detach(), Value: cache.Value.Detach()}
			defer c.Reset()
			out, _ := m.Forward(in[0], in[1], in[2], nn.AttentionOptions{Cache: &c, IsCausal: true, SkipWeights: true})
			return out
		}, testutil.RandFloat64(dev, 4, -1, 1, 2, 4), testutil.RandFloat64(dev, 5, -1, 1, 2, 4), testutil.RandFloat64(dev, 6, -1, 1, 2, 4))
	})
}

// TestMultiHeadAttentionGradCheck checks the gradients with respect to
// the inputs, a float mask and every parameter, through both attention
// paths (weights returned, and the fused path).
func TestMultiHeadAttentionGradCheck(t *testing.T) {
	for _, skip := range []bool{false, true} {
		t.Run(fmt.Sprint("skip_weights=", skip), func(t *testing.T) {
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				m := nn.NewMultiHeadAttention(dev, 4, 2, nn.MultiHeadAttentionConfig{DType: tensor.Float64})
				testutil.GradCheck(t, dev, func(in []*tensor.Tensor) *tensor.Tensor {
					m.InProjWeight = nn.NewParam(in[4])
					m.InProjBias = nn.NewParam(in[5])
					m.OutProj = &nn.Linear{Weight: nn.NewParam(in[6]), Bias: nn.NewParam(in[7])}
					out, w := m.Forward(in[0], in[1], in[2], nn.AttentionOptions{AttentionMask: in[3], SkipWeights: skip})
					if skip {
						return out
					}
					return tensor.Cat([]*tensor.Tensor{out.Flatten(0, -1), w.Flatten(0, -1)}, 0)
				},
					testutil.RandFloat64(dev, 1, -1, 1, 3, 2, 4), // query [L, N, E]
					testutil.RandFloat64(dev, 2, -1, 1, 2, 2, 4), // key [S, N, E]
					testutil.RandFloat64(dev, 3, -1, 1, 2, 2, 4), // value
					testutil.RandFloat64(dev, 4, -1, 1, 3, 2),    // float attention mask [L, S]
					testutil.RandFloat64(dev, 5, -1, 1, 12, 4),
					testutil.RandFloat64(dev, 6, -1, 1, 12),
					testutil.RandFloat64(dev, 7, -1, 1, 4, 4),
					testutil.RandFloat64(dev, 8, -1, 1, 4))
			})
		})
	}
}

// TestMultiHeadAttentionDropout checks that attention dropout acts in
// training mode only.
func TestMultiHeadAttentionDropout(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		dev.Seed(9)
		m := nn.NewMultiHeadAttention(dev, 8, 2, nn.MultiHeadAttentionConfig{Dropout: 0.5})
		x := tensor.Randn(dev, 4, 2, 8)
		nn.Eval(m)
		e, ew := m.Forward(x, x, x)
		es, _ := m.Forward(x, x, x, nn.AttentionOptions{SkipWeights: true})
		if !e.AllClose(es, 1e-5, 1e-6) {
			t.Errorf("the fused path differs from the explicit one")
		}
		if s := ew.Sum(-1).Float64s(); math.Abs(s[0]-1) > 1e-5 {
			t.Errorf("eval weights sum to %v", s[0])
		}
		nn.Train(m)
		tr, tw := m.Forward(x, x, x, nn.AttentionOptions{SkipWeights: false})
		if tr.AllClose(e, 1e-5, 1e-5) || tw.AllClose(ew, 1e-5, 1e-5) {
			t.Errorf("training mode applied no dropout")
		}
	})
}

// TestMultiHeadAttentionBadInput checks the errors for inputs, masks and
// caches that do not fit.
func TestMultiHeadAttentionBadInput(t *testing.T) {
	type env struct {
		dev tensor.Device
		m   *nn.MultiHeadAttention // E = 8, 2 heads, [L, N, E]
		x   *tensor.Tensor         // [3, 2, 8]
	}
	cases := []struct {
		name      string
		fn        func(e env)
		kind      error
		fragments []string
	}{
		{"wrong embedding", func(e env) { e.m.Forward(tensor.Zeros(e.dev, 3, 2, 6), e.x, e.x) }, tensor.ErrShape,
			[]string{"nn.MultiHeadAttention: expects query [L, N, 8]", "got [3 2 6]"}},
		{"key rank 4", func(e env) { e.m.Forward(e.x, tensor.Zeros(e.dev, 1, 3, 2, 8), e.x) }, tensor.ErrShape,
			[]string{"expects key [S, N, 8]", "[1 3 2 8]"}},
		{"key and value differ", func(e env) { e.m.Forward(e.x, e.x, tensor.Zeros(e.dev, 4, 2, 8)) }, tensor.ErrShape,
			[]string{"key and value of one shape", "value [4 2 8]"}},
		{"batch sizes differ", func(e env) { e.m.Forward(e.x, tensor.Zeros(e.dev, 3, 1, 8), tensor.Zeros(e.dev, 3, 1, 8)) },
			tensor.ErrShape, []string{"query's batch size"}},
		{"unbatched key for batched query", func(e env) { e.m.Forward(e.x, tensor.Zeros(e.dev, 3, 8), tensor.Zeros(e.dev, 3, 8)) },
			tensor.ErrShape, []string{"query [3 2 8], key [3 8]"}},
		{"integer query", func(e env) { e.m.Forward(tensor.ZerosOf(e.dev, tensor.Int64, 3, 2, 8), e.x, e.x) }, tensor.ErrDType,
			[]string{"floating-point query"}},
		{"attention mask shape", func(e env) {
			e.m.Forward(e.x, e.x, e.x, nn.AttentionOptions{AttentionMask: tensor.ZerosOf(e.dev, tensor.Bool, 3, 4)})
		}, tensor.ErrShape, []string{"attention mask [L, S] = [3 3] or [N·heads, L, S] = [4 3 3], got [3 4]"}},
		{"attention mask dtype", func(e env) {
			e.m.Forward(e.x, e.x, e.x, nn.AttentionOptions{AttentionMask: tensor.ZerosOf(e.dev, tensor.Int64, 3, 3)})
		}, tensor.ErrDType, []string{"bool or float attention mask, got int64"}},
		{"key padding mask shape", func(e env) {
			e.m.Forward(e.x, e.x, e.x, nn.AttentionOptions{KeyPaddingMask: tensor.ZerosOf(e.dev, tensor.Bool, 3, 2)})
		}, tensor.ErrShape, []string{"key padding mask [2 3]", "got [3 2]"}},
		{"cache of another batch", func(e env) {
			c := nn.KVCache{}
			defer c.Reset()
			e.m.Forward(e.x, e.x, e.x, nn.AttentionOptions{Cache: &c})
			y := tensor.Zeros(e.dev, 1, 3, 8)
			e.m.Forward(y, y, y, nn.AttentionOptions{Cache: &c})
		}, tensor.ErrShape, []string{"KV cache holds keys [2 2 3 4]", "new keys [3 2 1 4]"}},
		{"heads do not divide", func(e env) { nn.NewMultiHeadAttention(e.dev, 10, 4) }, tensor.ErrArgument,
			[]string{"nn.NewMultiHeadAttention", "multiple of numHeads 4"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				e := env{dev: dev, m: nn.NewMultiHeadAttention(dev, 8, 2), x: tensor.Zeros(dev, 3, 2, 8)}
				expectPanic(t, func() { c.fn(e) }, c.kind, c.fragments...)
			})
		})
	}
}
