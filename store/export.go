package store

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strconv"

	"github.com/kiln-ml/kiln/tensor"
)

// ExportMetadata is the metadata `kiln export` and the workbench write into
// a file exported from checkpoint info (a safetensors __metadata__, GGUF
// kiln.* keys): "format": "pt", as Hugging Face's tools expect for PyTorch
// weights, and where the weights came from: the checkpoint's absolute
// folder, epoch, step, format, creation time, metrics (NaN and infinities
// as strings, which JSON numbers cannot hold) and the Kiln version given.
func ExportMetadata(info CheckpointInfo, version string) map[string]string {
	src, err := filepath.Abs(info.Dir)
	if err != nil {
		src = info.Dir
	}
	md := map[string]string{
		"format":                 "pt",
		"kiln.source":            src,
		"kiln.epoch":             strconv.Itoa(info.Epoch),
		"kiln.step":              strconv.Itoa(info.Step),
		"kiln.checkpoint_format": fmt.Sprintf("%s v%d", CheckpointFormat, info.Version),
		"kiln.version":           version,
	}
	if info.Created != "" {
		md["kiln.created"] = info.Created
	}
	if len(info.Metrics) > 0 {
		m := map[string]any{}
		for k, v := range info.Metrics {
			m[k] = MetricValue(v)
		}
		if b, err := json.Marshal(m); err == nil {
			md["kiln.metrics"] = string(b)
		}
	}
	return md
}

// MetricValue returns v, or its name ("NaN", "+Inf", "-Inf") for the
// values JSON cannot hold as numbers.
func MetricValue(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return v
}

// ExportGGUF writes the model tensors of the checkpoint r reads to a GGUF
// file at path, as typ where a tensor's shape allows it (GGUFTypeFor), with
// md (ExportMetadata) under its own keys ("format" left out) and
// general.name the run's folder name. A tensor that cannot be read or
// converted fails naming it.
func ExportGGUF(r *CheckpointReader, path string, typ GGMLType, md map[string]string) error {
	meta := map[string]any{"general.name": filepath.Base(filepath.Dir(filepath.Dir(r.Info.Dir)))}
	for k, v := range md {
		if k != "format" {
			meta[k] = v
		}
	}
	var tensors []GGUFTensor
	for _, name := range r.Model.Names() {
		t, err := r.Model.Tensor(name, tensor.CPU())
		if err != nil {
			return err
		}
		var vals []float32
		err = tensor.Try(func() { vals = t.To(tensor.Float32).Float32s() })
		shape, dtype := t.Shape(), t.DType()
		t.Release()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		tensors = append(tensors, GGUFTensor{Name: name, Shape: shape, Type: GGUFTypeFor(typ, dtype, shape), Values: vals})
	}
	return WriteGGUF(path, meta, tensors)
}
