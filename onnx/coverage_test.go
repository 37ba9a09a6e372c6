package onnx_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/onnx"
)

// issueOperators are the operators issue 10 asks for; every one must
// appear in a fixture model whose outputs are checked.
var issueOperators = strings.Fields(`Add Sub Mul Div Pow Neg Abs Sqrt Exp Log Erf Tanh Sigmoid Relu LeakyRelu
	Elu Selu Gelu HardSigmoid HardSwish Softplus Clip Min Max Sum Mean MatMul Gemm Conv ConvTranspose MaxPool
	AveragePool GlobalAveragePool GlobalMaxPool BatchNormalization LayerNormalization GroupNormalization
	InstanceNormalization Dropout Flatten Reshape Transpose Squeeze Unsqueeze Concat Split Slice Gather
	GatherElements ScatterElements Shape Size Expand Tile Pad Where Equal Less Greater Not And Or Cast
	ConstantOfShape Constant Range ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL2 Softmax
	LogSoftmax ArgMax ArgMin TopK CumSum Identity Resize Einsum LSTM GRU`)

func TestFixturesCoverOperators(t *testing.T) {
	opsets := map[string]map[int64]bool{}
	for _, dir := range []string{"models", "ops"} {
		files, err := filepath.Glob(filepath.Join("testdata", dir, "*.onnx"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			m, err := onnx.Decode(raw)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			var v int64
			for _, o := range m.OpsetImports {
				if o.Domain == "" {
					v = o.Version
				}
			}
			for _, n := range m.Graph.Nodes {
				if opsets[n.OpType] == nil {
					opsets[n.OpType] = map[int64]bool{}
				}
				opsets[n.OpType][v] = true
			}
		}
	}
	for _, op := range issueOperators {
		if len(opsets[op]) == 0 {
			t.Errorf("no fixture runs %s", op)
		}
	}
	names := make([]string, 0, len(opsets))
	for op := range opsets {
		names = append(names, op)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, op := range names {
		var vs []int
		for v := range opsets[op] {
			vs = append(vs, int(v))
		}
		sort.Ints(vs)
		fmt.Fprintf(&b, "%s %v; ", op, vs)
	}
	t.Logf("operators and the opsets their fixtures use: %s", b.String())
}
