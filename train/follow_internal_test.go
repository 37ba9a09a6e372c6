package train

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// No log within the wait: ErrNoEventLog, naming the directory.
func TestFollowNoLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "never")
	f := &follower{dir: dir, wait: 200 * time.Millisecond, poll: 20 * time.Millisecond}
	start := time.Now()
	res, err := f.run(context.Background())
	if !errors.Is(err, ErrNoEventLog) || res.Reason != StopFailed {
		t.Fatalf("result %+v, error %v: want ErrNoEventLog", res, err)
	}
	if d := time.Since(start); d < 200*time.Millisecond || d > 5*time.Second {
		t.Errorf("gave up after %v, want about 200ms", d)
	}
}

// An earlier run's log (its start record's time given as stale) is not
// read; the new run's, replacing it in place, is.
func TestFollowSkipsStaleLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, EventsFile)
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.WriteFile(path, []byte(`{"version":1,"kind":"start","time":"2020-01-01T00:00:00Z","epoch":0,"step":0}
{"kind":"end","time":"2020-01-01T00:01:00Z","epoch":1,"step":99,"reason":"completed"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(150 * time.Millisecond)
		os.WriteFile(path, []byte(`{"version":1,"kind":"start","time":"2021-01-01T00:00:00Z","epoch":0,"step":0}
{"kind":"end","time":"2021-01-01T00:01:00Z","epoch":1,"step":7,"reason":"completed"}
`), 0o644)
	}()
	f := &follower{dir: dir, wait: 5 * time.Second, poll: 20 * time.Millisecond, stale: old}
	res, err := f.run(context.Background())
	if err != nil || res.Steps != 7 {
		t.Fatalf("result %+v, error %v: want the new run's 7 steps", res, err)
	}
}
