package train

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// RegistryEnv names the environment variable that moves the run registry
// (a directory), or turns it off with "off".
const RegistryEnv = "KILN_RUN_REGISTRY"

// RegisteredRun is one entry of the run registry: a run directory some
// Kiln process trained in, wherever it lies.
type RegisteredRun struct {
	Dir     string    `json:"dir"`     // absolute run directory
	Started time.Time `json:"started"` // when Fit or Resume last started there
	PID     int       `json:"pid"`     // the process that started it
	Host    string    `json:"host"`    // the machine it ran on
	Program string    `json:"program"` // the program's name (os.Args[0]'s base)
}

// RegistryDir returns the per-user run registry: $KILN_RUN_REGISTRY when
// set, else $XDG_STATE_HOME/kiln/runs, else ~/.local/state/kiln/runs. It
// returns "" when KILN_RUN_REGISTRY is "off".
//
// Every Fit and Resume with a RunDir (on rank 0) records its directory
// there, so that a workbench finds every run of the user's, started from a
// notebook, `kiln demo` or any program, wherever its files are.
func RegistryDir() (string, error) {
	if d := os.Getenv(RegistryEnv); d != "" {
		if d == "off" {
			return "", nil
		}
		return filepath.Abs(d)
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "kiln", "runs"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("train: run registry: %w (set %s)", err, RegistryEnv)
	}
	return filepath.Join(home, ".local", "state", "kiln", "runs"), nil
}

// registryName is the file of dir's entry: a hash of the absolute path, so
// that a run directory trained in again keeps one entry.
func registryName(dir string) string {
	h := sha256.Sum256([]byte(dir))
	return hex.EncodeToString(h[:8]) + ".json"
}

// RegisterRun records run directory dir in the run registry (replacing
// its entry if it has one). It does nothing when the registry is off.
func RegisterRun(dir string) error {
	reg, err := RegistryDir()
	if err != nil || reg == "" {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("train: run registry: %w", err)
	}
	host, _ := os.Hostname()
	e := RegisteredRun{Dir: abs, Started: time.Now().UTC(), PID: os.Getpid(), Host: host, Program: filepath.Base(os.Args[0])}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(reg, 0o755); err != nil {
		return fmt.Errorf("train: run registry: %w", err)
	}
	f, err := os.CreateTemp(reg, ".entry-*")
	if err != nil {
		return fmt.Errorf("train: run registry: %w", err)
	}
	_, werr := f.Write(append(b, '\n'))
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("train: run registry: %w", err)
	}
	if err := os.Rename(f.Name(), filepath.Join(reg, registryName(abs))); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("train: run registry: %w", err)
	}
	return nil
}

// UnregisterRun removes dir's entry from the run registry, if any.
func UnregisterRun(dir string) error {
	reg, err := RegistryDir()
	if err != nil || reg == "" {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(reg, registryName(abs))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("train: run registry: %w", err)
	}
	return nil
}

// RegisteredRuns returns the registry's entries whose run directories
// still hold a run (an events.jsonl or config.json), newest start first.
// Entries of directories that are gone are removed; unreadable entries are
// skipped. An absent registry is empty, not an error.
func RegisteredRuns() ([]RegisteredRun, error) {
	reg, err := RegistryDir()
	if err != nil || reg == "" {
		return nil, err
	}
	ents, err := os.ReadDir(reg)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("train: run registry: %w", err)
	}
	var out []RegisteredRun
	for _, de := range ents {
		name := de.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(reg, name))
		if err != nil {
			continue
		}
		var e RegisteredRun
		if json.Unmarshal(b, &e) != nil || !filepath.IsAbs(e.Dir) {
			continue
		}
		if !holdsRun(e.Dir) {
			if _, err := os.Stat(e.Dir); errors.Is(err, os.ErrNotExist) {
				os.Remove(filepath.Join(reg, name)) // the run was deleted
			}
			continue
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b RegisteredRun) int { return b.Started.Compare(a.Started) })
	return out, nil
}

// holdsRun reports whether dir has a run's files.
func holdsRun(dir string) bool {
	for _, f := range []string{EventsFile, ConfigFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}
