package kernel_test

import (
	"context"
	"fmt"

	"github.com/kiln-ml/kiln/kernel"
)

// Variables lists the session's variables with their summaries, and
// InspectVariable gives one variable's richer view. While a cell runs,
// Variables answers from the snapshot taken when the last cell finished
// (when served by kernel.Serve) and InspectVariable fails with ErrBusy.
func ExampleSession_Variables() {
	s, err := kernel.New(kernel.Options{MemoryLimit: -1})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	if _, err := s.Execute(context.Background(), `
x := tensor.Full(tensor.CPU(), 2, 2, 3)
net := nn.NewLinear(tensor.CPU(), 4, 2)
names := []string{"ada", "alan"}`, nil); err != nil {
		panic(err)
	}
	snap := s.Variables()
	fmt.Println("live:", snap.Live)
	for _, v := range snap.Variables {
		fmt.Printf("%s (%s): %s\n", v.Name, v.Kind, v.Value)
	}
	d, err := s.InspectVariable("net")
	if err != nil {
		panic(err)
	}
	for _, p := range d.Parameters {
		fmt.Println(p.Name, p.Shape, p.Count)
	}
	// Output:
	// live: true
	// names (slice): len 2
	// net (module): module, 10 parameters
	// x (tensor): [2 3] float32 on cpu, 24 B: 2, 2, 2, …
	// weight [2 4] 8
	// bias [2] 2
}
