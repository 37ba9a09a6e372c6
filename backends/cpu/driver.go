package cpu

import (
	"fmt"
	"sync"

	"github.com/kiln-ml/kiln/backends"
)

// Default is the process-wide CPU backend behind the "cpu" device.
var Default = sync.OnceValue(func() *Backend { return New(0) })

type driver struct{}

func (driver) Kind() string  { return "cpu" }
func (driver) Priority() int { return 0 }
func (driver) Enumerate() []backends.DeviceInfo {
	return []backends.DeviceInfo{Default().Info()}
}
func (driver) Open(index int) (backends.Backend, error) {
	if index != 0 {
		return nil, fmt.Errorf("cpu: there is one CPU device (index 0), not %d", index)
	}
	return Default(), nil
}

func init() { backends.Register(driver{}) }

var _ backends.Backend = (*Backend)(nil)
