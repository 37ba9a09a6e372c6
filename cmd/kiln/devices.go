package main

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/remote"
	_ "github.com/kiln-ml/kiln/backends/strict" // listed (and usable as KILN_DEVICE=strict) whatever else is linked
	"github.com/kiln-ml/kiln/tensor"
)

// devicesCommand is `kiln devices`: every backend with its devices (name,
// vendor, memory; software devices such as lavapipe labelled, with why they
// are never the default) or the reason it has none, the default device and
// why. An unusable
// KILN_DEVICE is its error, after the list.
func devicesCommand(args []string, stdout, _ io.Writer) error {
	fs := commandFlagSet("devices")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("devices: unexpected arguments %q", pos)
	}
	def, defErr := tensor.DefaultDevice()
	defName := ""
	if defErr == nil {
		defName = def.Inner().String()
	}
	rows := backendRows(backends.Drivers())
	if _, err := backends.Lookup("cuda"); err != nil {
		rows = append(rows, backendRow{kind: "cuda", reason: "not in this build of kiln (it was built with -tags kiln_nocuda)"})
	}
	if _, err := backends.Lookup("vulkan"); err != nil {
		rows = append(rows, backendRow{kind: "vulkan", reason: "not in this build of kiln (it was built with -tags kiln_novulkan)"})
	}

	// Backends without devices come last, where their long reasons do not
	// break the columns.
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BACKEND\tDEVICE\tNAME\tVENDOR\tMEMORY\tCORES\tDETAIL")
	for _, r := range rows {
		for _, d := range r.devices {
			name := d.String()
			if name == defName {
				name += " *"
			}
			cores := "-"
			if d.Cores > 0 {
				cores = fmt.Sprint(d.Cores)
			}
			mem := "-"
			if d.MemoryBytes > 0 {
				mem = tensor.FormatBytes(d.MemoryBytes)
			}
			vendor := d.Vendor
			if vendor == "" {
				vendor = "-"
			}
			detail := d.Detail
			if d.Software && name == d.String() {
				detail = "software: never the default (slower than the cpu backend); " + detail
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.kind, name, d.Name, vendor, mem, cores, detail)
		}
	}
	for _, url := range remote.Configured() {
		name := url
		if name == defName {
			name += " *"
		}
		d, err := remote.Describe(url, 5*time.Second)
		if err != nil {
			fmt.Fprintf(tw, "remote\t%s\tnot available: %v\n", name, err)
			continue
		}
		mem := "-"
		if d.MemoryBytes > 0 {
			mem = tensor.FormatBytes(d.MemoryBytes)
		}
		vendor := d.Vendor
		if vendor == "" {
			vendor = "-"
		}
		fmt.Fprintf(tw, "remote\t%s\t%s\t%s\t%s\t%d\t%s\n", name, d.Name, vendor, mem, d.Cores, d.Detail)
	}
	for _, r := range rows {
		if r.reason != "" {
			fmt.Fprintf(tw, "%s\t-\tnot available: %s\n", r.kind, r.reason)
		}
	}
	tw.Flush()
	fmt.Fprintln(stdout)
	if defErr != nil {
		fmt.Fprintln(stdout, "default device: none; KILN_DEVICE names no usable device (see the error below)")
		return fmt.Errorf("devices: %w", defErr)
	}
	fmt.Fprintf(stdout, "* default device: %s (%s)\n", def.Inner(), tensor.DefaultDeviceReason())
	return nil
}

// backendRow is one backend of `kiln devices`: its devices, or the reason
// it has none.
type backendRow struct {
	kind    string
	devices []backends.DeviceInfo
	reason  string
}

// backendRows lists each driver's devices, real devices first. For a driver that lists none,
// the reason is the error of opening its first device (for CUDA: the
// library that would not load, or that the driver found no GPU).
func backendRows(drivers []backends.Driver) []backendRow {
	var rows []backendRow
	for _, drv := range drivers {
		r := backendRow{kind: drv.Kind(), devices: drv.Enumerate()}
		if len(r.devices) == 0 {
			r.reason = "no devices detected"
			if _, err := drv.Open(0); err != nil {
				r.reason = err.Error()
			}
		}
		rows = append(rows, r)
	}
	// As tensor.Devices orders them: real devices first, then backends
	// whose devices are all software (lavapipe), then those with none.
	rank := func(r backendRow) int {
		if len(r.devices) == 0 {
			return 2
		}
		for _, d := range r.devices {
			if !d.Software {
				return 0
			}
		}
		return 1
	}
	sort.SliceStable(rows, func(i, j int) bool { return rank(rows[i]) < rank(rows[j]) })
	return rows
}
