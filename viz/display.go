package viz

import (
	"sync"

	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
)

// For returns the picture viz draws for a value that cannot render itself,
// or nil: a Visual is itself; tensor.DeviceList → DeviceTable; a
// *tensor.Tensor → TensorTable; a train.Result → ResultCurves; a
// *metrics.ConfusionMatrix → ConfusionMatrix; a []train.Event →
// TrainingCurves; plus what other parts of this package register (model
// graphs). The kernel calls it for a cell's last value before falling back
// to text, and renders the result with its Session.
func For(v any) Visual {
	switch x := v.(type) {
	case nil:
		return nil
	case Visual:
		return x
	case tensor.DeviceList:
		return DeviceTable(x)
	case *tensor.Tensor:
		if x == nil {
			return nil
		}
		return TensorTable(x)
	case train.Result:
		return ResultCurves(x, CurveOptions{})
	case *train.Result:
		if x == nil {
			return nil
		}
		return ResultCurves(*x, CurveOptions{})
	case *metrics.ConfusionMatrix:
		if x == nil {
			return nil
		}
		return ConfusionMatrix(x)
	case []train.Event:
		return TrainingCurves(x, CurveOptions{})
	}
	displayersMu.RLock()
	defer displayersMu.RUnlock()
	for _, f := range displayers {
		if vis := f(v); vis != nil {
			return vis
		}
	}
	return nil
}

var (
	displayersMu sync.RWMutex
	displayers   []func(v any) Visual
)

// registerDisplay adds a rule to For, tried in order after the built-in
// ones: the model graphs (graph*.go, tree*.go) register theirs from init.
func registerDisplay(f func(v any) Visual) {
	displayersMu.Lock()
	defer displayersMu.Unlock()
	displayers = append(displayers, f)
}

var _ = registerDisplay // used by the model-graph files
