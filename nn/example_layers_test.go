package nn_test

import (
	"fmt"
	"strconv"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// A small CNN for 28×28 grey images built as a Sequential: its summary,
// with the output shape of each layer recorded by running a batch through
// the layers one at a time, and its PyTorch-style state-dict names.
func ExampleSequential() {
	dev := tensor.CPU()
	model := nn.NewSequential(
		nn.NewConv2d(dev, 1, 8, 3, nn.ConvConfig{Padding: []int{1}}),
		nn.NewBatchNorm2d(dev, 8),
		nn.ReLU{},
		nn.NewMaxPool2d(2),
		nn.NewConv2d(dev, 8, 16, 3, nn.ConvConfig{Same: true}),
		nn.ReLU{},
		nn.NewAdaptiveAvgPool2d(1, 1),
		nn.NewFlatten(),
		nn.NewDropout(0.25),
		nn.NewLinear(dev, 16, 10),
	)
	nn.Eval(model)

	x := tensor.Randn(dev, 4, 1, 28, 28)
	shapes := map[string][]int{}
	for i, layer := range model {
		x = layer.Forward(x)
		shapes[strconv.Itoa(i)] = x.Shape()
	}
	shapes[""] = x.Shape()
	fmt.Print(nn.Summary(model, nn.SummaryOptions{OutputShapes: shapes, MaxDepth: 1}))

	for _, np := range nn.Params(model)[:4] {
		fmt.Println(np.Name, np.Param.Shape())
	}
	// Output:
	// ===============================================================================
	// Module         Type                  Output shape  Param shape  Param #
	// ===============================================================================
	// nn.Sequential                        [4 10]                       1,434
	// ├─0            nn.Conv2d             [4 8 28 28]                     80
	// ├─1            nn.BatchNorm2d        [4 8 28 28]                     16
	// ├─2            nn.ReLU               [4 8 28 28]                     --
	// ├─3            nn.MaxPool2d          [4 8 14 14]                     --
	// ├─4            nn.Conv2d             [4 16 14 14]                 1,168
	// ├─5            nn.ReLU               [4 16 14 14]                    --
	// ├─6            nn.AdaptiveAvgPool2d  [4 16 1 1]                      --
	// ├─7            nn.Flatten            [4 16]                          --
	// ├─8            nn.Dropout            [4 16]                          --
	// └─9            nn.Linear             [4 10]                         170
	// ===============================================================================
	// Trainable params: 1,434
	// Frozen params: 0
	// Total params: 1,434
	// Buffer elements: 17
	// Parameter and buffer memory: 5.7 KiB
	// ===============================================================================
	// 0.weight [8 1 3 3]
	// 0.bias [8]
	// 1.weight [8]
	// 1.bias [8]
}
