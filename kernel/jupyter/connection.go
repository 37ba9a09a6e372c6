package jupyter

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ConnectionInfo is the content of a Jupyter connection file: where the
// kernel's five sockets listen and the key that signs messages.
type ConnectionInfo struct {
	Transport       string `json:"transport"`
	IP              string `json:"ip"`
	ShellPort       int    `json:"shell_port"`
	IOPubPort       int    `json:"iopub_port"`
	StdinPort       int    `json:"stdin_port"`
	ControlPort     int    `json:"control_port"`
	HBPort          int    `json:"hb_port"`
	SignatureScheme string `json:"signature_scheme"`
	Key             string `json:"key"`
	KernelName      string `json:"kernel_name,omitempty"`
}

// ReadConnectionFile reads and checks a connection file. It fails if the
// file cannot be read, is not JSON, or names a transport other than tcp or
// a signature scheme other than hmac-sha256.
func ReadConnectionFile(path string) (ConnectionInfo, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return ConnectionInfo{}, fmt.Errorf("jupyter: connection file: %w", err)
	}
	var c ConnectionInfo
	if err := json.Unmarshal(b, &c); err != nil {
		return ConnectionInfo{}, fmt.Errorf("jupyter: connection file %s: %w", path, err)
	}
	if err := c.check(); err != nil {
		return ConnectionInfo{}, fmt.Errorf("jupyter: connection file %s: %w", path, err)
	}
	return c, nil
}

func (c *ConnectionInfo) check() error {
	if c.Transport == "" {
		c.Transport = "tcp"
	}
	if c.Transport != "tcp" {
		return fmt.Errorf("transport %q not supported (only tcp)", c.Transport)
	}
	if c.IP == "" {
		c.IP = "127.0.0.1"
	}
	if c.SignatureScheme == "" {
		c.SignatureScheme = "hmac-sha256"
	}
	if c.SignatureScheme != "hmac-sha256" {
		return fmt.Errorf("signature scheme %q not supported (only hmac-sha256)", c.SignatureScheme)
	}
	for _, p := range []int{c.ShellPort, c.IOPubPort, c.StdinPort, c.ControlPort, c.HBPort} {
		if p < 0 || p > 65535 {
			return fmt.Errorf("port %d out of range", p)
		}
	}
	return nil
}

// NewConnectionInfo returns connection info for ip ("" means 127.0.0.1)
// with five free TCP ports and a random key. The ports are free when
// chosen; another process could take one before the kernel binds it
// (KernelProcess.Connect starts the kernel again with new ports then).
//
// Ports are drawn at random below the system's ephemeral range (the one
// bind(port 0) and outgoing connections take from, so the busiest one on a
// machine running many clients), falling back to port 0 if no port there
// can be bound.
func NewConnectionInfo(ip string) (ConnectionInfo, error) {
	if ip == "" {
		ip = "127.0.0.1"
	}
	c := ConnectionInfo{Transport: "tcp", IP: ip, SignatureScheme: "hmac-sha256", Key: NewID()}
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	lo, hi := portPool()
	for _, p := range []*int{&c.ShellPort, &c.IOPubPort, &c.StdinPort, &c.ControlPort, &c.HBPort} {
		var l net.Listener
		for try := 0; try < 64 && l == nil && hi > lo; try++ {
			l, _ = net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(lo+rand.IntN(hi-lo))))
		}
		if l == nil {
			var err error
			if l, err = net.Listen("tcp", net.JoinHostPort(ip, "0")); err != nil {
				return ConnectionInfo{}, fmt.Errorf("jupyter: find free port on %s: %w", ip, err)
			}
		}
		ls = append(ls, l)
		*p = l.Addr().(*net.TCPAddr).Port
	}
	return c, nil
}

// portPool returns the range [lo, hi) that NewConnectionInfo draws ports
// from: up to 12000 ports just below the ephemeral range that Linux lists in
// /proc/sys/net/ipv4/ip_local_port_range (32768 where it cannot be read).
func portPool() (lo, hi int) {
	hi = 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 1024 {
				hi = n
			}
		}
	}
	return max(1024, hi-12000), hi
}

// WriteFile writes the connection info to path with mode 0600 (the key is
// a secret), creating the directory if needed.
func (c ConnectionInfo) WriteFile(path string) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("jupyter: write connection file: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("jupyter: write connection file: %w", err)
	}
	return nil
}

// Endpoint returns the ZeroMQ endpoint for port, e.g. "tcp://127.0.0.1:5555".
func (c ConnectionInfo) Endpoint(port int) string {
	return "tcp://" + net.JoinHostPort(c.IP, strconv.Itoa(port))
}

// KernelSpec is the content of a kernelspec's kernel.json. Argv may contain
// "{connection_file}", replaced by the connection file's path at start.
type KernelSpec struct {
	Argv          []string          `json:"argv"`
	DisplayName   string            `json:"display_name"`
	Language      string            `json:"language"`
	InterruptMode string            `json:"interrupt_mode,omitempty"` // "signal" (default) or "message"
	Env           map[string]string `json:"env,omitempty"`
	Metadata      map[string]any    `json:"metadata,omitempty"`
}

// ReadKernelSpec reads dir/kernel.json. It fails if the file cannot be read
// or has no argv.
func ReadKernelSpec(dir string) (KernelSpec, error) {
	b, err := os.ReadFile(filepath.Join(dir, "kernel.json"))
	if err != nil {
		return KernelSpec{}, fmt.Errorf("jupyter: kernelspec: %w", err)
	}
	var s KernelSpec
	if err := json.Unmarshal(b, &s); err != nil {
		return KernelSpec{}, fmt.Errorf("jupyter: kernelspec %s: %w", dir, err)
	}
	if len(s.Argv) == 0 {
		return KernelSpec{}, fmt.Errorf("jupyter: kernelspec %s: empty argv", dir)
	}
	return s, nil
}

// WriteKernelSpec writes spec as dir/kernel.json, creating dir.
func WriteKernelSpec(dir string, spec KernelSpec) error {
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("jupyter: write kernelspec: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kernel.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("jupyter: write kernelspec: %w", err)
	}
	return nil
}
