package dist

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// LaunchConfig says how LaunchCommand starts a program as several ranks
// with Open MPI's mpirun. The zero value is not valid: Procs is required.
type LaunchConfig struct {
	// Procs is the number of ranks (mpirun -np).
	Procs int `json:"procs"`
	// Hosts are the machines to run on, each "name" or "name:slots"
	// (mpirun --host); none means this machine.
	Hosts []string `json:"hosts,omitempty"`
	// MPIRun is the mpirun program; default "mpirun" found on PATH.
	MPIRun string `json:"mpirun,omitempty"`
	// Extra are more mpirun arguments, placed before the program (for
	// instance "--mca", "btl", "self,vader").
	Extra []string `json:"extra,omitempty"`
	// Env names variables of this process that every rank gets (mpirun -x);
	// mpirun already passes the environment to ranks on this machine.
	Env []string `json:"env,omitempty"`
}

// ErrNoLauncher is returned by LaunchCommand when mpirun is not installed.
var ErrNoLauncher = errors.New("dist: mpirun not found (install Debian's openmpi-bin)")

// LaunchArgs returns mpirun's arguments for running program with args as
// cfg.Procs ranks. It adds what users of mpirun otherwise learn the hard
// way: --allow-run-as-root when this process runs as root, and on this
// machine alone, --oversubscribe with --bind-to none when there are more
// ranks than cores (binding each rank to a core would refuse to start, or
// pile ranks on one core). It fails when Procs is below 1 or program is
// empty.
func LaunchArgs(cfg LaunchConfig, program string, args ...string) ([]string, error) {
	if cfg.Procs < 1 {
		return nil, fmt.Errorf("dist: launch: %d processes; give at least 1", cfg.Procs)
	}
	if program == "" {
		return nil, errors.New("dist: launch: no program to run")
	}
	out := []string{"-np", strconv.Itoa(cfg.Procs)}
	if os.Geteuid() == 0 {
		out = append(out, "--allow-run-as-root")
	}
	if len(cfg.Hosts) > 0 {
		for _, h := range cfg.Hosts {
			if h == "" || strings.ContainsAny(h, ", \t") {
				return nil, fmt.Errorf("dist: launch: host %q is not a host name (name or name:slots)", h)
			}
		}
		out = append(out, "--host", strings.Join(cfg.Hosts, ","))
	} else if cfg.Procs > runtime.NumCPU() {
		out = append(out, "--oversubscribe", "--bind-to", "none")
	}
	for _, e := range cfg.Env {
		out = append(out, "-x", e)
	}
	out = append(out, cfg.Extra...)
	out = append(out, program)
	return append(out, args...), nil
}

// LaunchCommand returns the command that runs program with args as
// cfg.Procs ranks under mpirun (see LaunchArgs), ready to have its output
// set and be started; ctx ends it. It fails with ErrNoLauncher when mpirun
// is not installed, and with LaunchArgs' errors.
func LaunchCommand(ctx context.Context, cfg LaunchConfig, program string, args ...string) (*exec.Cmd, error) {
	mpirun := cfg.MPIRun
	if mpirun == "" {
		mpirun = "mpirun"
	}
	path, err := exec.LookPath(mpirun)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoLauncher, err)
	}
	a, err := LaunchArgs(cfg, program, args...)
	if err != nil {
		return nil, err
	}
	return exec.CommandContext(ctx, path, a...), nil
}
