package dist

import (
	"context"
	"errors"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestLaunchArgs(t *testing.T) {
	root := []string(nil)
	if os.Geteuid() == 0 {
		root = []string{"--allow-run-as-root"}
	}
	many := runtime.NumCPU() + 1
	cases := []struct {
		name string
		cfg  LaunchConfig
		want []string // between "-np N" (+ root) and the program
		err  string
	}{
		{"one machine, few ranks", LaunchConfig{Procs: 1}, nil, ""},
		{"more ranks than cores", LaunchConfig{Procs: many}, []string{"--oversubscribe", "--bind-to", "none"}, ""},
		{"hosts", LaunchConfig{Procs: many, Hosts: []string{"a:2", "b"}}, []string{"--host", "a:2,b"}, ""},
		{"environment and extra flags", LaunchConfig{Procs: 1, Env: []string{"KILN_DEVICE"}, Extra: []string{"--mca", "btl", "self,vader"}},
			[]string{"-x", "KILN_DEVICE", "--mca", "btl", "self,vader"}, ""},
		{"no processes", LaunchConfig{}, nil, "0 processes"},
		{"a host list in one name", LaunchConfig{Procs: 2, Hosts: []string{"a,b"}}, nil, `host "a,b"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := LaunchArgs(c.cfg, "./train", "-epochs", "2")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := append([]string{"-np", strconv.Itoa(c.cfg.Procs)}, root...)
			want = append(append(want, c.want...), "./train", "-epochs", "2")
			if !slices.Equal(got, want) {
				t.Errorf("mpirun %q, want %q", got, want)
			}
		})
	}
	if _, err := LaunchArgs(LaunchConfig{Procs: 2}, ""); err == nil {
		t.Error("no program: no error")
	}
}

func TestLaunchCommandWithoutMPIRun(t *testing.T) {
	_, err := LaunchCommand(context.Background(), LaunchConfig{Procs: 2, MPIRun: "/nonexistent/mpirun"}, "./train")
	if !errors.Is(err, ErrNoLauncher) || !strings.Contains(err.Error(), "openmpi-bin") {
		t.Errorf("err = %v, want ErrNoLauncher naming openmpi-bin", err)
	}
}
