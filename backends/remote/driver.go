package remote

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kiln-ml/kiln/backends"
)

// Scheme is the URL scheme of remote devices: "remote://host:port/cpu:0".
const Scheme = "remote"

// The environment variables remote devices read.
const (
	// EnvToken holds the token of the servers (KILN_REMOTE_TOKEN).
	EnvToken = "KILN_REMOTE_TOKEN"
	// EnvCA names a PEM file of the CA (or the server's own self-signed
	// certificate) to trust; when set, connections use TLS (KILN_REMOTE_CA).
	EnvCA = "KILN_REMOTE_CA"
	// EnvRemotes lists remote device URLs, separated by commas, for
	// `kiln devices` and device pickers to show (KILN_REMOTE).
	EnvRemotes = "KILN_REMOTE"
)

func init() { backends.RegisterScheme(Scheme, OpenURL) }

// ParseURL splits "remote://host:port/device" into the server address and
// the device there ("cpu:0" when the path is empty).
func ParseURL(url string) (addr, device string, err error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(url), Scheme+"://")
	if !ok {
		return "", "", fmt.Errorf("remote: %q: not a %s:// URL", url, Scheme)
	}
	addr, device, _ = strings.Cut(rest, "/")
	if device == "" {
		device = "cpu:0"
	}
	if addr == "" || !strings.Contains(addr, ":") {
		return "", "", fmt.Errorf("remote: %q: want %s://host:port/device", url, Scheme)
	}
	if _, _, err := splitDevice(device); err != nil {
		return "", "", err
	}
	return addr, device, nil
}

// OptionsFromEnv reads the token (KILN_REMOTE_TOKEN) and, when
// KILN_REMOTE_CA names a PEM file, the certificates to trust for TLS.
func OptionsFromEnv() (Options, error) {
	opts := Options{Token: os.Getenv(EnvToken)}
	if path := os.Getenv(EnvCA); path != "" {
		pem, err := os.ReadFile(path)
		if err != nil {
			return opts, fmt.Errorf("remote: %s: %w", EnvCA, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return opts, fmt.Errorf("remote: %s=%s holds no PEM certificate", EnvCA, path)
		}
		opts.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return opts, nil
}

// OpenURL dials the device a remote:// URL names with OptionsFromEnv and
// returns it Decorated (forwarding the device's fused interfaces). It is
// the opener registered for the scheme, so tensor.OpenURL (and
// tensor.ParseDevice) reach it.
func OpenURL(url string) (backends.Backend, error) {
	addr, device, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	opts, err := OptionsFromEnv()
	if err != nil {
		return nil, err
	}
	if opts.Token == "" {
		return nil, fmt.Errorf("remote: %s: no token: set %s to the token kiln serve printed", url, EnvToken)
	}
	b, err := Dial(addr, device, opts)
	if err != nil {
		return nil, err
	}
	return b.Decorated(), nil
}

// Configured returns the device URLs listed in KILN_REMOTE, trimmed and
// without empty entries.
func Configured() []string {
	var out []string
	for _, u := range strings.Split(os.Getenv(EnvRemotes), ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// Describe dials the device a remote:// URL names with OptionsFromEnv,
// waiting at most timeout for the connection, returns its DeviceInfo (as
// the server reports it) and hangs up. Device listings (`kiln devices`, the
// notebook's %device and the workbench's device picker) use it for the
// URLs of KILN_REMOTE; the error says why a listed device is unavailable.
func Describe(url string, timeout time.Duration) (backends.DeviceInfo, error) {
	addr, device, err := ParseURL(url)
	if err != nil {
		return backends.DeviceInfo{}, err
	}
	opts, err := OptionsFromEnv()
	if err != nil {
		return backends.DeviceInfo{}, err
	}
	opts.DialTimeout = timeout
	b, err := Dial(addr, device, opts)
	if err != nil {
		return backends.DeviceInfo{}, err
	}
	defer b.Close()
	return b.Info(), nil
}
