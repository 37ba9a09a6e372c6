package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kiln-ml/kiln/frontend"
	"github.com/kiln-ml/kiln/workbench"
)

// settings are the command-line settings of the desktop workbench.
type settings struct {
	root            string
	runDirs         []string
	existing        string
	kiln            string
	selfTest        bool
	selfTestTimeout time.Duration
	selfTestHold    time.Duration
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	if v == "" {
		return errors.New("empty directory")
	}
	*l = append(*l, v)
	return nil
}

// parseSettings reads the command line (without the program name). Errors,
// and the usage text for -h, are written to out.
func parseSettings(args []string, out io.Writer) (settings, error) {
	fs := flag.NewFlagSet("kiln-workbench", flag.ContinueOnError)
	fs.SetOutput(out)
	var o settings
	var runs stringList
	fs.StringVar(&o.root, "root", ".", "notebooks are opened and saved under this directory")
	fs.Var(&runs, "runs", "a directory of run directories to follow (repeatable; default runs); the run registry's runs are followed too")
	fs.StringVar(&o.existing, "existing", "", "attach to the kernel with this connection file instead of starting one")
	fs.StringVar(&o.kiln, "kiln", "", "the kiln binary that runs kernels (default: beside this program, then on PATH)")
	fs.BoolVar(&o.selfTest, "self-test", false, "exercise the bound methods and events from the page, then exit 0 (pass) or 1 (fail)")
	fs.DurationVar(&o.selfTestTimeout, "self-test-timeout", 2*time.Minute, "how long --self-test may take")
	fs.DurationVar(&o.selfTestHold, "self-test-hold", 0, "keep the window open this long after the self-test's verdict (for a screenshot)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (all settings are flags; see -h)", fs.Arg(0))
	}
	if o.selfTestTimeout <= 0 {
		return o, fmt.Errorf("--self-test-timeout must be positive, got %v", o.selfTestTimeout)
	}
	if o.selfTestHold < 0 {
		return o, fmt.Errorf("--self-test-hold must not be negative, got %v", o.selfTestHold)
	}
	o.runDirs = runs
	if len(o.runDirs) == 0 {
		o.runDirs = []string{"runs"}
	}
	return o, nil
}

// engineConfig is the workbench engine's configuration for these
// settings, with kiln the binary that runs kernels. The engine follows the
// runs of runDirs and those of the per-user run registry (see
// workbench.Config.RunDirs), as browser mode does.
func (o settings) engineConfig(kiln string) workbench.Config {
	return workbench.Config{
		Root:     o.root,
		RunDirs:  o.runDirs,
		Kiln:     kiln,
		Existing: o.existing,
		Assets:   frontend.Assets(),
	}
}

// findKiln locates the kiln binary that runs kernels: the --kiln flag when
// given (it must exist), else a "kiln" beside this executable, else one on
// PATH. exe is this program's path (os.Executable).
func findKiln(flagValue, exe string) (string, error) {
	if flagValue != "" {
		if err := checkExecutable(flagValue); err != nil {
			return "", fmt.Errorf("--kiln %s: %w", flagValue, err)
		}
		return filepath.Abs(flagValue)
	}
	if exe != "" {
		beside := filepath.Join(filepath.Dir(exe), "kiln")
		if checkExecutable(beside) == nil {
			return beside, nil
		}
	}
	if p, err := exec.LookPath("kiln"); err == nil {
		return filepath.Abs(p)
	}
	return "", errors.New("no kiln binary beside this program or on PATH to run kernels; build it with `make build` (bin/kiln) or pass --kiln PATH")
}

// checkExecutable reports why path cannot be run as a program, or nil.
func checkExecutable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return errors.New("is a directory")
	}
	if st.Mode().Perm()&0o111 == 0 {
		return errors.New("is not executable")
	}
	return nil
}
