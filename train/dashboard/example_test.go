package dashboard_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
	"github.com/kiln-ml/kiln/train/dashboard"
)

// Run shows the dashboard on a terminal; here the output is a buffer, so
// the run logs plain lines into it instead.
func ExampleRun() {
	ad := tensor.CPU().Autodiff()
	ad.Seed(1)
	model := nn.NewLinear(ad, 4, 3)
	defer nn.Release(model)
	loader, err := data.NewLoader(blobs(96), data.LoaderConfig{BatchSize: 16})
	if err != nil {
		panic(err)
	}
	s := &train.Supervised{Config: train.Config{Epochs: 2, LogEvery: 3}, Train: loader}
	learner := &train.Learner{Model: model, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})}

	var out bytes.Buffer
	res, err := dashboard.Run(context.Background(), s, learner, dashboard.Options{Title: "blobs", Output: &out})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Reason, res.Epochs, "epochs,", res.Steps, "steps")
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		fmt.Println(strings.Join(strings.Fields(line)[:4], " "), "…")
	}
	// Output:
	// completed 2 epochs, 12 steps
	// epoch 1/2 batch 3/6 …
	// epoch 1/2 batch 6/6 …
	// epoch 1/2 train loss …
	// epoch 2/2 batch 3/6 …
	// epoch 2/2 batch 6/6 …
	// epoch 2/2 train loss …
}
