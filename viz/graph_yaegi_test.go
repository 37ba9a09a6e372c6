package viz_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/kernel/symbols"
	"github.com/kiln-ml/kiln/viz"
	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"
)

// graphSymbols exposes the graph API to the interpreter the way the
// kernel's generated tables will once they include viz.
var graphSymbols = map[string]map[string]reflect.Value{
	"github.com/kiln-ml/kiln/viz/viz": {
		"ModuleTree":     reflect.ValueOf(viz.ModuleTree),
		"ModuleTreeWith": reflect.ValueOf(viz.ModuleTreeWith),
		"Trace":          reflect.ValueOf(viz.Trace),
		"TraceFunc":      reflect.ValueOf(viz.TraceFunc),
		"Graph":          reflect.ValueOf((*viz.Graph)(nil)),
		"GraphOptions":   reflect.ValueOf((*viz.GraphOptions)(nil)),
		"Tree":           reflect.ValueOf((*viz.Tree)(nil)),
	},
}

// A model declared in a notebook cell: its module tree and its traced
// graph, made by calls from the cell itself.
func TestYaegiModelTreeAndGraph(t *testing.T) {
	i := interp.New(interp.Options{})
	for _, s := range []map[string]map[string]reflect.Value{stdlib.Symbols, symbols.Symbols, graphSymbols} {
		if err := i.Use(s); err != nil {
			t.Fatal(err)
		}
	}
	const src = `
package main

import (
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/viz"
)

type block struct {
	fc   *nn.Linear
	Norm *nn.LayerNorm
}

type Net struct {
	conv   *nn.Conv2d
	Blocks []*block
	head   *nn.Linear
}

func (n *Net) Forward(x *tensor.Tensor) *tensor.Tensor {
	h := n.conv.Forward(x).Relu().Flatten(1, -1)
	for _, b := range n.Blocks {
		h = b.Norm.Forward(b.fc.Forward(h))
	}
	return n.head.Forward(h)
}

func build() (*Net, *tensor.Tensor) {
	dev := tensor.CPU()
	net := &Net{conv: nn.NewConv2d(dev, 1, 2, 3), head: nn.NewLinear(dev, 8, 3)}
	for i := 0; i < 2; i++ {
		net.Blocks = append(net.Blocks, &block{fc: nn.NewLinear(dev, 8, 8), Norm: nn.NewLayerNorm(dev, []int{8})})
	}
	return net, tensor.Randn(dev, 4, 1, 4, 4)
}

func Tree() (string, string) {
	net, x := build()
	tr, err := viz.ModuleTreeWith(net, x)
	if err != nil {
		panic(err)
	}
	return viz.ModuleTree(net).HTML(), tr.String()
}

func Graph() (string, string) {
	net, x := build()
	g, err := viz.Trace(net, x)
	if err != nil {
		panic(err)
	}
	return g.String(), g.SVG()
}
`
	if _, err := i.Eval(src); err != nil {
		t.Fatal(err)
	}
	call := func(name string) (string, string) {
		v, err := i.Eval("main." + name)
		if err != nil {
			t.Fatal(err)
		}
		out := v.Call(nil)
		return out[0].String(), out[1].String()
	}
	html, table := call("Tree")
	for _, want := range []string{"<b>conv</b>", "<b>Blocks</b>", "<b>fc</b>", "<b>Norm</b>", "<b>head</b>", "nn.LayerNorm", "176 params"} {
		if !strings.Contains(html, want) {
			t.Errorf("tree HTML lacks %q", want)
		}
	}
	if strings.Contains(html, "Xconv") || strings.Contains(html, "Xfc") {
		t.Error("tree shows yaegi's X prefix")
	}
	for _, want := range []string{"Output shape", "[4 3]", "[4 8]"} {
		if !strings.Contains(table, want) {
			t.Errorf("tree table lacks %q:\n%s", want, table)
		}
	}
	text, svg := call("Graph")
	// The interpreted Forward leaves no compiled frames: ops that read
	// parameters go to their owners, the rest to the model.
	for _, want := range []string{"conv2d(", "[conv]", "[Blocks.0.fc]", "[Blocks.1.Norm]", "[head]", "relu(%"} {
		if !strings.Contains(text, want) {
			t.Errorf("graph lacks %q:\n%s", want, text)
		}
	}
	if !strings.Contains(svg, "Norm: nn.LayerNorm") || !strings.Contains(svg, "fc: nn.Linear") {
		t.Errorf("drawing lacks the module boxes")
	}
}
