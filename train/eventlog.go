package train

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// The files Fit writes into Config.RunDir.
const (
	ConfigFile = "config.json"  // the run's Config, indented JSON
	EventsFile = "events.jsonl" // one Event per line, the first a start event with "version"
)

// eventLog writes events.jsonl.
type eventLog struct {
	f     *os.File
	w     *bufio.Writer
	fresh bool // the file was empty: the next record must be a start event
}

// writeConfig creates dir and writes config.json.
func writeConfig(dir string, cfg json.RawMessage) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("train: run directory: %w", err)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, cfg, "", "  "); err != nil {
		return fmt.Errorf("train: config: %w", err)
	}
	buf.WriteByte('\n')
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("train: run directory: %w", err)
	}
	return nil
}

// openEventLog creates dir, writes config.json and opens events.jsonl,
// replacing files of an earlier run.
func openEventLog(dir string, cfg json.RawMessage) (*eventLog, error) {
	if err := writeConfig(dir, cfg); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(dir, EventsFile))
	if err != nil {
		return nil, fmt.Errorf("train: run directory: %w", err)
	}
	return &eventLog{f: f, w: bufio.NewWriter(f), fresh: true}, nil
}

// appendEventLog rewrites config.json and opens events.jsonl to append to
// it, for a resumed run. A last line without its newline (a record cut
// short by a crash) is cut off first, so that the log holds whole records
// only.
func appendEventLog(dir string, cfg json.RawMessage) (*eventLog, error) {
	if err := writeConfig(dir, cfg); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, EventsFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("train: run directory: %w", err)
	}
	keep, err := wholeLines(f)
	if err == nil {
		err = f.Truncate(keep)
	}
	if err == nil {
		_, err = f.Seek(keep, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("train: event log: %w", err)
	}
	return &eventLog{f: f, w: bufio.NewWriter(f), fresh: keep == 0}, nil
}

// wholeLines returns the length of f up to and including its last newline.
func wholeLines(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	end := fi.Size()
	buf := make([]byte, 4096)
	for end > 0 {
		n := min(int64(len(buf)), end)
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return end - n + int64(i) + 1, nil
		}
		end -= n
	}
	return 0, nil
}

// write appends e as one line and flushes it, so that readers following
// the file (the workbench) see whole records.
func (l *eventLog) write(e Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("train: event log: %w", err)
	}
	b = append(b, '\n')
	if _, err := l.w.Write(b); err != nil {
		return fmt.Errorf("train: event log: %w", err)
	}
	if err := l.w.Flush(); err != nil {
		return fmt.Errorf("train: event log: %w", err)
	}
	return nil
}

func (l *eventLog) close() error {
	if err := l.w.Flush(); err != nil {
		l.f.Close()
		return fmt.Errorf("train: event log: %w", err)
	}
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("train: event log: %w", err)
	}
	return nil
}

// ReadEvents reads an events.jsonl file written by Fit. It returns an
// error for a line that is not an Event or a log whose first record has a
// version newer than EventLogVersion.
func ReadEvents(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var evs []Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return evs, fmt.Errorf("train: %s line %d: %w", path, n, err)
		}
		if len(evs) == 0 && e.Version > EventLogVersion {
			return nil, fmt.Errorf("train: %s: event log version %d is newer than %d", path, e.Version, EventLogVersion)
		}
		evs = append(evs, e)
	}
	return evs, sc.Err()
}
