package onnx

import (
	"fmt"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
)

// ExportCheckpoint writes the ONNX model graph (a file) with the weights
// of a Kiln checkpoint folder in place of its own, to path: the graph is
// imported, the checkpoint's tensors are loaded into it by the names Load
// gives its initializers, and the model is saved. A checkpoint whose
// tensors do not fit the graph is an error naming both.
func ExportCheckpoint(graph, checkpoint, path string) error {
	m, err := Load(graph, tensor.CPU())
	if err != nil {
		return err
	}
	defer nn.Release(m)
	if err := store.LoadModel(m, checkpoint); err != nil {
		return fmt.Errorf("the checkpoint's weights do not fit the graph %s: %w", graph, err)
	}
	return m.Save(path)
}
