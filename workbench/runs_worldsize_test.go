package workbench

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// runs.list gives a data-parallel run's world size (from its start record)
// and none for a run on one process; a new run replacing a log takes its
// own.
func TestRunsListWorldSize(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	write := func(name, start string) string {
		dir := filepath.Join(runs, name)
		os.MkdirAll(dir, 0o755)
		log := start + "\n" + `{"kind":"end","time":"2026-01-01T00:01:00Z","epoch":1,"step":8,"reason":"completed"}` + "\n"
		if err := os.WriteFile(filepath.Join(dir, eventsFile), []byte(log), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dp := write("dp", `{"version":1,"kind":"start","time":"2026-01-01T00:00:00Z","epoch":0,"step":0,"batches":8,"world_size":2}`)
	one := write("one", `{"version":1,"kind":"start","time":"2026-01-01T00:00:00Z","epoch":0,"step":0,"batches":8}`)
	methods, _ := follow(t, runs)
	if r := runOf(t, methods, dp); r == nil || r["world_size"] != float64(2) {
		t.Errorf("data-parallel run listed as %v, want world_size 2", r)
	}
	if r := runOf(t, methods, one); r == nil || r["world_size"] != nil {
		t.Errorf("run on one process listed as %v, want no world_size", r)
	}
	// The data-parallel run's directory gets a shorter run on one process.
	time.Sleep(10 * time.Millisecond)
	os.WriteFile(filepath.Join(dp, eventsFile), []byte(`{"version":1,"kind":"start","time":"2026-01-02T00:00:00Z","epoch":0,"step":0}`+"\n"), 0o644)
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := runOf(t, methods, dp)
		if r != nil && r["status"] != "completed" { // the new run has no end record
			if r["world_size"] != nil {
				t.Errorf("the new run on one process listed as %v, want no world_size", r)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replaced log was not read again: %v", r)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
