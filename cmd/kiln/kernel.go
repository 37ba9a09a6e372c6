package main

import (
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"path/filepath"

	"github.com/kiln-ml/kiln/kernel"
	"github.com/kiln-ml/kiln/kernel/jupyter"
	"github.com/kiln-ml/kiln/kernel/kernelcmd"
)

// kernelInstallOptions are the flags of `kiln kernel install` and
// `kiln kernel uninstall`.
type kernelInstallOptions struct {
	user         bool
	prefix, name string
	display      string
}

// kernelInstallFlags defines the flags of `kiln kernel install` and
// `uninstall` on fs.
func kernelInstallFlags(fs *flag.FlagSet) *kernelInstallOptions {
	o := &kernelInstallOptions{}
	fs.BoolVar(&o.user, "user", false, "install for the current user (the default)")
	fs.StringVar(&o.prefix, "prefix", "", "install under PREFIX/share/jupyter/kernels (e.g. a virtualenv)")
	fs.StringVar(&o.name, "name", "kiln", "kernelspec name")
	fs.StringVar(&o.display, "display-name", "Go (Kiln)", "name shown in front ends (install only)")
	return o
}

// kernelCommand dispatches `kiln kernel run|install|uninstall|build`.
func kernelCommand(args []string, stdout, _ io.Writer) error {
	if len(args) == 0 {
		return usagef("kernel: a subcommand is required (run, install, uninstall or build)")
	}
	switch args[0] {
	case "run", "crash-monitor":
		return kernel.Main(args)
	case "build":
		return kernelcmd.Build(args[1:], stdout)
	case "install", "uninstall":
		fs := commandFlagSet("kernel " + args[0])
		o := kernelInstallFlags(fs)
		if err := flagError(fs, fs.Parse(args[1:])); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return usagef("kernel %s: unexpected arguments %q", args[0], fs.Args())
		}
		dir, err := kernelcmd.SpecDir(o.prefix, o.name)
		if err != nil {
			return err
		}
		if args[0] == "uninstall" {
			if _, err := os.Stat(filepath.Join(dir, "kernel.json")); err != nil {
				return fmt.Errorf("kernel uninstall: no kernelspec at %s", dir)
			}
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			fmt.Fprintln(stdout, "removed", dir)
			return nil
		}
		return installKernelspec(dir, o.display)
	}
	return usagef("kernel: unknown subcommand %q (want run, install, uninstall or build)", args[0])
}

// installKernelspec writes kernel.json pointing at this very binary, plus logos.
func installKernelspec(dir, displayName string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("kernel install: cannot locate the kiln binary: %w", err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return fmt.Errorf("kernel install: %w", err)
	}
	spec := jupyter.KernelSpec{
		Argv:          []string{exe, "kernel", "run", "-f", "{connection_file}"},
		DisplayName:   displayName,
		Language:      "go",
		InterruptMode: "message",
	}
	if err := jupyter.WriteKernelSpec(dir, spec); err != nil {
		return err
	}
	for _, size := range []int{32, 64} {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("logo-%dx%d.png", size, size)), logo(size), 0o644); err != nil {
			return fmt.Errorf("kernel install: %w", err)
		}
	}
	fmt.Println("installed kernelspec", filepath.Base(dir), "in", dir)
	return nil
}

// logo draws Kiln's mark: a flame in a kiln's arched mouth.
func logo(size int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	brick := color.NRGBA{0x8a, 0x3b, 0x1f, 0xff}
	flame := color.NRGBA{0xf5, 0xa6, 0x23, 0xff}
	core := color.NRGBA{0xff, 0xe0, 0x8a, 0xff}
	s := float64(size)
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			fx, fy := (float64(x)+0.5)/s, (float64(y)+0.5)/s
			dx := fx - 0.5
			// the kiln: a dome over a block
			inKiln := (fy > 0.45 && fy < 0.95 && fx > 0.1 && fx < 0.9) || (dx*dx+(fy-0.45)*(fy-0.45) < 0.16 && fy <= 0.45)
			// the mouth: a smaller arch
			inMouth := (fy > 0.6 && fy < 0.95 && fx > 0.3 && fx < 0.7) || (dx*dx+(fy-0.6)*(fy-0.6) < 0.04 && fy <= 0.6)
			// the flame: a teardrop inside the mouth
			h := (0.93 - fy) / 0.4
			inFlame := h > 0 && h < 1 && abs(dx) < 0.15*(1-h)*(0.6+h)
			inCore := h > 0 && h < 0.6 && abs(dx) < 0.07*(1-h/0.6)*(0.6+h)
			switch {
			case inCore:
				img.Set(x, y, core)
			case inFlame:
				img.Set(x, y, flame)
			case inKiln && !inMouth:
				img.Set(x, y, brick)
			}
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
