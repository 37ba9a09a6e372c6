package symbols

import (
	"reflect"
	"sort"
	"strings"
)

//go:generate go run github.com/traefik/yaegi/cmd/yaegi@v0.16.1 extract github.com/kiln-ml/kiln/tensor github.com/kiln-ml/kiln/backends github.com/kiln-ml/kiln/autodiff github.com/kiln-ml/kiln/kernel/display github.com/kiln-ml/kiln/nn github.com/kiln-ml/kiln/optim github.com/kiln-ml/kiln/data github.com/kiln-ml/kiln/metrics github.com/kiln-ml/kiln/store github.com/kiln-ml/kiln/train github.com/kiln-ml/kiln/viz github.com/kiln-ml/kiln/onnx

// Symbols maps "importpath/packagename" to the exported symbols of each
// Kiln package, plus the "." entry holding MapTypes. Pass it to
// interp.Interpreter.Use.
var Symbols = map[string]map[string]reflect.Value{}

// Packages returns the import paths of the Kiln packages in Symbols, sorted:
// the list a generated test can walk to call every exported Kiln function.
func Packages() []string {
	var out []string
	for key := range Symbols {
		if key == "." || key == "github.com/kiln-ml/kiln/kernel/symbols/symbols" {
			continue
		}
		out = append(out, key[:strings.LastIndexByte(key, '/')])
	}
	sort.Strings(out)
	return out
}
