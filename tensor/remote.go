package tensor

import (
	"fmt"
	"strings"

	"github.com/kiln-ml/kiln/backends"
)

// OpenURL returns the device a URL names, such as
// "remote://host:port/cpu:0" for device cpu:0 of a `kiln serve` process.
// Each URL is opened once per process and shared, like ParseDevice's
// devices. The package serving the scheme must be linked (import _
// "github.com/kiln-ml/kiln/backends/remote"); an unknown scheme, an
// unreachable server or a refused token is an error wrapping ErrNoDevice.
func OpenURL(url string) (Device, error) {
	url = strings.TrimSpace(url)
	devicesMu.Lock()
	defer devicesMu.Unlock()
	if st, ok := opened[url]; ok {
		return Device{st: st}, nil
	}
	b, err := backends.OpenURL(url)
	if err != nil {
		return Device{}, fmt.Errorf("tensor: device %q: %w: %w", url, ErrNoDevice, err)
	}
	st := &deviceState{name: url, info: b.Info(), backend: b}
	if st.info.MemoryBytes > 0 {
		st.budget.Store(st.info.MemoryBytes / 10 * 8) // as openDevice does
	}
	opened[url] = st
	return Device{st: st}, nil
}
