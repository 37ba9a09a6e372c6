package viz

import (
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// mnistCNN is the MNIST CNN of nn's tests: conv 1→16 3×3, ReLU, max-pool
// 2, conv 16→32 3×3, ReLU, max-pool 2, flatten (800), linear 800→10.
func mnistCNN(dev tensor.Device) nn.Sequential {
	return nn.NewSequential(
		nn.NewConv2d(dev, 1, 16, 3), nn.ReLU{}, nn.NewMaxPool2d(2),
		nn.NewConv2d(dev, 16, 32, 3), nn.ReLU{}, nn.NewMaxPool2d(2),
		nn.NewFlatten(),
		nn.NewLinear(dev, 800, 10),
	)
}

// encoder is a 4-layer transformer encoder (d_model 32, 4 heads,
// feed-forward 64) in evaluation mode, fed [seq 5, batch 2, 32].
func encoder(dev tensor.Device) *nn.TransformerEncoder {
	layer := nn.NewTransformerEncoderLayer(dev, 32, 4, nn.TransformerLayerConfig{DimFeedforward: 64})
	e := nn.NewTransformerEncoder(layer, 4, nil)
	nn.Eval(e)
	return e
}

// structCNN is the CNN as a struct whose activation and pooling modules
// are each used twice.
type structCNN struct {
	Conv1, Conv2 *nn.Conv2d
	Act          nn.ReLU
	Pool         nn.MaxPool2d
	Fc           *nn.Linear
}

func (m *structCNN) Forward(x *tensor.Tensor) *tensor.Tensor {
	x = m.Pool.Forward(m.Act.Forward(m.Conv1.Forward(x)))
	x = m.Pool.Forward(m.Act.Forward(m.Conv2.Forward(x)))
	return m.Fc.Forward(x.Flatten(1, -1))
}

// resBlock is x + relu(fc(x)).
type resBlock struct{ Fc *nn.Linear }

func (b *resBlock) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Add(b.Fc.Forward(x).Relu()) }

// resNet is 50 residual blocks and a head: a 51-layer network.
type resNet struct {
	Blocks []*resBlock
	Head   *nn.Linear
}

func (r *resNet) Forward(x *tensor.Tensor) *tensor.Tensor {
	for _, b := range r.Blocks {
		x = b.Forward(x)
	}
	return r.Head.Forward(x)
}

func newResNet(dev tensor.Device, blocks int) *resNet {
	r := &resNet{Head: nn.NewLinear(dev, 8, 2)}
	for range blocks {
		r.Blocks = append(r.Blocks, &resBlock{Fc: nn.NewLinear(dev, 8, 8)})
	}
	return r
}

// opModules lists "op@module" for the op nodes of g in order.
func opModules(g *Graph) []string {
	var s []string
	for _, n := range g.Nodes {
		if n.Kind == OpNode {
			s = append(s, n.Op+"@"+n.Module)
		}
	}
	return s
}

func mustTrace(t *testing.T, m nn.Module, x *tensor.Tensor) *Graph {
	t.Helper()
	g, err := Trace(m, x)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// saveDrawing keeps an SVG for people to look at under the test's output
// folder when KILN_TEST_OUT names one.
func saveDrawing(t *testing.T, name, svg string) {
	dir := os.Getenv("KILN_TEST_OUT")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(dir, name+".svg"), []byte(svg), 0o644)
	}
}

func TestTraceAttributesOpsToModules(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		cases := []struct {
			name  string
			model nn.Module
			input *tensor.Tensor
			want  []string
		}{
			{"sequential CNN", mnistCNN(dev), tensor.Randn(dev, 2, 1, 28, 28), []string{
				"conv2d@0", "relu@1", "max_pool2d@2", "conv2d@3", "relu@4", "max_pool2d@5", "flatten@6", "linear@7"}},
			{"struct CNN with shared modules", &structCNN{Conv1: nn.NewConv2d(dev, 1, 4, 3), Conv2: nn.NewConv2d(dev, 4, 8, 3),
				Pool: nn.NewMaxPool2d(2), Fc: nn.NewLinear(dev, 200, 10)}, tensor.Randn(dev, 2, 1, 28, 28), []string{
				"conv2d@Conv1", "relu@Act", "max_pool2d@Pool", "conv2d@Conv2", "relu@Act", "max_pool2d@Pool",
				"flatten@", "linear@Fc"}},
			{"residual blocks", newResNet(dev, 3), tensor.Randn(dev, 4, 8), []string{
				"linear@Blocks.0.Fc", "relu@Blocks.0", "add@Blocks.0", "linear@Blocks.1.Fc", "relu@Blocks.1", "add@Blocks.1",
				"linear@Blocks.2.Fc", "relu@Blocks.2", "add@Blocks.2", "linear@Head"}},
		}
		for _, c := range cases {
			if got := opModules(mustTrace(t, c.model, c.input)); !slices.Equal(got, c.want) {
				t.Errorf("%s: ops\n%v\nwant\n%v", c.name, got, c.want)
			}
		}
		// The encoder: every op of layer i is in layers.i, attention inside
		// self_attn, the parameters named as in PyTorch. Self-attention is
		// four ops: the layout's transposes in and out, the joint input
		// projection and one packed_self_attention over it (the heads split
		// and merged inside the fused op).
		g := mustTrace(t, encoder(dev), tensor.Randn(dev, 5, 2, 32))
		counts := map[string]int{}
		for _, n := range g.Nodes {
			switch n.Kind {
			case OpNode:
				counts[n.Module]++
			case ParamNode:
				if !strings.HasPrefix(n.Name, n.Module+".") {
					t.Errorf("param %s in module %q", n.Name, n.Module)
				}
			}
		}
		for i := range 4 {
			p := fmt.Sprintf("layers.%d", i)
			want := map[string]int{p: 3, p + ".self_attn": 4, p + ".self_attn.out_proj": 1, p + ".norm1": 1,
				p + ".linear1": 1, p + ".linear2": 1, p + ".norm2": 1}
			for m, n := range want {
				if counts[m] != n {
					t.Errorf("%d ops in %s, want %d", counts[m], m, n)
				}
			}
		}
		if ops := g.OpCounts(); ops["packed_self_attention"] != 4 || ops["layer_norm"] != 8 {
			t.Errorf("op counts %v", ops)
		}
	})
}

// The must-show: the MNIST CNN and a 4-layer transformer encoder drawn
// with no overlapping nodes, no layer wider than the page, nodes grouped
// by module, and at most maxCrossings edge crossings, which is 0.
//
// The bound: both graphs can be drawn without crossings at the layering
// the layout uses, with every module box contiguous. Each is a chain of
// blocks in series; inside a block, the branches (attention's q, k and v,
// a residual connection, a parameter feeding its op) leave one node and
// meet again at one node without any edge between branches, so the
// branches can be laid side by side in the same order in every layer,
// each module's nodes forming one contiguous run (a module is one stretch
// of the chain, or a parameter next to its op). Such series–parallel
// graphs are level planar; the drawings found reach that optimum, and a
// change that makes them worse should fail this test.
func TestGraphDrawingsOfCNNAndTransformer(t *testing.T) {
	const maxCrossings = 0
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		models := []struct {
			name  string
			model nn.Module
			input *tensor.Tensor
		}{
			{"mnist-cnn", mnistCNN(dev), tensor.Randn(dev, 2, 1, 28, 28)},
			{"transformer-encoder", encoder(dev), tensor.Randn(dev, 5, 2, 32)},
		}
		for _, m := range models {
			g := mustTrace(t, m.model, m.input)
			views := []GraphOptions{{}, {Depth: -1}}
			for d := 1; d <= g.Depth(); d++ {
				views = append(views, GraphOptions{Depth: d})
			}
			for _, o := range views {
				l := g.Layout(o)
				name := fmt.Sprintf("%s depth %d", m.name, o.Depth)
				if c := checkLayout(t, name, l); c > maxCrossings {
					t.Errorf("%s: %d crossings, bound %d", name, c, maxCrossings)
				}
				if o.Depth == 0 {
					if l.Depth != 0 {
						t.Errorf("%s: the automatic view collapsed depth %d, but everything fits", name, l.Depth)
					}
					t.Logf("%s: %d nodes in %d layers, %.0f×%.0f px, widest layer %.0f px, %d boxes, %d crossings",
						m.name, len(l.Nodes), len(l.Layers), l.Width, l.Height, l.MaxLayer, len(l.Groups), l.Crossings)
					if dev.Kind() == "cpu" {
						saveDrawing(t, m.name, l.SVG())
					}
				}
			}
		}
	})
}

// A 51-layer network (50 residual blocks and a head) stays readable: it
// fits the page without shrinking text, grows in height linearly (a few
// layers a block, at most 80 px a layer), has no crossings, and its
// collapsed view (one node per block) is one column.
func TestGraphOfDeepNetworkStaysReadable(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		g := mustTrace(t, newResNet(dev, 50), tensor.Randn(dev, 4, 8))
		if ops := g.OpCounts(); ops["linear"] != 51 || ops["add"] != 50 {
			t.Fatalf("op counts %v", ops)
		}
		l := g.Layout(GraphOptions{})
		if c := checkLayout(t, "resnet-50", l); c != 0 {
			t.Errorf("%d crossings", c)
		}
		// Four layers a block (its parameters, linear, relu, add), the
		// head's two, input and output; at most 80 px a layer.
		const maxLayers = 4*50 + 2 + 2
		if len(l.Layers) > maxLayers || l.Height > 80*maxLayers || l.Width > 600 {
			t.Errorf("%.0f×%.0f px in %d layers", l.Width, l.Height, len(l.Layers))
		}
		for _, nb := range l.Nodes {
			if nb.H < 22 || nb.W < 30 {
				t.Errorf("node %v is %.0f×%.0f px", nb.Lines, nb.W, nb.H)
				break
			}
		}
		t.Logf("resnet-50: %d nodes in %d layers, %.0f×%.0f px, %d boxes", len(l.Nodes), len(l.Layers), l.Width, l.Height, len(l.Groups))
		blocks := g.Layout(GraphOptions{Depth: 2})
		checkLayout(t, "resnet-50 by block", blocks)
		if n := len(blocks.Nodes); n != 50+3+2 { // blocks, the head's linear and params, input, output
			t.Errorf("%d nodes with blocks collapsed", n)
		}
		if blocks.Height > 80*55 || blocks.Crossings != 0 {
			t.Errorf("collapsed view %.0f px high, %d crossings", blocks.Height, blocks.Crossings)
		}
		if dev.Kind() == "cpu" {
			saveDrawing(t, "resnet-50", l.SVG())
		}
	})
}

// A graph too wide for the page with every op shown is drawn with modules
// collapsed (or its layers folded) until it fits.
func TestGraphFitsNarrowPages(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		g := mustTrace(t, encoder(dev), tensor.Randn(dev, 5, 2, 32))
		for _, w := range []float64{500, 350} {
			l := g.Layout(GraphOptions{MaxWidth: w})
			checkLayout(t, fmt.Sprintf("encoder in %.0f px", w), l)
			if l.Width > w {
				t.Errorf("%.0f px wide for a %.0f px page", l.Width, w)
			}
			t.Logf("page %.0f px: depth %d, %.0f×%.0f px", w, l.Depth, l.Width, l.Height)
		}
		// Many parallel branches: a function of 30 ops on one input.
		f := func(x *tensor.Tensor) *tensor.Tensor {
			var parts []*tensor.Tensor
			for i := range 30 {
				parts = append(parts, x.MulScalar(float64(i+1)).Exp())
			}
			return tensor.Cat(parts, 1)
		}
		gw, err := TraceFunc(nil, f, tensor.Randn(dev, 2, 3))
		if err != nil {
			t.Fatal(err)
		}
		l := gw.Layout(GraphOptions{})
		checkLayout(t, "30 branches", l)
	})
}

func TestTraceFuncAndErrors(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		attn := nn.NewMultiHeadAttention(dev, 16, 2)
		nn.Eval(attn)
		g, err := TraceFunc(attn, func(x *tensor.Tensor) *tensor.Tensor {
			out, _ := attn.Forward(x, x, x)
			return out
		}, tensor.Randn(dev, 3, 2, 16))
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, n := range g.Nodes {
			if n.Kind == ParamNode {
				names[n.Name] = true
			}
		}
		for _, want := range []string{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"} {
			if !names[want] {
				t.Errorf("no parameter %s among %v", want, names)
			}
		}
		// Without a model: no names, one module.
		g, err = TraceFunc(nil, func(x *tensor.Tensor) *tensor.Tensor { return x.Exp().Sum() }, tensor.Randn(dev, 3))
		if err != nil {
			t.Fatal(err)
		}
		if got := opModules(g); !slices.Equal(got, []string{"exp@", "sum@"}) {
			t.Errorf("ops %v", got)
		}
		// An input on a NoGrad view is traced too.
		if _, err := Trace(mnistCNN(dev), tensor.Randn(dev.NoGrad(), 1, 1, 28, 28)); err != nil {
			t.Errorf("NoGrad input: %v", err)
		}
		// Failures.
		emb := nn.NewEmbedding(dev, 10, 4)
		ids := tensor.FromInt64s(dev, []int64{1, 2, 3}, 3)
		if _, err := Trace(emb, ids); !errors.Is(err, ErrNotRecorded) {
			t.Errorf("integer input, model without gradients: %v", err)
		}
		if _, err := Trace(mnistCNN(dev), tensor.Randn(dev, 2, 3, 28, 28)); !errors.Is(err, tensor.ErrShape) ||
			!strings.Contains(err.Error(), "viz.Trace") {
			t.Errorf("bad input shape: %v", err)
		}
		if _, err := Trace(nil, ids); err == nil {
			t.Error("nil model accepted")
		}
		if _, err := TraceFunc(nil, nil, ids); err == nil {
			t.Error("nil function accepted")
		}
		// An embedding on an autodiff device traces from integer ids.
		ad := nn.NewEmbedding(dev.Autodiff(), 10, 4)
		g, err = Trace(ad, ids)
		if err != nil {
			t.Fatal(err)
		}
		if got := opModules(g); !slices.Equal(got, []string{"embedding@"}) {
			t.Errorf("ops %v", got)
		}
	})
}

func TestGraphRendering(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		g := mustTrace(t, mnistCNN(dev), tensor.Randn(dev, 2, 1, 28, 28))
		a, b := g.SVG(), g.SVG()
		for _, s := range []string{a, b} {
			if err := xml.Unmarshal([]byte(s), new(struct{})); err != nil {
				t.Fatalf("SVG is not well-formed XML: %v", err)
			}
		}
		if svgID(a) == svgID(b) || svgID(a) == "" {
			t.Errorf("two drawings share the id %q", svgID(a))
		}
		for _, want := range []string{"conv2d", "max_pool2d", "[2 16 26 26] f32", "0: nn.Conv2d", "weight", "url(#" + svgID(a)} {
			if !strings.Contains(a, want) {
				t.Errorf("SVG lacks %q", want)
			}
		}
		if strings.Contains(a, "<script") || strings.Contains(a, "http://") && !strings.Contains(a, `xmlns="http://www.w3.org/2000/svg"`) {
			t.Error("SVG has a script or an external reference")
		}
		html := g.HTML()
		if n := strings.Count(html, "<details"); n != 2 { // the automatic view (every op) and depth 1
			t.Errorf("%d views in the HTML", n)
		}
		if ids := strings.Count(html, `<svg xmlns`); ids != 2 {
			t.Errorf("%d drawings in the HTML", ids)
		}
		mime := g.MIME()
		for _, k := range []string{"text/html", "image/svg+xml", "text/plain"} {
			if mime[k] == "" {
				t.Errorf("no %s", k)
			}
		}
		if s := g.String(); !strings.Contains(s, "conv2d(%0, %1, %2) → [2 16 26 26] float32  [0]") {
			t.Errorf("String:\n%s", s)
		}
		c := g.Collapse(1)
		if got := len(c.Nodes); got != 10 { // input, 8 layers, output
			t.Errorf("collapsed graph has %d nodes:\n%s", got, c)
		}
		if c.Nodes[1].Kind != ModuleNode || c.Nodes[1].Name != "0" || c.Nodes[1].Op != "nn.Conv2d" ||
			!slices.Equal(c.Nodes[1].Shape, []int{2, 16, 26, 26}) {
			t.Errorf("first module node %+v", c.Nodes[1])
		}
	})
}

// svgID returns the id of the first <svg> in s.
func svgID(s string) string {
	_, rest, ok := strings.Cut(s, `<svg `)
	if !ok {
		return ""
	}
	_, rest, ok = strings.Cut(rest, ` id="`)
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, `"`)
	return id
}
