package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/train"
)

// A run directory shows its state, with the pid and last heartbeat of its
// process, before the checkpoint export would use.
func TestInspectRunShowsLiveness(t *testing.T) {
	host, _ := os.Hostname()
	old := time.Now().Add(-time.Hour).UTC()
	record := func(pid int, host, procStart string) string {
		return fmt.Sprintf(`{"version":1,"pid":%d,"host":%q,"proc_start":%q,"locked":false,"started":%q,"heartbeat":%q,"state":"running"}`,
			pid, host, procStart, old.Add(-time.Minute).Format(time.RFC3339Nano), old.Format(time.RFC3339Nano))
	}
	start := `{"version":1,"kind":"start","time":"2025-06-01T12:00:00Z"}` + "\n"
	cases := []struct {
		name     string
		events   string
		process  string
		withCkpt bool
		says     []string // in the output, in order
		state    train.LivenessState
	}{
		{"stale: another machine's process", start, record(4242, "elsewhere.example", ""), true, []string{
			// 1h0m and the seconds the test has taken so far (more than 0 on a busy machine)
			"state       stale: its process 4242 on elsewhere.example has sent no heartbeat for 1h0m",
			"process     pid 4242 on elsewhere.example, since ", "heartbeat   " + old.Local().Format(time.DateTime) + " (1h0m",
			"checkpoint  ", "epoch-10", "chosen as   the run's newest checkpoint by name"}, train.LivenessStale},
		{"killed: its pid now another process's", start, record(os.Getpid(), host, "not-my-start"), true, []string{
			fmt.Sprintf("state       killed: its process %d was killed or crashed: the pid now belongs to another process", os.Getpid()),
			fmt.Sprintf("process     pid %d on %s", os.Getpid(), host), "heartbeat   ", "checkpoint  "}, train.LivenessKilled},
		{"completed, without checkpoints", start + `{"kind":"end","time":"2025-06-01T12:05:00Z","reason":"completed"}` + "\n", "", false, []string{
			"state       completed: the event log ends with reason \"completed\"", "checkpoint  none: "}, train.LivenessCompleted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := t.TempDir()
			if c.withCkpt {
				run = runLayout(t)
			}
			os.WriteFile(filepath.Join(run, train.EventsFile), []byte(c.events), 0o644)
			if c.process != "" {
				os.WriteFile(filepath.Join(run, train.ProcessFile), []byte(c.process), 0o644)
			}
			var stdout, stderr bytes.Buffer
			if err := inspectCommand([]string{run}, &stdout, &stderr); err != nil {
				t.Fatal(err)
			}
			text := stdout.String()
			rest := text
			for _, s := range append([]string{"run         " + run}, c.says...) {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Fatalf("no %q (in order) in:\n%s", s, text)
				}
				rest = rest[i+len(s):]
			}
			stdout.Reset()
			if err := inspectCommand([]string{"--json", run}, &stdout, &stderr); err != nil {
				t.Fatal(err)
			}
			var rep struct {
				Epoch int `json:"epoch"`
				Run   struct {
					Liveness        train.Liveness `json:"liveness"`
					CheckpointError string         `json:"checkpoint_error"`
				} `json:"run"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Run.Liveness.State != c.state || c.withCkpt != (rep.Epoch == 10) || c.withCkpt == (rep.Run.CheckpointError != "") {
				t.Errorf("JSON %s", stdout.Bytes())
			}
		})
	}
}

// A data-parallel run's ranks are shown (and in the JSON); a run on one
// process shows none.
func TestInspectRunShowsWorldSize(t *testing.T) {
	for _, c := range []struct {
		name, start string
		ranks       int
	}{
		{"two ranks", `{"version":1,"kind":"start","time":"2025-06-01T12:00:00Z","world_size":2}`, 2},
		{"one process", `{"version":1,"kind":"start","time":"2025-06-01T12:00:00Z"}`, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := t.TempDir()
			log := c.start + "\n" + `{"kind":"end","time":"2025-06-01T12:05:00Z","reason":"completed"}` + "\n"
			os.WriteFile(filepath.Join(run, train.EventsFile), []byte(log), 0o644)
			var stdout, stderr bytes.Buffer
			if err := inspectCommand([]string{run}, &stdout, &stderr); err != nil {
				t.Fatal(err)
			}
			line := "ranks       2, data-parallel (rank 0 wrote this directory)\n"
			if got := strings.Contains(stdout.String(), line); got != (c.ranks == 2) || strings.Contains(stdout.String(), "ranks") != got {
				t.Errorf("output:\n%s", stdout.String())
			}
			stdout.Reset()
			if err := inspectCommand([]string{"--json", run}, &stdout, &stderr); err != nil {
				t.Fatal(err)
			}
			var rep struct {
				Run map[string]any `json:"run"`
			}
			json.Unmarshal(stdout.Bytes(), &rep)
			if got, ok := rep.Run["world_size"]; (c.ranks == 0 && ok) || (c.ranks > 0 && got != float64(c.ranks)) {
				t.Errorf("JSON world_size %v (present %v), want %d", got, ok, c.ranks)
			}
		})
	}
}
