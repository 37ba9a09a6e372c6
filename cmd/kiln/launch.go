package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/kiln-ml/kiln/dist"
)

// runLaunch is `kiln launch`.
func runLaunch(args []string) error {
	return launchCommand(context.Background(), args, os.Stdin, os.Stdout, os.Stderr)
}

// launchCommand runs PROGRAM ARGS as -n ranks under Open MPI's mpirun,
// with the flags dist.LaunchArgs adds, and returns when every rank has
// ended: an error naming mpirun's exit status when a rank failed.
func launchCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("launch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("n", 0, "number of processes (ranks)")
	hosts := fs.String("hosts", "", "comma-separated machines to run on, each NAME or NAME:SLOTS (default: this machine)")
	mpirun := fs.String("mpirun", "", `the mpirun to use (default "mpirun" on PATH)`)
	dry := fs.Bool("dry-run", false, "print the mpirun command instead of running it")
	var env listFlag
	fs.Var(&env, "x", "an environment variable every rank gets, as mpirun -x (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: kiln launch -n N [--hosts H1,H2:SLOTS] [-x VAR]... [--dry-run] PROGRAM [ARGS...]")
		fmt.Fprintln(stderr, "\nRuns PROGRAM as N ranks with Open MPI's mpirun (Debian: apt-get install openmpi-bin);")
		fmt.Fprintln(stderr, "a Kiln program's dist.Init finds its rank. As root it adds --allow-run-as-root; with more")
		fmt.Fprintln(stderr, "ranks than cores on one machine, --oversubscribe --bind-to none.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("launch: no program to run")
	}
	cfg := dist.LaunchConfig{Procs: *n, MPIRun: *mpirun, Env: env}
	if *hosts != "" {
		cfg.Hosts = strings.Split(*hosts, ",")
	}
	if *dry {
		a, err := dist.LaunchArgs(cfg, fs.Arg(0), fs.Args()[1:]...)
		if err != nil {
			return fmt.Errorf("launch: %w", err)
		}
		name := cfg.MPIRun
		if name == "" {
			name = "mpirun"
		}
		fmt.Fprintln(stdout, strings.Join(append([]string{name}, a...), " "))
		return nil
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd, err := dist.LaunchCommand(ctx, cfg, fs.Arg(0), fs.Args()[1:]...)
	if err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	// mpirun forwards SIGINT and SIGTERM to the ranks; give it time to.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return fmt.Errorf("launch: %d ranks of %s: mpirun exited with status %d (see its messages above)", *n, fs.Arg(0), exit.ExitCode())
		}
		return fmt.Errorf("launch: %w", err)
	}
	return nil
}
