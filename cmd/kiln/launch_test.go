package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/dist"
)

// launchChildEnv marks the test binary run as a rank by TestLaunchRuns.
const launchChildEnv = "KILN_LAUNCH_CHILD"

// TestLaunchChild is each rank of TestLaunchRuns: it says what dist finds,
// and rank 1 fails when asked to.
func TestLaunchChild(t *testing.T) {
	mode := os.Getenv(launchChildEnv)
	if mode == "" {
		t.Skip("a rank of TestLaunchRuns")
	}
	l := dist.Launcher()
	fmt.Printf("child: %s\n", l)
	if mode == "fail" && l.Rank == 1 {
		os.Exit(3)
	}
}

// kiln launch runs the program as N ranks that find their rank through
// dist; a failing rank makes it fail, naming mpirun's status.
func TestLaunchRuns(t *testing.T) {
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Skip("mpirun not on PATH: install Debian's openmpi-bin")
	}
	run := func(mode string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var out bytes.Buffer
		err := launchCommand(ctx, []string{"-n", "2", "-x", launchChildEnv + "=" + mode, "--",
			os.Args[0], "-test.run=^TestLaunchChild$", "-test.v"}, nil, &out, &out)
		return out.String(), err
	}
	out, err := run("ok")
	if err != nil {
		t.Fatalf("kiln launch -n 2: %v\n%s", err, out)
	}
	for r := range 2 {
		if want := fmt.Sprintf("child: Open MPI (mpirun), rank %d of 2", r); !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err = run("fail")
	if err == nil || !strings.Contains(err.Error(), "mpirun exited with status") {
		t.Errorf("a rank exiting with status 3: err = %v\n%s", err, out)
	}
}

func TestLaunchBadUse(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "2"}, "no program"},
		{[]string{"-n", "0", "--dry-run", "./train"}, "0 processes"},
		{[]string{"-n", "2", "--mpirun", "/nonexistent/mpirun", "./train"}, "openmpi-bin"},
	} {
		var out bytes.Buffer
		err := launchCommand(context.Background(), c.args, nil, &out, &out)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("kiln launch %q: err = %v, want one saying %q", c.args, err, c.want)
		}
	}
	var out bytes.Buffer
	if err := launchCommand(context.Background(), []string{"-n", "2", "--hosts", "a,b:4", "--dry-run", "./train", "-epochs", "1"}, nil, &out, &out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.HasPrefix(got, "mpirun -np 2") || !strings.Contains(got, "--host a,b:4 ./train -epochs 1") {
		t.Errorf("dry run printed %q", got)
	}
}
