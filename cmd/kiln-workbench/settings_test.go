package main

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseSettings(t *testing.T) {
	o, err := parseSettings([]string{"--root", "nb", "--runs", "a", "--runs", "b", "--kiln", "/k", "--existing", "c.json", "--self-test", "--self-test-timeout", "30s", "--self-test-hold", "2s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := settings{root: "nb", runDirs: []string{"a", "b"}, kiln: "/k", existing: "c.json", selfTest: true, selfTestTimeout: 30 * time.Second, selfTestHold: 2 * time.Second}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("got %+v, want %+v", o, want)
	}
	o, err = parseSettings(nil, io.Discard)
	if err != nil || o.root != "." || !reflect.DeepEqual(o.runDirs, []string{"runs"}) || o.selfTest || o.selfTestTimeout != 2*time.Minute {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	for _, bad := range [][]string{{"extra"}, {"--nope"}, {"--self-test-timeout", "0s"}, {"--runs", ""}, {"--self-test-hold", "-1s"}} {
		if _, err := parseSettings(bad, io.Discard); err == nil {
			t.Errorf("parseSettings(%q): no error", bad)
		}
	}
}

func TestFindKiln(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "kiln-workbench")
	kiln := filepath.Join(dir, "kiln")
	plain := filepath.Join(dir, "notes.txt")
	for _, f := range []string{exe, kiln} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())

	if got, err := findKiln("", exe); err != nil || got != kiln {
		t.Errorf("beside the executable: %q, %v; want %q", got, err, kiln)
	}
	if got, err := findKiln(kiln, ""); err != nil || got != kiln {
		t.Errorf("--kiln: %q, %v", got, err)
	}
	for _, bad := range []string{plain, dir, filepath.Join(dir, "missing")} {
		if _, err := findKiln(bad, exe); err == nil || !strings.Contains(err.Error(), "--kiln "+bad) {
			t.Errorf("--kiln %s: error %v, want one naming the flag", bad, err)
		}
	}
	if _, err := findKiln("", filepath.Join(t.TempDir(), "x")); err == nil || !strings.Contains(err.Error(), "--kiln") {
		t.Errorf("nowhere: error %v, want a hint about --kiln", err)
	}
	t.Setenv("PATH", dir)
	if got, err := findKiln("", filepath.Join(t.TempDir(), "x")); err != nil || got != kiln {
		t.Errorf("on PATH: %q, %v; want %q", got, err, kiln)
	}
}
