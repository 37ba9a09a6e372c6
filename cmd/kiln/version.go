package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/klauspost/cpuid/v2"

	"github.com/kiln-ml/kiln/backends"
)

// versionCommand is `kiln version`.
func versionCommand(args []string, stdout, _ io.Writer) error {
	fs := commandFlagSet("version")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("version: unexpected arguments %q", pos)
	}
	info, _ := debug.ReadBuildInfo()
	printVersion(stdout, info)
	return nil
}

// printVersion prints the release and what the binary was built from, as
// info (nil when Go recorded nothing) says.
func printVersion(w io.Writer, info *debug.BuildInfo) {
	fmt.Fprintf(w, "kiln %s\n", version)
	module, modVersion := "github.com/kiln-ml/kiln", "(devel)"
	goVersion := runtime.Version()
	var revision, when string
	modified := false
	if info != nil {
		if info.Main.Path != "" {
			module = info.Main.Path
		}
		if info.Main.Version != "" {
			modVersion = info.Main.Version
		}
		if info.GoVersion != "" {
			goVersion = info.GoVersion
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	fmt.Fprintf(w, "module    %s %s\n", module, modVersion)
	if revision != "" {
		var notes []string
		if when != "" {
			notes = append(notes, when)
		}
		if modified {
			notes = append(notes, "with uncommitted changes")
		}
		line := revision
		if len(notes) > 0 {
			line += " (" + strings.Join(notes, ", ") + ")"
		}
		fmt.Fprintf(w, "revision  %s\n", line)
	}
	fmt.Fprintf(w, "go        %s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	var kinds []string
	for _, d := range backends.Drivers() {
		kinds = append(kinds, d.Kind())
	}
	fmt.Fprintf(w, "backends  %s (see 'kiln devices')\n", strings.Join(kinds, ", "))
	fmt.Fprintf(w, "cpu       %s\n", cpuFeatures())
}

// cpuFeatures names the CPU and the features the CPU backend's assembly
// kernels are chosen by (AVX-512, else AVX2 with FMA, on amd64; the
// portable Go kernels elsewhere or with -tags purego).
func cpuFeatures() string {
	name := strings.TrimSpace(cpuid.CPU.BrandName)
	if drv, err := backends.Lookup("cpu"); err == nil {
		if ds := drv.Enumerate(); len(ds) > 0 {
			name = ds[0].Name // as kiln devices shows it
		}
	}
	if name == "" {
		name = "unknown CPU"
	}
	if runtime.GOARCH != "amd64" {
		return name
	}
	var has, lacks []string
	for _, f := range []struct {
		name string
		id   cpuid.FeatureID
	}{{"AVX-512F", cpuid.AVX512F}, {"AVX2", cpuid.AVX2}, {"FMA", cpuid.FMA3}, {"BMI2", cpuid.BMI2}} {
		if cpuid.CPU.Supports(f.id) {
			has = append(has, f.name)
		} else {
			lacks = append(lacks, f.name)
		}
	}
	s := name + ": " + strings.Join(has, " ")
	if len(has) == 0 {
		s = name + ": none of AVX-512F, AVX2, FMA"
	}
	if len(lacks) > 0 && len(has) > 0 {
		s += " (no " + strings.Join(lacks, ", ") + ")"
	}
	return s
}
