package strict

import (
	"fmt"
	"sync"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
)

// Default is the process-wide strict backend behind the "strict" device,
// wrapping a CPU backend of its own.
var Default = sync.OnceValue(func() *Backend { return New(cpu.New(0)) })

type driver struct{}

func (driver) Kind() string  { return "strict" }
func (driver) Priority() int { return -1 } // never the default device
func (driver) Enumerate() []backends.DeviceInfo {
	return []backends.DeviceInfo{Default().Info()}
}
func (driver) Open(index int) (backends.Backend, error) {
	if index != 0 {
		return nil, fmt.Errorf("strict: there is one strict device (index 0), not %d", index)
	}
	return Default(), nil
}

func init() { backends.Register(driver{}) }

var _ backends.Backend = (*Backend)(nil)
