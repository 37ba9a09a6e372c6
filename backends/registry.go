package backends

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Driver opens the devices of one kind ("cpu", "cuda", …).
type Driver interface {
	// Kind is the device kind this driver serves, as written in device
	// names ("cuda" in "cuda:0").
	Kind() string
	// Priority orders kinds when choosing a default device; higher wins.
	Priority() int
	// Enumerate lists the devices present now. It never fails: a kind
	// whose library or hardware is missing lists nothing.
	Enumerate() []DeviceInfo
	// Open returns the backend of device index, or an error saying what is
	// missing (no such device, no driver library).
	Open(index int) (Backend, error)
}

var (
	registryMu sync.Mutex
	drivers    = map[string]Driver{}
)

// Register makes a driver available under its kind. Registering a kind twice
// replaces the earlier driver.
func Register(d Driver) {
	registryMu.Lock()
	defer registryMu.Unlock()
	drivers[d.Kind()] = d
}

// Lookup returns the driver registered for kind.
func Lookup(kind string) (Driver, error) {
	registryMu.Lock()
	defer registryMu.Unlock()
	d, ok := drivers[kind]
	if !ok {
		return nil, fmt.Errorf("backends: no driver for device kind %q (known: %v)", kind, kindsLocked())
	}
	return d, nil
}

// Drivers returns every registered driver, highest priority first.
func Drivers() []Driver {
	registryMu.Lock()
	defer registryMu.Unlock()
	out := make([]Driver, 0, len(drivers))
	for _, d := range drivers {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Priority() != out[j].Priority() {
			return out[i].Priority() > out[j].Priority()
		}
		return out[i].Kind() < out[j].Kind()
	})
	return out
}

func kindsLocked() []string {
	var ks []string
	for k := range drivers {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// URLOpener opens the backend a device URL names, such as
// "remote://host:port/cpu:0".
type URLOpener func(url string) (Backend, error)

var schemes = map[string]URLOpener{}

// RegisterScheme makes open serve device names of the form "scheme://…".
// Registering a scheme twice replaces the earlier opener.
func RegisterScheme(scheme string, open URLOpener) {
	registryMu.Lock()
	defer registryMu.Unlock()
	schemes[scheme] = open
}

// OpenURL opens the backend url names with its scheme's opener. It fails
// when url has no scheme or no package registered its scheme.
func OpenURL(url string) (Backend, error) {
	scheme, _, ok := strings.Cut(url, "://")
	registryMu.Lock()
	open := schemes[scheme]
	registryMu.Unlock()
	if !ok || open == nil {
		return nil, fmt.Errorf("backends: no opener for device URL %q (link the package of scheme %q, e.g. import _ \"github.com/kiln-ml/kiln/backends/remote\")", url, scheme)
	}
	return open(url)
}
