package onnx

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/kiln-ml/kiln/tensor"
)

// Save writes m to path as an ONNX file: the graph it was loaded from,
// unchanged, with each initializer holding its parameter's current value,
// so an imported model that was fine-tuned (or loaded with other weights,
// such as a checkpoint's) goes back out as ONNX. Initializers the file kept
// as external data are written inline. The file is written to a temporary
// name and renamed into place. It fails for a Model that Load did not make
// and on an I/O error, leaving path untouched.
func (m *Model) Save(path string) error {
	if m == nil || m.g == nil || m.g.proto == nil || m.g.proto.Graph == nil {
		return errNotLoaded
	}
	model := *m.g.proto
	graph := *model.Graph
	graph.Initializers = make([]*TensorProto, len(m.g.proto.Graph.Initializers))
	for i, init := range m.g.proto.Graph.Initializers {
		p, ok := m.g.params[init.Name]
		if !ok || p == nil || p.Tensor == nil {
			graph.Initializers[i] = init
			continue
		}
		var tp *TensorProto
		if err := tensor.Try(func() { tp = tensorProto(init.Name, p.Tensor) }); err != nil {
			return fmt.Errorf("onnx: save %s: initializer %s: %w", path, init.Name, err)
		}
		graph.Initializers[i] = tp
	}
	model.Graph = &graph
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("onnx: save %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(Encode(&model)); err != nil {
		tmp.Close()
		return fmt.Errorf("onnx: save %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("onnx: save %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("onnx: save %s: %w", path, err)
	}
	return nil
}
