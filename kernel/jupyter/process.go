package jupyter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// StartOptions configures StartKernel.
type StartOptions struct {
	// Spec gives the command line ("{connection_file}" in Argv is replaced),
	// extra environment and the interrupt mode. Required: Spec.Argv.
	Spec KernelSpec
	// Name is the kernelspec's name, recorded in the connection file.
	Name string
	// Dir is the kernel's working directory. Default: the caller's.
	Dir string
	// Env adds "KEY=value" entries to the caller's environment and Spec.Env.
	Env []string
	// IP is the address the kernel listens on. Default 127.0.0.1.
	IP string
	// ConnectionFile is where to write the connection file. Default: a new
	// file in os.TempDir(), removed when the kernel exits.
	ConnectionFile string
	// Stdout and Stderr receive the kernel's output streams (not its cells'
	// output, which goes over IOPub). Default: discarded, but the last
	// StderrTail bytes of stderr are always kept for KernelDiedError.
	Stdout, Stderr io.Writer
	// StderrTail is how many bytes of stderr to keep. Default 64 KiB.
	StderrTail int
}

// KernelProcess is a kernel started by StartKernel: its process, connection
// info, and what became of it.
type KernelProcess struct {
	// Info is the connection info written for the kernel.
	Info ConnectionInfo
	// ConnectionFile is the path of the connection file.
	ConnectionFile string
	// Spec is the kernelspec it was started from.
	Spec KernelSpec

	opts       StartOptions
	removeFile bool

	// mu guards the running process's state, which Connect replaces when
	// the kernel could not bind its ports (see launch).
	mu     sync.Mutex
	cmd    *exec.Cmd
	stderr *tailBuffer
	done   chan struct{}
	err    error // *KernelDiedError once done
}

// KernelDiedError reports that a kernel process exited: its exit code (-1
// when a signal killed it), the signal, and the end of its stderr.
type KernelDiedError struct {
	ExitCode int
	Signal   string
	Stderr   string
}

// Error describes how the kernel died, with the last lines of its stderr.
func (e *KernelDiedError) Error() string {
	how := fmt.Sprintf("exit status %d", e.ExitCode)
	if e.Signal != "" {
		how = "killed by " + e.Signal
	}
	msg := "jupyter: kernel process died (" + how + ")"
	if tail := lastLines(e.Stderr, 5); tail != "" {
		msg += ": " + tail
	}
	return msg
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// StartKernel writes a connection file with free ports and a random key,
// starts the kernel command in its own process group, and watches it. It
// does not wait for the kernel to listen: Connect does. It fails if the
// connection file cannot be written or the command cannot start.
func StartKernel(opts StartOptions) (*KernelProcess, error) {
	if len(opts.Spec.Argv) == 0 {
		return nil, errors.New("jupyter: StartKernel: empty argv")
	}
	p := &KernelProcess{Spec: opts.Spec, ConnectionFile: opts.ConnectionFile, opts: opts}
	if p.ConnectionFile == "" {
		p.ConnectionFile = filepath.Join(os.TempDir(), "kiln-kernel-"+NewID()+".json")
		p.removeFile = true
	}
	if err := p.launch(); err != nil {
		return nil, err
	}
	return p, nil
}

// newConnectionInfo is NewConnectionInfo; tests replace it to hand the
// kernel ports that are already taken.
var newConnectionInfo = NewConnectionInfo

// launch picks ports, writes the connection file and starts the command.
// Ports are free when picked but another program can take one before the
// kernel binds it; Connect then calls launch again with new ports.
func (p *KernelProcess) launch() error {
	opts := p.opts
	info, err := newConnectionInfo(opts.IP)
	if err != nil {
		return err
	}
	info.KernelName = opts.Name
	if err := info.WriteFile(p.ConnectionFile); err != nil {
		return err
	}
	argv := make([]string, len(opts.Spec.Argv))
	for i, a := range opts.Spec.Argv {
		argv[i] = strings.ReplaceAll(a, "{connection_file}", p.ConnectionFile)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = opts.Dir
	cmd.Env = os.Environ()
	for k, v := range opts.Spec.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, opts.Env...)
	cmd.Stdout = opts.Stdout
	tail := opts.StderrTail
	if tail <= 0 {
		tail = 64 << 10
	}
	stderr := &tailBuffer{max: tail}
	cmd.Stderr = stderr
	if opts.Stderr != nil {
		cmd.Stderr = io.MultiWriter(stderr, opts.Stderr)
	}
	// A child that keeps the kernel's stderr open must not keep Wait waiting.
	cmd.WaitDelay = time.Second
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		if p.removeFile {
			os.Remove(p.ConnectionFile)
		}
		return fmt.Errorf("jupyter: start kernel %s: %w", argv[0], err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.Info, p.cmd, p.stderr, p.done, p.err = info, cmd, stderr, done, nil
	p.mu.Unlock()
	go p.wait(cmd, stderr, done)
	return nil
}

func (p *KernelProcess) wait(cmd *exec.Cmd, stderr *tailBuffer, done chan struct{}) {
	err := cmd.Wait()
	died := &KernelDiedError{ExitCode: -1, Stderr: stderr.String()}
	if st := cmd.ProcessState; st != nil {
		died.ExitCode = st.ExitCode()
		died.Signal = exitSignal(st)
	} else if err != nil {
		died.Stderr += "\n" + err.Error()
	}
	p.mu.Lock()
	if p.done == done {
		p.err = died
	}
	p.mu.Unlock()
	if p.removeFile {
		os.Remove(p.ConnectionFile)
	}
	close(done)
}

// state returns the running process's state.
func (p *KernelProcess) state() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd, p.done
}

// Pid returns the kernel's process id.
func (p *KernelProcess) Pid() int {
	cmd, _ := p.state()
	return cmd.Process.Pid
}

// Done is closed when the process has exited.
func (p *KernelProcess) Done() <-chan struct{} {
	_, done := p.state()
	return done
}

// Err returns nil while the process runs, then a *KernelDiedError (also for
// a clean exit, with ExitCode 0).
func (p *KernelProcess) Err() error {
	_, done := p.state()
	select {
	case <-done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.err
	default:
		return nil
	}
}

// Wait waits for the process to exit and returns its *KernelDiedError, or
// ctx's error.
func (p *KernelProcess) Wait(ctx context.Context) error {
	_, done := p.state()
	select {
	case <-done:
		return p.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stderr returns the kept tail of the kernel's stderr.
func (p *KernelProcess) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// Connect dials the kernel (retrying until it listens or ctx ends), waits
// until it is ready, and returns a client that fails with the process's
// *KernelDiedError if it dies. It fails early if the process exits first.
//
// The ports in the connection file were free when StartKernel picked them,
// but another program can bind one before the kernel does. When the kernel
// exits because a port was taken, or the client reaches another program's
// socket, Connect starts the kernel again with new ports (Info, the
// connection file and Pid change), up to three times.
func (p *KernelProcess) Connect(ctx context.Context, opts *ClientOptions) (*KernelClient, error) {
	const attempts = 3
	for i := 1; ; i++ {
		c, err := p.connectOnce(ctx, opts)
		if err == nil || i == attempts || ctx.Err() != nil || !portClash(err) {
			return c, err
		}
		p.Kill()
		if err := p.launch(); err != nil {
			return nil, err
		}
	}
}

// portClash reports whether err says the kernel's ports were taken by
// another program: the kernel could not bind, or the client's handshake met
// a socket of another type.
func portClash(err error) bool {
	msg := err.Error()
	var died *KernelDiedError
	if errors.As(err, &died) {
		msg += " " + died.Stderr
	}
	return strings.Contains(msg, "address already in use") || strings.Contains(msg, "not compatible with")
}

func (p *KernelProcess) connectOnce(ctx context.Context, opts *ClientOptions) (*KernelClient, error) {
	var o ClientOptions
	if opts != nil {
		o = *opts
	}
	o.Process = p
	outer := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	_, done := p.state()
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	p.mu.Lock()
	info := p.Info
	p.mu.Unlock()
	c, err := Dial(ctx, info, &o)
	if err == nil {
		_, err = c.WaitForReady(ctx)
		if err != nil {
			c.Close()
		}
	}
	if err != nil {
		// A kernel that could not bind a port exits, but the client can
		// meet one of its closing sockets (connection reset) before the
		// process is reaped: give it a moment to say why it died.
		if outer.Err() == nil {
			t := time.NewTimer(exitGrace)
			select {
			case <-done:
			case <-t.C:
			}
			t.Stop()
		}
		if died := p.Err(); died != nil {
			return nil, died
		}
		return nil, err
	}
	return c, nil
}

// exitGrace is how long connectOnce waits, after a failed connection, for
// the kernel process to exit before reporting the connection's own error.
const exitGrace = 2 * time.Second

// Interrupt interrupts the kernel the way its spec asks: with
// interrupt_mode "message" it sends interrupt_request through c (which must
// then be non-nil), otherwise SIGINT to the kernel's process group.
func (p *KernelProcess) Interrupt(ctx context.Context, c *KernelClient) error {
	if p.Spec.InterruptMode == "message" {
		if c == nil {
			return errors.New("jupyter: interrupt_mode message needs a client")
		}
		return c.Interrupt(ctx)
	}
	cmd, _ := p.state()
	return interruptProcess(cmd.Process)
}

// Signal sends sig to the kernel process.
func (p *KernelProcess) Signal(sig os.Signal) error {
	cmd, _ := p.state()
	return cmd.Process.Signal(sig)
}

// Kill kills the kernel process and waits for it to be reaped.
func (p *KernelProcess) Kill() error {
	cmd, done := p.state()
	killProcess(cmd.Process)
	<-done
	return nil
}

// Shutdown asks the kernel to exit through c (shutdown_request on control)
// and waits for the process to end; if it has not ended after grace, it is
// killed. c may be nil to just kill the process.
func (p *KernelProcess) Shutdown(ctx context.Context, c *KernelClient, grace time.Duration) error {
	if c != nil {
		rctx, cancel := context.WithTimeout(ctx, grace)
		err := c.Shutdown(rctx, false)
		cancel()
		if err == nil {
			_, done := p.state()
			select {
			case <-done:
				return nil
			case <-time.After(grace):
			case <-ctx.Done():
			}
		}
	}
	return p.Kill()
}

// Restart shuts the kernel down through c with restart set (killing it if
// it has not exited after grace), starts a new process with the same
// options and connects to it. The old client is closed; use the returned
// one. It fails if the new kernel cannot be started or reached.
func (p *KernelProcess) Restart(ctx context.Context, c *KernelClient, grace time.Duration) (*KernelProcess, *KernelClient, error) {
	if c != nil {
		rctx, cancel := context.WithTimeout(ctx, grace)
		err := c.Shutdown(rctx, true)
		cancel()
		if err == nil {
			_, done := p.state()
			select {
			case <-done:
			case <-time.After(grace):
			case <-ctx.Done():
			}
		}
		c.Close()
	}
	p.Kill()
	np, err := StartKernel(p.opts)
	if err != nil {
		return nil, nil, err
	}
	var copts *ClientOptions
	if c != nil {
		o := c.opts
		copts = &o
	}
	nc, err := np.Connect(ctx, copts)
	if err != nil {
		np.Kill()
		return nil, nil, err
	}
	return np, nc, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
