package onnx_test

import (
	"errors"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
)

func TestInitializersAreParamsByName(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m, err := onnx.Load("testdata/models/resnet_block_op13.onnx", dev)
		if err != nil {
			t.Fatal(err)
		}
		defer nn.Release(m)
		var params, buffers []string
		for _, p := range nn.Params(m) {
			params = append(params, p.Name)
		}
		for _, p := range nn.Buffers(m) {
			buffers = append(buffers, p.Name)
		}
		want := "bn1.bias bn1.weight bn2.bias bn2.weight conv1.weight conv2.weight head.bias head.weight"
		if got := strings.Join(params, " "); got != want {
			t.Errorf("params %s, want %s", got, want)
		}
		// Batch-norm statistics are buffers: saved, never trained.
		if got := strings.Join(buffers, " "); got != "bn1.running_mean bn1.running_var bn2.running_mean bn2.running_var" {
			t.Errorf("buffers %s", got)
		}
		if n := nn.NumParams(m); n != 2*4*4*9+4*4+3*4+3 {
			t.Errorf("NumParams = %d", n)
		}
	})
}

func TestParamName(t *testing.T) {
	for in, want := range map[string]string{
		"fc1.weight": "fc1.weight", "onnx::Conv_12": "onnx__Conv_12", "/layer/Constant_output_0": "_layer_Constant_output_0",
		"a..b.": "a.b", "": "_", "héllo": "h_llo",
	} {
		if got := onnx.ParamName(in); got != want {
			t.Errorf("ParamName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDynamicBatch runs one loaded model on batches of 1 and 3, against
// PyTorch's outputs for each.
func TestDynamicBatch(t *testing.T) {
	cases := testutil.LoadFixtures(t, "onnx.json")
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		for _, name := range []string{"mnist_cnn_op13", "transformer_op17", "lstm_op14"} {
			m, err := onnx.Load(filepath.Join("testdata", "models", name+".onnx"), dev)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []string{name, name + "@b3", name + "@b1", name + "@b3s7"} {
				fc, ok := cases[c]
				if !ok {
					continue
				}
				x := fc["in:x"].Tensor(dev)
				y := m.Forward(x)
				testutil.AssertClose(t, c, y, fc["out:y"], 1e-4, 1e-4)
			}
			nn.Release(m)
		}
	})
}

// TestFineTune trains a loaded model for a few steps: gradients reach the
// initializers, the loss falls, and the weights save and load by name.
func TestFineTune(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m, err := onnx.Load("testdata/models/mlp_op13.onnx", dev.Autodiff())
		if err != nil {
			t.Fatal(err)
		}
		defer nn.Release(m)
		dev.Seed(1)
		x := tensor.Randn(dev, 16, 8)
		target := tensor.Randn(dev, 16, 4)
		opt := optim.NewSGD(optim.SGDConfig{LR: 0.05})
		var first, last float64
		for step := range 20 {
			tensor.Scope(func() {
				loss := nn.MSE(m.Forward(x), target, nn.MSEOptions{})
				grads := loss.Backward()
				if step == 0 {
					first = loss.Item()
					if g := nn.Params(m)[0].Param.Grad(grads); g == nil {
						t.Fatalf("no gradient for %s", nn.Params(m)[0].Name)
					}
				}
				last = loss.Item()
				opt.Step(m, grads)
				grads.Release()
			})
		}
		if !(last < first*0.9) {
			t.Errorf("loss went from %v to %v", first, last)
		}
		path := filepath.Join(t.TempDir(), "tuned.safetensors")
		if err := store.WriteSafetensors(path, nn.StateDict(m), nil); err != nil {
			t.Fatal(err)
		}
		sd, _, err := store.ReadSafetensors(path, dev)
		if err != nil {
			t.Fatal(err)
		}
		keys := make([]string, 0, len(sd))
		for k := range sd {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if strings.Join(keys, " ") != "fc1.bias fc1.weight fc2.bias fc2.weight" {
			t.Errorf("saved keys %v", keys)
		}
		fresh, err := onnx.Load("testdata/models/mlp_op13.onnx", dev)
		if err != nil {
			t.Fatal(err)
		}
		defer nn.Release(fresh)
		if _, _, err := nn.LoadStateDict(fresh, sd); err != nil {
			t.Fatal(err)
		}
		want := m.Forward(x).Float64s()
		testutil.AssertValues(t, "reloaded", fresh.Forward(x), []int{16, 4}, want, 1e-6, 1e-6)
	})
}

func TestDescribe(t *testing.T) {
	s, err := onnx.Describe("testdata/models/mnist_cnn_op13.onnx")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ONNX model (IR version", "pytorch 1.13", "ai.onnx 13", "x: FLOAT[batch 1 28 28]",
		"y: FLOAT[batch 10]", "Conv ", "MaxPool", "fc1.weight: FLOAT[32 400]", "initializers: 8 tensors"} {
		if !strings.Contains(s, want) {
			t.Errorf("Describe does not say %q:\n%s", want, s)
		}
	}
	if _, err := onnx.Describe("testdata/nothing.onnx"); err == nil {
		t.Error("Describe of a missing file succeeded")
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	for _, name := range []string{"models/transformer_op17.onnx", "ops/constant_op13.onnx", "models/gru_op13.onnx"} {
		m, err := onnx.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		b := onnx.Encode(m)
		again, err := onnx.Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(onnx.Encode(again)) != string(b) {
			t.Errorf("%s: encoding is not stable", name)
		}
		if onnx.DescribeModel(again) != onnx.DescribeModel(m) {
			t.Errorf("%s: round trip changed the model", name)
		}
	}
}

func TestExternalData(t *testing.T) {
	m, err := onnx.ReadFile("testdata/external/mlp_external.onnx")
	if err != nil {
		t.Fatal(err)
	}
	ext := 0
	for _, t := range m.Graph.Initializers {
		if t.DataLocation == onnx.LocationExternal {
			ext++
		}
	}
	if ext == 0 {
		t.Fatal("the fixture stores no tensor externally")
	}
	loaded, err := onnx.FromProto(m, "x", tensor.CPU())
	if err != nil {
		t.Fatal(err)
	}
	nn.Release(loaded)
	raw, _ := onnx.Decode(onnx.Encode(m))
	if _, err := onnx.FromProto(raw, "unresolved", tensor.CPU()); !errors.Is(err, onnx.ErrCorrupt) {
		t.Errorf("external data without ReadFile: err = %v", err)
	}
}

// TestInferSymbolic infers from the graph inputs alone (declared types of
// other values dropped): the symbolic batch and sequence dimensions survive
// the Shape → Gather → Concat → Reshape computations of attention.
func TestInferSymbolic(t *testing.T) {
	for file, want := range map[string]map[string]string{
		"transformer_op13": {"y": "FLOAT[batch seq 16]"},
		"mnist_cnn_op9":    {"y": "FLOAT[batch 10]"},
		"lstm_op9":         {"y": "FLOAT[batch 5 8]", "h": "FLOAT[2 batch 8]"},
		"shapes_op13":      {"y1": "FLOAT[batch 6 2]", "y12": "FLOAT[batch 3 4]", "y23": "FLOAT[3]"},
	} {
		m, err := onnx.ReadFile(filepath.Join("testdata", "models", file+".onnx"))
		if err != nil {
			t.Fatal(err)
		}
		g := *m.Graph
		g.ValueInfo, g.Outputs = nil, nil
		var opset int64
		for _, o := range m.OpsetImports {
			if o.Domain == "" {
				opset = o.Version
			}
		}
		types := onnx.InferShapes(&g, opset)
		for name, w := range want {
			if got := types[name].String(); got != w {
				t.Errorf("%s: %s is %s, want %s", file, name, got, w)
			}
		}
	}
}
