package jupyter_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/kiln-ml/kiln/kernel/jupyter"
)

// fakeKernelEnv makes the test binary run as a kernel process serving a
// fakeHandler on the connection file given as its last argument.
const fakeKernelEnv = "KILN_JUPYTER_FAKE_KERNEL"

func TestMain(m *testing.M) {
	if os.Getenv(fakeKernelEnv) == "1" {
		err := jupyter.Run(context.Background(), os.Args[len(os.Args)-1], &fakeHandler{}, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeKernelSpec starts this test binary as a fake kernel.
func fakeKernelSpec(t *testing.T, interruptMode string) jupyter.KernelSpec {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return jupyter.KernelSpec{
		Argv: []string{exe, "{connection_file}"}, DisplayName: "Fake", Language: "fake",
		InterruptMode: interruptMode, Env: map[string]string{fakeKernelEnv: "1"},
	}
}

func startProcess(t *testing.T, spec jupyter.KernelSpec) (*jupyter.KernelProcess, *jupyter.KernelClient) {
	t.Helper()
	p, err := jupyter.StartKernel(jupyter.StartOptions{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill() })
	c, err := p.Connect(timeout(t, 20*time.Second), nil)
	if err != nil {
		t.Fatalf("connect: %v (stderr: %s)", err, p.Stderr())
	}
	t.Cleanup(func() { c.Close() })
	return p, c
}

func TestKernelProcessLifecycle(t *testing.T) {
	p, c := startProcess(t, fakeKernelSpec(t, "signal"))
	if _, err := os.Stat(p.ConnectionFile); err != nil {
		t.Errorf("connection file: %v", err)
	}
	rep, out := run(t, c, jupyter.NewExecuteRequest("echo from a process"), nil)
	if rep.Status != "ok" || streamText(out, "stdout") != "from a process\n" {
		t.Errorf("execute: %+v %v", rep, types(out))
	}

	// interrupt_mode "signal": SIGINT to the process interrupts the cell and
	// does not kill the kernel.
	done := make(chan jupyter.ExecuteReply, 1)
	started := make(chan struct{}, 1)
	go func() {
		rep, _ := c.Execute(timeout(t, 20*time.Second), jupyter.NewExecuteRequest("sleep 30s"),
			&jupyter.ExecuteHandlers{Output: func(m *jupyter.Message) {
				if m.Type() == "execute_input" {
					started <- struct{}{}
				}
			}})
		done <- rep
	}()
	<-started
	time.Sleep(50 * time.Millisecond)
	if err := p.Interrupt(timeout(t, 5*time.Second), c); err != nil {
		t.Fatal(err)
	}
	select {
	case rep := <-done:
		if rep.Status != "error" || rep.ErrorContent == nil || rep.Ename != "KeyboardInterrupt" {
			t.Errorf("after SIGINT: %+v", rep)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("SIGINT did not interrupt the cell")
	}
	if p.Err() != nil {
		t.Fatalf("kernel died on SIGINT: %v", p.Err())
	}
	rep, _ = run(t, c, jupyter.NewExecuteRequest("echo alive"), nil)
	if rep.Status != "ok" {
		t.Errorf("after interrupt: %+v", rep)
	}

	if err := p.Shutdown(timeout(t, 10*time.Second), c, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	var died *jupyter.KernelDiedError
	if !errors.As(p.Err(), &died) || died.ExitCode != 0 {
		t.Errorf("after shutdown: %v", p.Err())
	}
	if _, err := os.Stat(p.ConnectionFile); !os.IsNotExist(err) {
		t.Errorf("connection file not removed: %v", err)
	}
}

func TestKernelProcessRestart(t *testing.T) {
	p, c := startProcess(t, fakeKernelSpec(t, "signal"))
	run(t, c, jupyter.NewExecuteRequest("echo one"), nil)
	p2, c2, err := p.Restart(timeout(t, 20*time.Second), c, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Kill()
	defer c2.Close()
	if p.Err() == nil {
		t.Error("old kernel still running")
	}
	rep, _ := run(t, c2, jupyter.NewExecuteRequest("echo two"), nil)
	if rep.Status != "ok" || rep.ExecutionCount != 1 {
		t.Errorf("restarted kernel: %+v (a new kernel counts from 1)", rep)
	}
}

func TestKernelProcessMessageInterrupt(t *testing.T) {
	p, c := startProcess(t, fakeKernelSpec(t, "message"))
	done := make(chan jupyter.ExecuteReply, 1)
	go func() {
		rep, _ := c.Execute(timeout(t, 20*time.Second), jupyter.NewExecuteRequest("sleep 30s"), nil)
		done <- rep
	}()
	time.Sleep(300 * time.Millisecond)
	if err := p.Interrupt(timeout(t, 5*time.Second), c); err != nil {
		t.Fatal(err)
	}
	select {
	case rep := <-done:
		if rep.Status != "error" {
			t.Errorf("after interrupt_request: %+v", rep)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("interrupt_request did not interrupt the cell")
	}
}

func TestKernelProcessDeath(t *testing.T) {
	p, c := startProcess(t, fakeKernelSpec(t, "signal"))
	_, err := c.Execute(timeout(t, 20*time.Second), jupyter.NewExecuteRequest("exit 3"), nil)
	var died *jupyter.KernelDiedError
	if !errors.As(err, &died) {
		t.Fatalf("Execute on a dying kernel = %v, want *KernelDiedError", err)
	}
	if died.ExitCode != 3 || !strings.Contains(died.Stderr, "dying") {
		t.Errorf("died = %+v", died)
	}
	select {
	case <-c.Done():
	case <-time.After(time.Second):
		t.Error("client Done not closed")
	}
	if !errors.As(c.Err(), &died) {
		t.Errorf("client Err = %v", c.Err())
	}
	if _, err := c.KernelInfo(context.Background()); !errors.As(err, &died) {
		t.Errorf("KernelInfo after death = %v", err)
	}
	if !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "dying") {
		t.Errorf("error text %q", err)
	}
	_ = p
}

func TestKernelProcessStartFailures(t *testing.T) {
	if _, err := jupyter.StartKernel(jupyter.StartOptions{Spec: jupyter.KernelSpec{Argv: []string{"/nonexistent/kernel"}}}); err == nil {
		t.Error("starting a missing binary succeeded")
	}
	if _, err := jupyter.StartKernel(jupyter.StartOptions{}); err == nil {
		t.Error("empty argv accepted")
	}
	p, err := jupyter.StartKernel(jupyter.StartOptions{Spec: jupyter.KernelSpec{
		Argv: []string{"/bin/sh", "-c", "echo 'cannot load {connection_file}' >&2; exit 2"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Connect(timeout(t, 10*time.Second), nil)
	var died *jupyter.KernelDiedError
	if !errors.As(err, &died) || died.ExitCode != 2 || !strings.Contains(died.Stderr, "cannot load "+p.ConnectionFile) {
		t.Errorf("Connect to a kernel that exits = %v", err)
	}
}

// TestKernelProcessPortTaken hands the kernel a port that another program
// took between StartKernel picking it and the kernel binding it: a plain
// listener (the kernel cannot bind and exits) and another program's ZeroMQ
// PUB socket on the shell port (the client's handshake meets the wrong
// socket type, as happened when parallel tests started kernels at once).
// Connect starts the kernel again with new ports and the session works.
func TestKernelProcessPortTaken(t *testing.T) {
	for _, tc := range []struct {
		name string
		take func(t *testing.T, port int)
	}{
		{"listener on the control port", func(t *testing.T, port int) {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
		}},
		{"PUB socket on the shell port", func(t *testing.T, port int) {
			pub := zmq4.NewPub(context.Background())
			if err := pub.Listen(fmt.Sprintf("tcp://127.0.0.1:%d", port)); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { pub.Close() })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			var taken jupyter.ConnectionInfo
			restore := jupyter.SetNewConnectionInfo(func(ip string) (jupyter.ConnectionInfo, error) {
				info, err := jupyter.NewConnectionInfo(ip)
				if calls++; calls == 1 && err == nil {
					taken = info
					port := info.ControlPort
					if strings.HasPrefix(tc.name, "PUB") {
						port = info.ShellPort
					}
					tc.take(t, port)
				}
				return info, err
			})
			defer restore()
			p, c := startProcess(t, fakeKernelSpec(t, "signal"))
			if calls != 2 {
				t.Errorf("ports picked %d times, want 2 (one retry)", calls)
			}
			if p.Info.ShellPort == taken.ShellPort && p.Info.ControlPort == taken.ControlPort {
				t.Errorf("the kernel kept the taken ports %+v", taken)
			}
			if rep, out := run(t, c, jupyter.NewExecuteRequest("echo after a retry"), nil); rep.Status != "ok" || streamText(out, "stdout") != "after a retry\n" {
				t.Errorf("execute: %+v %v", rep, types(out))
			}
		})
	}
}
