package optim_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// tables is the embedding problem of testdata/gen_optim2.py: two tables
// looked up by fixed batches of indices that leave rows out.
type tables struct {
	A *nn.Embedding `kiln:"a"`
	B *nn.Embedding `kiln:"b"`

	fx testutil.FixtureCase `kiln:"-"`
	c  *tensor.Tensor       `kiln:"-"`
	d  *tensor.Tensor       `kiln:"-"`
}

func newTables(t *testing.T, dev tensor.Device, dtype tensor.DType) *tables {
	t.Helper()
	fx := optim2Fixtures(t, "sparse_problem")["sparse_problem"]
	table := func(name string) *nn.Embedding {
		return &nn.Embedding{Weight: nn.NewParam(fx[name].Tensor(dev.Autodiff()).To(dtype)), PaddingIndex: -1}
	}
	return &tables{A: table("a.weight"), B: table("b.weight"), fx: fx,
		c: fx["c"].Tensor(dev).To(dtype), d: fx["d"].Tensor(dev).To(dtype)}
}

// loss is the objective at step s (0-based), on batch s mod 4.
func (m *tables) loss(s int) *tensor.Tensor {
	dev := m.c.Device()
	row := func(name string) *tensor.Tensor {
		x := m.fx[name].Tensor(dev)
		return x.Narrow(0, s%4, 1).Reshape(x.Dim(1))
	}
	dtype := m.c.DType()
	ea := m.A.Forward(row("idx_a")).Tanh()
	la := ea.Mul(m.c).Sum(1).Sub(row("ya").To(dtype)).Square().Mean()
	eb := m.B.Forward(row("idx_b"))
	lb := eb.Mul(m.d).Sum(1).Sub(row("yb").To(dtype)).Square().Sum()
	return la.Add(lb.MulScalar(0.5))
}

func (m *tables) trajectory(opt optim.Optimizer, n int) [][]float64 {
	out := make([][]float64, n)
	for s := range out {
		tensor.Scope(func() { opt.Step(m, m.loss(s).Backward()) })
		out[s] = append(m.A.Weight.Float64s(), m.B.Weight.Float64s()...)
	}
	return out
}

var sparseAdamCases = []optimizerCase{
	{"sparseadam", func() optim.Optimizer { return optim.NewSparseAdam(optim.SparseAdamConfig{LR: 0.05}) }},
	{"sparseadam_maximize", func() optim.Optimizer {
		return optim.NewSparseAdam(optim.SparseAdamConfig{LR: 0.01, Maximize: true})
	}},
	{"sparseadam_groups", func() optim.Optimizer {
		return optim.NewSparseAdam(optim.SparseAdamConfig{LR: 0.05, Groups: []optim.ParamGroup{
			{Pattern: "b.weight", LR: f(0.02), Betas: []float64{0.5, 0.9}, Eps: f(1e-3)},
		}})
	}},
}

// TestSparseAdamMatchesPyTorch follows torch.optim.SparseAdam on
// nn.Embedding(sparse=True) tables for 20 steps: rows a batch leaves out
// keep their values and moments.
func TestSparseAdamMatchesPyTorch(t *testing.T) {
	fx := optim2Fixtures(t, "sparseadam")
	for _, c := range sparseAdamCases {
		t.Run(c.name, func(t *testing.T) {
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				m := newTables(t, dev, tensor.Float64)
				opt := c.make()
				defer release(opt)
				assertTrajectory(t, m.trajectory(opt, steps), fx[c.name]["trajectory"], 1e-6, 1e-10)
			})
		})
	}
	t.Run("float32", func(t *testing.T) {
		tensor.Scope(func() {
			m := newTables(t, tensor.CPU(), tensor.Float32)
			opt := sparseAdamCases[0].make()
			defer release(opt)
			assertTrajectory(t, m.trajectory(opt, 5), fx["sparseadam"]["trajectory"], 1e-4, 1e-5)
		})
	})
}

// TestSparseAdamLeavesUntouchedRows: a row no index picks (row 5 of a)
// keeps its value bit for bit and has zero moments.
func TestSparseAdamLeavesUntouchedRows(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m := newTables(t, dev, tensor.Float64)
		opt := optim.NewSparseAdam(optim.SparseAdamConfig{LR: 0.05})
		defer release(opt)
		before := m.A.Weight.Float64s()[15:]
		m.trajectory(opt, 3)
		after := m.A.Weight.Float64s()
		for i, v := range before {
			if after[15+i] != v {
				t.Errorf("untouched a[5][%d] moved from %v to %v", i, v, after[15+i])
			}
		}
		st, err := opt.State()
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range st.Tensors {
			if strings.HasPrefix(k, "a.weight.") {
				if got := v.Float64s()[15:]; got[0] != 0 || got[1] != 0 || got[2] != 0 {
					t.Errorf("%s: untouched row has moments %v", k, got)
				}
			}
			v.Release()
		}
		if st.Steps["a.weight"] != 3 {
			t.Errorf("a.weight took %d steps, want 3", st.Steps["a.weight"])
		}
	})
}

// TestSparseAdamStateRestore: a checkpoint after 7 steps resumes
// bit-identically.
func TestSparseAdamStateRestore(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		mk := sparseAdamCases[2].make
		ref := newTables(t, dev, tensor.Float64)
		refOpt := mk()
		defer release(refOpt)
		want := ref.trajectory(refOpt, 12)[11]

		first := newTables(t, dev, tensor.Float64)
		opt := mk()
		defer release(opt)
		first.trajectory(opt, 7)
		ck := save(t, opt, optim.NewScheduler(opt, optim.NewStepLR(opt.LR(), 100, 1)))
		second := newTables(t, dev, tensor.Float64)
		if _, _, err := nn.LoadStateDict(second, nn.StateDict(first)); err != nil {
			t.Fatal(err)
		}
		opt2 := mk()
		defer release(opt2)
		if err := opt2.LoadState(ck.state(t)); err != nil {
			t.Fatal(err)
		}
		var got []float64
		for s := 7; s < 12; s++ {
			tensor.Scope(func() { opt2.Step(second, second.loss(s).Backward()) })
		}
		got = append(second.A.Weight.Float64s(), second.B.Weight.Float64s()...)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("value %d: %v after restore, %v uninterrupted", i, got[i], want[i])
			}
		}
	})
}

// TestSparseAdamBadInput: weight decay does not exist in SparseAdam.
func TestSparseAdamBadInput(t *testing.T) {
	for name, fn := range map[string]func(){
		"weight decay group": func() {
			optim.NewSparseAdam(optim.SparseAdamConfig{Groups: []optim.ParamGroup{{Pattern: "a.*", WeightDecay: f(0.1)}}})
		},
		"beta of 1":   func() { optim.NewSparseAdam(optim.SparseAdamConfig{Betas: []float64{1, 0.9}}) },
		"negative LR": func() { optim.NewSparseAdam(optim.SparseAdamConfig{LR: -1}) },
	} {
		err := mustPanic(t, fn)
		if !errors.Is(err, optim.ErrConfig) || !strings.Contains(err.Error(), "optim.NewSparseAdam") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
