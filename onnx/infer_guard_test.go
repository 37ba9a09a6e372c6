package onnx

import (
	"runtime/debug"
	"strconv"
	"testing"
)

// tensorValue declares a tensor value of element type et; a negative size
// is the symbol "batch".
func tensorValue(name string, et int32, dims ...int64) *ValueInfoProto {
	t := &TypeProto{Kind: "tensor", ElemType: et, HasShape: true, Shape: []Dim{}}
	for _, d := range dims {
		if d < 0 {
			t.Shape = append(t.Shape, Dim{Param: "batch"})
		} else {
			t.Shape = append(t.Shape, Dim{Value: d, HasValue: true})
		}
	}
	return &ValueInfoProto{Name: name, Type: t}
}

// TestInferShapesBoundsItsWork feeds inference values that would make it
// allocate without bound: a shape tensor claiming 1<<62 elements, and
// products of a symbol with itself, whose symbol lists double at each
// step. Inference finishes without a panic (recovered or not), leaving
// what it cannot build unknown.
func TestInferShapesBoundsItsWork(t *testing.T) {
	huge := &GraphProto{
		Nodes: []*NodeProto{
			{OpType: "Reshape", Inputs: []string{"x", "s"}, Outputs: []string{"y"}},
			{OpType: "ConstantOfShape", Inputs: []string{"s"}, Outputs: []string{"z"}},
		},
		Inputs:  []*ValueInfoProto{tensorValue("x", TypeFloat, -1), tensorValue("s", TypeInt64, 1<<62)},
		Outputs: []*ValueInfoProto{{Name: "y"}, {Name: "z"}},
	}
	res := inferGraph(huge, 13)
	if res.bug != nil {
		t.Fatal(res.bug)
	}
	if y, z := res.env["y"].valueType(), res.env["z"].valueType(); y.RankKnown || z.RankKnown {
		t.Errorf("y %v, z %v: want unknown ranks", y, z)
	}

	// Eight squarings of the batch size would be batch^256.
	squares := &GraphProto{
		Nodes:   []*NodeProto{{OpType: "Shape", Inputs: []string{"x"}, Outputs: []string{"v0"}}},
		Inputs:  []*ValueInfoProto{tensorValue("x", TypeFloat, -1)},
		Outputs: []*ValueInfoProto{{Name: "out"}},
	}
	for i := 1; i <= 8; i++ {
		prev, next := "v"+strconv.Itoa(i-1), "v"+strconv.Itoa(i)
		squares.Nodes = append(squares.Nodes, &NodeProto{OpType: "Mul", Inputs: []string{prev, prev}, Outputs: []string{next}})
	}
	squares.Nodes = append(squares.Nodes, &NodeProto{OpType: "ConstantOfShape", Inputs: []string{"v8"}, Outputs: []string{"out"}})
	res = inferGraph(squares, 13)
	if res.bug != nil {
		t.Fatal(res.bug)
	}
	if got := res.env["out"].valueType().String(); got != "FLOAT[?]" {
		t.Errorf("out = %s, want FLOAT[?]", got)
	}
	if got := res.env["v4"].valueType().String(); got != "INT64[1]" || len(res.env["v4"].val[0].syms) != 16 {
		t.Errorf("v4 = %s with %v: want batch^16 followed", got, res.env["v4"].val)
	}
}

// TestInferNodeWithoutValidation calls inferNode on nodes that validation
// would refuse (each case is one division, index or allocation inference
// guards on its own): no panic, and the sizes it cannot compute unknown.
func TestInferNodeWithoutValidation(t *testing.T) {
	img := shapeInfo(TypeFloat, dimsMono([]int64{1, 2, 8, 8}))
	w := shapeInfo(TypeFloat, dimsMono([]int64{4, 2, 3, 3}))
	ints := func(name string, v ...int64) *AttributeProto {
		return &AttributeProto{Name: name, Type: AttrInts, Ints: v}
	}
	int1 := func(name string, v int64) *AttributeProto { return &AttributeProto{Name: name, Type: AttrInt, I: v} }
	vec := func(v ...int64) *info { return numsInfo(TypeInt64, intsMono(v), []mono{known(int64(len(v)))}) }
	cases := []struct {
		name  string
		op    string
		nout  int
		in    []*info
		attrs []*AttributeProto
		want  string // the first output's type
	}{
		{"zero stride", "Conv", 1, []*info{img, w}, []*AttributeProto{ints("strides", 0, 1)}, "FLOAT[1 4 ? 6]"},
		{"zero stride, same padding", "MaxPool", 1, []*info{img}, []*AttributeProto{ints("kernel_shape", 2, 2), ints("strides", 1, 0), {Name: "auto_pad", Type: AttrString, S: []byte("SAME_UPPER")}}, "FLOAT[1 2 8 ?]"},
		{"zero dilation", "Conv", 1, []*info{img, w}, []*AttributeProto{ints("dilations", 0, 1)}, "FLOAT[1 4 ? 6]"},
		{"huge kernel", "AveragePool", 1, []*info{img}, []*AttributeProto{ints("kernel_shape", 1<<62, 2)}, "FLOAT[1 2 ? 7]"},
		{"zero num_outputs", "Split", 2, []*info{img}, []*AttributeProto{int1("num_outputs", 0)}, "FLOAT[? 2 8 8]"},
		{"slice without inputs", "Slice", 1, nil, nil, "?[…]"},
		{"slice of a value shorter than its shape", "Slice", 1, []*info{{et: TypeInt64, shape: []mono{known(8)}, rank: true, val: intsMono([]int64{1, 2})}, vec(4), vec(8)}, nil, "INT64[4]"},
		{"slice stepping by MinInt64", "Slice", 1, []*info{img, vec(7), vec(0), vec(3), vec(-1 << 63)}, nil, "FLOAT[1 2 8 1]"},
		{"reshape to 1<<62 unknown sizes", "Reshape", 1, []*info{img, shapeInfo(TypeInt64, []mono{known(1 << 62)})}, nil, "FLOAT[…]"},
		{"reshape to a negative rank", "Reshape", 1, []*info{img, shapeInfo(TypeInt64, []mono{known(-5)})}, nil, "FLOAT[…]"},
		{"constant of a negative rank", "ConstantOfShape", 1, []*info{shapeInfo(TypeInt64, []mono{known(-5)})}, nil, "FLOAT[…]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := &NodeProto{OpType: c.op, Name: "n", Attributes: c.attrs}
			for k := range c.in {
				n.Inputs = append(n.Inputs, "in"+strconv.Itoa(k))
			}
			for k := range c.nout {
				n.Outputs = append(n.Outputs, "out"+strconv.Itoa(k))
			}
			attrs := map[string]*AttributeProto{}
			for _, a := range c.attrs {
				attrs[a.Name] = a
			}
			outs := inferNode(n, attrs, c.in, 13)
			if len(outs) == 0 || outs[0] == nil {
				t.Fatalf("no outputs")
			}
			if got := outs[0].valueType().String(); got != c.want {
				t.Errorf("output %s, want %s", got, c.want)
			}
		})
	}
}

// TestTopoSortDoesNotRecurse sorts a chain of 200,000 nodes under an
// 8 MiB stack limit: a recursive depth-first search would overflow it.
func TestTopoSortDoesNotRecurse(t *testing.T) {
	const n = 200_000
	g := &GraphProto{Inputs: []*ValueInfoProto{tensorValue("v0", TypeFloat, 1)}, Outputs: []*ValueInfoProto{{Name: "v" + strconv.Itoa(n)}}}
	// Listed last to first, so every node's producer is still unvisited.
	for i := n; i >= 1; i-- {
		g.Nodes = append(g.Nodes, &NodeProto{OpType: "Relu", Inputs: []string{"v" + strconv.Itoa(i-1)}, Outputs: []string{"v" + strconv.Itoa(i)}})
	}
	defer debug.SetMaxStack(debug.SetMaxStack(8 << 20))
	order, err := topoSort(g)
	if err != nil {
		t.Fatal(err)
	}
	if len(order) != n || order[0].Outputs[0] != "v1" || order[n-1].Outputs[0] != "v"+strconv.Itoa(n) {
		t.Errorf("order of %d nodes from %s to %s", len(order), order[0].Outputs[0], order[len(order)-1].Outputs[0])
	}
}
