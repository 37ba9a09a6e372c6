//go:build linux

package robusttest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/kernel/jupyter"
)

// processesWith returns the pids of the processes whose command line
// holds s.
func processesWith(s string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// A cell starts the real `kiln demo -np 2` (the kernel's own binary, under
// mpirun) with train.FollowCommand and follows it live. Interrupting the
// cell ends it at once, saying so under the dashboard's final render; the
// run, asked to stop through its STOP file, stops on both ranks at one
// step, writes its end record, and mpirun and both ranks exit. The kernel
// keeps running.
func TestInterruptFollowedDataParallelRun(t *testing.T) {
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Skip("mpirun not on PATH: install Debian's openmpi-bin")
	}
	k := startKernel(t)
	dir := filepath.Join(t.TempDir(), "dp-run")
	code := fmt.Sprintf(`cmd, err := train.KilnCommand("demo", "-np", "2", "-subset", "20000", "-epochs", "50", "-batch", "16", "-device", "cpu", "-run-dir", %q)
if err != nil {
	panic(err)
}
res, err := train.FollowCommand(ctx, cmd, %[1]q, nil)
fmt.Println("not reached", res, err)`, dir)
	done := make(chan *result, 1)
	dashboards := make(chan struct{}, 1)
	go func() {
		done <- k.execReq(jupyter.NewExecuteRequest(code), 2*time.Minute, &jupyter.ExecuteHandlers{
			Output: func(m *jupyter.Message) {
				if m.Type() == "update_display_data" {
					select {
					case dashboards <- struct{}{}:
					default:
					}
				}
			}})
	}()
	// Interrupt once the dashboard is updating: the ranks train.
	select {
	case <-dashboards:
	case r := <-done:
		t.Fatalf("the cell ended before it was interrupted: %s", r)
	case <-time.After(90 * time.Second):
		t.Fatal("no dashboard update within 90 s of starting the run")
	}
	if n := len(processesWith(dir)); n < 3 {
		t.Fatalf("%d processes name the run directory, want kiln demo, mpirun and two ranks", n)
	}
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := k.c.Interrupt(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	took := time.Since(t0)
	t.Logf("the cell ended %v after the interrupt; it said: %s", took.Round(time.Millisecond), strings.TrimSpace(r.stderr))
	if r.err != nil || r.reply.Status != jupyter.StatusError || r.reply.Ename != "Interrupted" {
		t.Errorf("reply: %s; want an Interrupted error", r)
	}
	if took > 10*time.Second {
		t.Errorf("the cell stopped %v after the interrupt", took)
	}
	final := false // the dashboard's last update is its final render
	for _, m := range r.msgs {
		var d struct {
			Metadata struct {
				Dashboard struct {
					Final bool `json:"final"`
				} `json:"kiln_dashboard"`
			} `json:"metadata"`
		}
		if t := m.Type(); (t == "display_data" || t == "update_display_data") && m.Decode(&d) == nil {
			final = d.Metadata.Dashboard.Final
		}
	}
	if !final {
		t.Error("the dashboard's last update before the reply is not its final render")
	}
	if !strings.Contains(r.stderr, "of the followed run: asked its processes to stop") || strings.Contains(r.stdout, "not reached") {
		t.Errorf("stdout %q, stderr %q", r.stdout, r.stderr)
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		left := processesWith(dir)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v still name the run directory 15 s after the cell ended", left)
		}
	}
	t.Logf("the run's processes were gone %v after the interrupt", time.Since(t0).Round(time.Millisecond))
	log, _ := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, `"kind":"end"`) || !strings.Contains(last, `"reason":"cancelled"`) {
		t.Errorf("the run's last record %s: want its own end record, cancelled (stopped through its STOP file)", last)
	}
	k.expect("1 + 1", "2")
}
