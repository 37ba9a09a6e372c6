package nn_test

import (
	"errors"
	"path"
	"slices"
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// Test models. Params are made small and distinct by newP.

type leaf struct {
	Weight *nn.Param
	Bias   *nn.Param
}

type block struct {
	Attn  *leaf
	Norm  leaf // a module held by value
	Scale *nn.Param
}

type tagged struct {
	Renamed *nn.Param `kiln:"weight"`
	Skipped *nn.Param `kiln:"-"`
	Opts    *nn.Param `kiln:"opt,future"`
	hidden  *nn.Param
	Plain   *tensor.Tensor // not a Param: ignored
	Count   int
	Nil     *nn.Param
	NilMod  *leaf
}

type base struct {
	Shared *nn.Param
}

type withEmbedded struct {
	base  // flattened, although unexported
	*leaf // flattened through the pointer
	Own   *nn.Param
}

type cyclic struct {
	W      *nn.Param
	Parent *cyclic
	Kids   []*cyclic
}

type withInterfaces struct {
	Any    any
	Layers []any
	Empty  any
}

type dropout struct {
	nn.Mode
	P float64
}

type modeA struct{ nn.Mode }
type modeB struct{ nn.Mode }

// ambiguous embeds two modes, so neither SetTraining is promoted.
type ambiguous struct {
	modeA
	modeB
}

type moded struct {
	nn.Mode
	W     *nn.Param
	Drops []*dropout
	ByKey map[string]*dropout
	Iface []any
	Inner struct {
		Drop dropout
	}
	Both ambiguous
}

// newP returns a trainable [n] param.
func newP(dev tensor.Device, n int) *nn.Param { return nn.NewParam(tensor.Zeros(dev, n)) }

func names(nps []nn.NamedParam) []string {
	out := make([]string, len(nps))
	for i, np := range nps {
		out[i] = np.Name
	}
	return out
}

func TestParamsNames(t *testing.T) {
	type tc struct {
		name  string
		model func(dev tensor.Device) any
		want  []string
	}
	cases := []tc{
		{"flat struct by pointer", func(d tensor.Device) any { return &leaf{Weight: newP(d, 1), Bias: newP(d, 1)} },
			[]string{"Weight", "Bias"}},
		{"flat struct by value", func(d tensor.Device) any { return leaf{Weight: newP(d, 1), Bias: newP(d, 1)} },
			[]string{"Weight", "Bias"}},
		{"nested pointer and value modules", func(d tensor.Device) any {
			return &block{Attn: &leaf{newP(d, 1), newP(d, 1)}, Norm: leaf{newP(d, 1), newP(d, 1)}, Scale: newP(d, 1)}
		}, []string{"Attn.Weight", "Attn.Bias", "Norm.Weight", "Norm.Bias", "Scale"}},
		{"slice of modules and array of params", func(d tensor.Device) any {
			return &struct {
				Layers []*leaf
				Arr    [2]*nn.Param
			}{Layers: []*leaf{{newP(d, 1), newP(d, 1)}, {newP(d, 1), nil}}, Arr: [2]*nn.Param{newP(d, 1), newP(d, 1)}}
		}, []string{"Layers.0.Weight", "Layers.0.Bias", "Layers.1.Weight", "Arr.0", "Arr.1"}},
		{"map with string keys in sorted order", func(d tensor.Device) any {
			return &struct{ Heads map[string]*leaf }{Heads: map[string]*leaf{
				"b": {Weight: newP(d, 1)}, "a": {Weight: newP(d, 1)}, "c": {Bias: newP(d, 1)}}}
		}, []string{"Heads.a.Weight", "Heads.b.Weight", "Heads.c.Bias"}},
		{"map with int keys in numeric order", func(d tensor.Device) any {
			return &struct{ Experts map[int]*nn.Param }{Experts: map[int]*nn.Param{10: newP(d, 1), 2: newP(d, 1), -1: newP(d, 1)}}
		}, []string{"Experts.-1", "Experts.2", "Experts.10"}},
		{"map with other keys is skipped", func(d tensor.Device) any {
			return &struct {
				M map[float64]*nn.Param
				W *nn.Param
			}{M: map[float64]*nn.Param{1.5: newP(d, 1)}, W: newP(d, 1)}
		}, []string{"W"}},
		{"tags rename and skip, unexported and non-param fields skipped", func(d tensor.Device) any {
			return &tagged{Renamed: newP(d, 1), Skipped: newP(d, 1), Opts: newP(d, 1), hidden: newP(d, 1),
				Plain: tensor.Zeros(d, 1), Count: 3}
		}, []string{"weight", "opt"}},
		{"embedded structs are flattened", func(d tensor.Device) any {
			return &withEmbedded{base: base{Shared: newP(d, 1)}, leaf: &leaf{Weight: newP(d, 1)}, Own: newP(d, 1)}
		}, []string{"Shared", "Weight", "Own"}},
		{"cycle through a parent pointer", func(d tensor.Device) any {
			root := &cyclic{W: newP(d, 1)}
			kid := &cyclic{W: newP(d, 1), Parent: root}
			root.Kids = []*cyclic{kid, kid}
			root.Parent = root
			return root
		}, []string{"W", "Kids.0.W"}},
		{"shared module reported under its first name", func(d tensor.Device) any {
			shared := &leaf{Weight: newP(d, 1)}
			return &struct{ A, B *leaf }{A: shared, B: shared}
		}, []string{"A.Weight"}},
		{"tied param reported under its first name", func(d tensor.Device) any {
			p := newP(d, 1)
			return &struct {
				Embed leaf
				Head  leaf
			}{Embed: leaf{Weight: p}, Head: leaf{Weight: p, Bias: newP(d, 1)}}
		}, []string{"Embed.Weight", "Head.Bias"}},
		{"interfaces holding modules", func(d tensor.Device) any {
			return &withInterfaces{Any: &leaf{Weight: newP(d, 1)}, Layers: []any{&leaf{Bias: newP(d, 1)}, newP(d, 1)}}
		}, []string{"Any.Weight", "Layers.0.Bias", "Layers.1"}},
		{"buffers are not params", func(d tensor.Device) any {
			return &struct{ W, RunningMean *nn.Param }{W: newP(d, 1), RunningMean: nn.NewBuffer(tensor.Zeros(d, 1))}
		}, []string{"W"}},
		{"unnamed struct strips yaegi's X prefix", func(d tensor.Device) any {
			return &struct {
				Xweight *nn.Param
				X_bias  *nn.Param
				Xavier  *nn.Param `kiln:"Xavier"`
				XUpper  *nn.Param
				X1      *nn.Param
			}{newP(d, 1), newP(d, 1), newP(d, 1), newP(d, 1), newP(d, 1)}
		}, []string{"weight", "_bias", "Xavier", "XUpper", "X1"}},
		{"named struct keeps X names", func(d tensor.Device) any {
			type xnamed struct{ Xweight *nn.Param }
			return &xnamed{newP(d, 1)}
		}, []string{"Xweight"}},
		{"a slice of params as the model", func(d tensor.Device) any { return []*nn.Param{newP(d, 1), newP(d, 1)} },
			[]string{"0", "1"}},
		{"plain data fields are skipped", func(d tensor.Device) any {
			return &struct {
				Data   []float32
				Labels map[string]int
				Grid   [][]int
				W      *nn.Param
			}{Data: make([]float32, 1<<20), Labels: map[string]int{"a": 1}, Grid: [][]int{{1}}, W: newP(d, 1)}
		}, []string{"W"}},
		{"nil model", func(d tensor.Device) any { return nil }, []string{}},
		{"nil pointer model", func(d tensor.Device) any { return (*leaf)(nil) }, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				got := names(nn.Params(c.model(dev)))
				if !slices.Equal(got, c.want) {
					t.Errorf("Params names %q, want %q", got, c.want)
				}
			})
		})
	}
}

func TestParamsFilters(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m := &struct {
			A, B, C *nn.Param
			Stats   *nn.Param
		}{A: newP(dev, 2), B: newP(dev, 3), C: nn.NewParam(tensor.Zeros(dev, 2, 2)), Stats: nn.NewBuffer(tensor.Zeros(dev, 5))}
		m.B.SetFrozen(true)
		checks := []struct {
			name string
			got  []string
			want []string
		}{
			{"Params lists trainable and frozen", names(nn.Params(m)), []string{"A", "B", "C"}},
			{"Buffers lists buffers", names(nn.Buffers(m)), []string{"Stats"}},
			{"TrainableParams leaves out frozen and buffers", names(nn.TrainableParams(m)), []string{"A", "C"}},
		}
		for _, c := range checks {
			if !slices.Equal(c.got, c.want) {
				t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
			}
		}
		if n := nn.NumParams(m); n != 2+3+4 {
			t.Errorf("NumParams = %d, want 9 (frozen counted, buffers not)", n)
		}
		nn.Release(m)
		for _, np := range append(nn.Params(m), nn.Buffers(m)...) {
			if !np.Param.Released() {
				t.Errorf("%s not released by Release", np.Name)
			}
		}
	})
}

func TestMatchName(t *testing.T) {
	cases := []struct {
		pattern, name string
		want          bool
	}{
		{"Encoder.**", "Encoder.Layers.0.Weight", true},
		{"Encoder.**", "Encoder", true},
		{"Encoder.**", "Decoder.Weight", false},
		{"**.Bias", "Bias", true},
		{"**.Bias", "Encoder.Layers.3.Bias", true},
		{"**.Bias", "Encoder.Layers.3.BiasX", false},
		{"Layers.*.Weight", "Layers.12.Weight", true},
		{"Layers.*.Weight", "Layers.1.Attn.Weight", false},
		{"Layers.*", "Layers.1.Weight", false},
		{"Layers.[0-1].**", "Layers.1.Attn.Weight", true},
		{"Layers.[0-1].**", "Layers.2.Attn.Weight", false},
		{"*.Weight", "Attn.Weight", true},
		{"A.**.W", "A.W", true},
		{"A.**.W", "A.x.y.W", true},
		{"A.**.W", "A.x.y.V", false},
		{"**", "anything.at.all", true},
		{"Weig?t", "Weight", true},
		{"exact.name", "exact.name", true},
	}
	for _, c := range cases {
		if got := nn.MatchName(c.pattern, c.name); got != c.want {
			t.Errorf("MatchName(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

// ffn is a small model for freezing and mode tests.
type ffn struct {
	Encoder struct {
		Layers []*leaf
	}
	Head  *leaf
	Stats *nn.Param
}

func newFFN(dev tensor.Device) *ffn {
	m := &ffn{Head: &leaf{Weight: nn.NewParam(tensor.Ones(dev, 2, 3)), Bias: nn.NewParam(tensor.Zeros(dev, 2))},
		Stats: nn.NewBuffer(tensor.Zeros(dev, 3))}
	for range 2 {
		m.Encoder.Layers = append(m.Encoder.Layers,
			&leaf{Weight: nn.NewParam(tensor.Ones(dev, 3, 3)), Bias: nn.NewParam(tensor.Zeros(dev, 3))})
	}
	return m
}

func TestFreeze(t *testing.T) {
	cases := []struct {
		name       string
		pattern    string
		wantCount  int
		wantFrozen []string
	}{
		{"everything under a module", "Encoder.**", 4,
			[]string{"Encoder.Layers.0.Weight", "Encoder.Layers.0.Bias", "Encoder.Layers.1.Weight", "Encoder.Layers.1.Bias"}},
		{"every bias", "**.Bias", 3, []string{"Encoder.Layers.0.Bias", "Encoder.Layers.1.Bias", "Head.Bias"}},
		{"one segment wildcard", "Encoder.Layers.*.Weight", 2, []string{"Encoder.Layers.0.Weight", "Encoder.Layers.1.Weight"}},
		{"an exact name", "Head.Weight", 1, []string{"Head.Weight"}},
		{"buffers never match", "Stats", 0, nil},
		{"no match", "Decoder.**", 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				dev = dev.Autodiff()
				m := newFFN(dev)
				defer nn.Release(m)
				if n := nn.Freeze(m, c.pattern); n != c.wantCount {
					t.Errorf("Freeze(%q) = %d, want %d", c.pattern, n, c.wantCount)
				}
				var frozen []string
				for _, np := range nn.Params(m) {
					if np.Param.Frozen() {
						frozen = append(frozen, np.Name)
					}
					if np.Param.RequiresGrad() == np.Param.Frozen() {
						t.Errorf("%s: frozen %v but RequiresGrad %v", np.Name, np.Param.Frozen(), np.Param.RequiresGrad())
					}
				}
				if !slices.Equal(frozen, c.wantFrozen) {
					t.Errorf("frozen %q, want %q", frozen, c.wantFrozen)
				}
				if got, want := len(nn.TrainableParams(m)), 6-c.wantCount; got != want {
					t.Errorf("%d trainable params, want %d", got, want)
				}
				// Freezing again matches the same params; unfreezing restores gradients.
				if n := nn.Freeze(m, c.pattern); n != c.wantCount {
					t.Errorf("second Freeze = %d, want %d", n, c.wantCount)
				}
				if n := nn.Unfreeze(m, "**"); n != 6 {
					t.Errorf("Unfreeze(**) = %d, want 6", n)
				}
				for _, np := range nn.Params(m) {
					if np.Param.Frozen() || !np.Param.RequiresGrad() {
						t.Errorf("%s: after Unfreeze frozen %v, RequiresGrad %v", np.Name, np.Param.Frozen(), np.Param.RequiresGrad())
					}
				}
			})
		})
	}
}

func TestFreezeSkipsGradients(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		dev = dev.Autodiff()
		m := newFFN(dev)
		defer nn.Release(m)
		nn.Freeze(m, "Encoder.**")
		before := m.Encoder.Layers[0].Weight.Float64s()
		x := tensor.Ones(dev, 4, 3)
		h := x
		for _, l := range m.Encoder.Layers {
			h = h.Matmul(l.Weight.Tensor).Add(l.Bias.Tensor)
		}
		loss := h.Matmul(m.Head.Weight.T()).Add(m.Head.Bias.Tensor).Sum()
		grads := loss.Backward()
		defer grads.Release()
		for _, np := range nn.Params(m) {
			g := grads.Get(np.Param.Tensor)
			if np.Param.Frozen() && g != nil {
				t.Errorf("%s is frozen but got a gradient", np.Name)
			}
			if !np.Param.Frozen() && g == nil {
				t.Errorf("%s is trainable but got no gradient", np.Name)
			}
		}
		if h.RequiresGrad() {
			t.Errorf("ops on frozen params alone still record a graph")
		}
		// Freezing keeps the value (a view of the same storage).
		assertValues(t, "frozen weight", m.Encoder.Layers[0].Weight.Tensor, before)
	})
}

func TestFreezeBadPattern(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m := newFFN(dev)
		for _, op := range []func(any, string) int{nn.Freeze, nn.Unfreeze} {
			err := mustPanic(t, func() { op(m, "Encoder.[") })
			if !errors.Is(err, path.ErrBadPattern) {
				t.Errorf("bad pattern: %v, want path.ErrBadPattern", err)
			}
		}
	})
}

func TestTrainEval(t *testing.T) {
	build := func(dev tensor.Device) *moded {
		m := &moded{W: newP(dev, 1), Drops: []*dropout{{P: 0.1}, {P: 0.2}},
			ByKey: map[string]*dropout{"x": {}, "y": {}}, Iface: []any{&dropout{}, &leaf{}}}
		return m
	}
	modes := func(m *moded) []bool {
		out := []bool{m.Training(), m.Inner.Drop.Training()}
		for _, d := range m.Drops {
			out = append(out, d.Training())
		}
		out = append(out, m.ByKey["x"].Training(), m.ByKey["y"].Training(), m.Iface[0].(*dropout).Training())
		return append(out, m.Both.modeA.Training(), m.Both.modeB.Training())
	}
	all := func(v bool) []bool { return []bool{v, v, v, v, v, v, v, v, v} }
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m := build(dev)
		if got := modes(m); !slices.Equal(got, all(true)) {
			t.Fatalf("new modules should train: %v", got)
		}
		steps := []struct {
			name string
			do   func(any)
			want bool
		}{
			{"Eval reaches every module", nn.Eval, false},
			{"Train reaches every module", nn.Train, true},
			{"Eval again", nn.Eval, false},
		}
		for _, s := range steps {
			s.do(m)
			if got := modes(m); !slices.Equal(got, all(s.want)) {
				t.Errorf("%s: modes %v", s.name, got)
			}
			if nn.IsTraining(m) != s.want {
				t.Errorf("%s: IsTraining = %v", s.name, !s.want)
			}
		}
		// A model without modes is training.
		if !nn.IsTraining(&leaf{}) {
			t.Errorf("IsTraining(model without modes) = false")
		}
		// IsTraining finds a nested mode.
		nested := &struct{ D []*dropout }{D: []*dropout{{}}}
		nn.Eval(nested)
		if nn.IsTraining(nested) {
			t.Errorf("IsTraining(nested eval) = true")
		}
	})
}

func TestTrainEvalUnaddressable(t *testing.T) {
	cases := []struct {
		name  string
		model any
	}{
		{"model passed by value", dropout{}},
		{"module stored by value in a map", &struct{ M map[string]dropout }{M: map[string]dropout{"a": {}}}},
		{"module stored by value in an interface", &struct{ I any }{I: dropout{}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := mustPanic(t, func() { nn.Eval(c.model) })
			if !errors.Is(err, nn.ErrModule) {
				t.Errorf("Eval: %v, want ErrModule", err)
			}
		})
	}
}

func TestParam(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		a, b := nn.NewParam(tensor.Zeros(ad, 2)), nn.NewParam(tensor.Zeros(ad, 2))
		buf := nn.NewBuffer(tensor.Zeros(ad, 2).RequireGrad())
		plain := nn.NewParam(tensor.Zeros(dev, 2))
		ints := nn.NewParam(tensor.FromInt64s(ad, []int64{1, 2}))
		checks := []struct {
			name      string
			got, want bool
		}{
			{"ids are distinct", a.ID() != b.ID() && b.ID() != buf.ID(), true},
			{"param on autodiff requires grad", a.RequiresGrad(), true},
			{"param on a plain device does not", plain.RequiresGrad(), false},
			{"integer param does not", ints.RequiresGrad(), false},
			{"buffer never does", buf.RequiresGrad(), false},
			{"buffer is a buffer", buf.IsBuffer(), true},
			{"param is not", a.IsBuffer(), false},
			{"buffer is not trainable", buf.Trainable(), false},
			{"freezing a buffer does nothing", func() bool { buf.SetFrozen(true); return buf.Frozen() }(), false},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("%s: got %v", c.name, c.got)
			}
		}

		// Set keeps the id, releases the old value and re-applies RequireGrad.
		id, old := a.ID(), a.Tensor
		a.Set(floats(ad, []float32{1, 2, 3}, 3))
		if a.ID() != id || !old.Released() || !a.RequiresGrad() || a.NumElements() != 3 {
			t.Errorf("Set: id %d→%d, old released %v, RequiresGrad %v, n %d", id, a.ID(), old.Released(), a.RequiresGrad(), a.NumElements())
		}
		// Set on a frozen param stores a view outside the graph.
		b.SetFrozen(true)
		b.Set(floats(ad, []float32{4, 5}).RequireGrad())
		if b.RequiresGrad() {
			t.Errorf("frozen param set to a grad-requiring tensor requires grad")
		}
		assertValues(t, "frozen Set", b.Tensor, []float64{4, 5})
		if s := a.String(); s == "" {
			t.Errorf("empty String")
		}

		bad := []struct {
			name string
			fn   func()
			kind error
		}{
			{"NewParam(nil)", func() { nn.NewParam(nil) }, tensor.ErrArgument},
			{"NewBuffer(nil)", func() { nn.NewBuffer(nil) }, tensor.ErrArgument},
			{"NewParam(released)", func() { r := tensor.Zeros(dev, 1); r.Release(); nn.NewParam(r) }, tensor.ErrReleased},
			{"Set(nil)", func() { a.Set(nil) }, tensor.ErrArgument},
		}
		for _, c := range bad {
			err := tensor.Try(c.fn)
			if !isTensorError(err, c.kind) {
				t.Errorf("%s: %v, want a *tensor.Error wrapping %v", c.name, err, c.kind)
			}
		}
		nn.Release(&struct{ A, B, Buf, Plain, Ints *nn.Param }{a, b, buf, plain, ints})
	})
}

func TestToDevice(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		other := tensor.CPU()
		if dev.Kind() == "cpu" {
			other = tensor.MustDevice("strict")
		}
		m := newFFN(dev)
		defer nn.Release(m)
		m.Head.Weight.Assign(floats(dev, seq(1, 6), 2, 3))
		nn.Freeze(m, "Encoder.Layers.1.**")
		ids := map[string]uint64{}
		values := map[string][]float64{}
		for _, np := range append(nn.Params(m), nn.Buffers(m)...) {
			ids[np.Name] = np.Param.ID()
			values[np.Name] = np.Param.Float64s()
		}
		check := func(step string, want tensor.Device) {
			for _, np := range append(nn.Params(m), nn.Buffers(m)...) {
				p := np.Param
				if p.Device() != want {
					t.Errorf("%s: %s on %s, want %s", step, np.Name, p.Device(), want)
				}
				if p.ID() != ids[np.Name] {
					t.Errorf("%s: %s changed id", step, np.Name)
				}
				assertValues(t, step+" "+np.Name, p.Tensor, values[np.Name])
				wantGrad := want.IsAutodiff() && p.Trainable()
				if p.RequiresGrad() != wantGrad {
					t.Errorf("%s: %s RequiresGrad %v, want %v", step, np.Name, p.RequiresGrad(), wantGrad)
				}
			}
		}
		steps := []struct {
			name string
			to   tensor.Device
		}{
			{"to the other device with autodiff", other.Autodiff()},
			{"re-view without autodiff", other},
			{"back with autodiff", dev.Autodiff()},
			{"again to the same view", dev.Autodiff()},
			{"back to plain", dev},
		}
		for _, s := range steps {
			before, from := tensor.BufferOf(m.Head.Weight.Tensor), m.Head.Weight.Device()
			if err := nn.ToDevice(m, s.to); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			check(s.name, s.to)
			// On the same physical device ToDevice re-views; across devices it copies.
			if shared, want := tensor.BufferOf(m.Head.Weight.Tensor) == before, from.Same(s.to); shared != want {
				t.Errorf("%s: storage shared %v, want %v", s.name, shared, want)
			}
		}
	})
}

func TestToDeviceFailureLeavesModelUnchanged(t *testing.T) {
	cpu := tensor.CPU()
	target := tensor.MustDevice("strict")
	m := newFFN(cpu)
	defer nn.Release(m)
	before := map[string]*tensor.Tensor{}
	for _, np := range nn.Params(m) {
		before[np.Name] = np.Param.Tensor
	}
	stats := target.MemoryStats()
	// Room for the first few tensors only.
	target.SetMemoryBudget(stats.LiveBytes + 40)
	err := nn.ToDevice(m, target)
	target.SetMemoryBudget(stats.BudgetBytes)
	if !errors.Is(err, tensor.ErrOutOfMemory) {
		t.Fatalf("ToDevice over budget: %v, want ErrOutOfMemory", err)
	}
	for _, np := range nn.Params(m) {
		if np.Param.Tensor != before[np.Name] || np.Param.Released() || !np.Param.Device().Same(cpu) {
			t.Errorf("%s changed by a failed ToDevice", np.Name)
		}
	}
	if live := target.MemoryStats().LiveBytes; live != stats.LiveBytes {
		t.Errorf("failed ToDevice left %d bytes on the target", live-stats.LiveBytes)
	}
}

func TestToDeviceOutlivesScope(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m := newFFN(dev)
		defer nn.Release(m)
		tensor.Scope(func() {
			if err := nn.ToDevice(m, dev.Autodiff()); err != nil {
				t.Fatal(err)
			}
			nn.Freeze(m, "Head.**")
		})
		for _, np := range append(nn.Params(m), nn.Buffers(m)...) {
			if np.Param.Released() {
				t.Errorf("%s released by the Scope ToDevice ran in", np.Name)
			}
		}
	})
}
