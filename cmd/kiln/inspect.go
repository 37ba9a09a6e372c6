package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/kiln-ml/kiln/internal/modelfile"
	"github.com/kiln-ml/kiln/store"
)

// checkpointReport describes a checkpoint directory.
type checkpointReport struct {
	Dir       string                      `json:"dir"`
	Chosen    string                      `json:"chosen,omitempty"` // how it was chosen from a run directory
	Format    string                      `json:"format"`
	Version   int                         `json:"version"`
	Created   string                      `json:"created"`
	Epoch     int                         `json:"epoch"`
	Step      int                         `json:"step"`
	RNG       store.RNGState              `json:"rng"`
	Metrics   map[string]any              `json:"metrics"`
	Files     []store.CheckpointFile      `json:"files"`
	Model     modelfile.SafetensorsReport `json:"model"`
	Optimizer modelfile.SafetensorsReport `json:"optimizer"`
	Config    json.RawMessage             `json:"config,omitempty"`
	Schedule  json.RawMessage             `json:"schedule,omitempty"`
	OptState  json.RawMessage             `json:"optimizer_state,omitempty"`
}

// inspectFlags defines the flags of `kiln inspect` on fs; the result is
// --json.
func inspectFlags(fs *flag.FlagSet) *bool {
	return fs.Bool("json", false, "print a JSON description instead of tables")
}

// inspectCommand is `kiln inspect [--json] PATH`, writing to out.
func inspectCommand(args []string, out, _ io.Writer) error {
	fs := commandFlagSet("inspect")
	asJSON := inspectFlags(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("inspect: want one file or directory, got %d arguments", len(pos))
	}
	path := pos[0]
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	if !fi.IsDir() {
		kind, err := fileKind(path, fi.Size())
		if err != nil {
			return fmt.Errorf("inspect: %w", err)
		}
		switch kind {
		case "gguf":
			return inspectGGUF(out, path, fi.Size(), *asJSON)
		case "onnx":
			return inspectONNX(out, path, *asJSON)
		}
		sf, err := store.OpenSafetensors(path)
		if err != nil {
			return fmt.Errorf("inspect: %w", err)
		}
		defer sf.Close()
		rep := modelfile.DescribeSafetensors(path, fi.Size(), sf)
		if *asJSON {
			return writeJSON(out, rep)
		}
		rep.Print(out, "", 0)
		return nil
	}

	if isRunDirectory(path) {
		return inspectRun(out, path, *asJSON)
	}
	dir, how, err := resolveCheckpoint(path)
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	r, err := store.OpenCheckpoint(dir)
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	defer r.Close()
	rep := describeCheckpoint(r)
	if how != "checkpoint" {
		rep.Chosen = how
	}
	if *asJSON {
		return writeJSON(out, rep)
	}
	printCheckpoint(out, rep)
	return nil
}

func writeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// describeCheckpoint gathers what r says about itself.
func describeCheckpoint(r *store.CheckpointReader) checkpointReport {
	info := r.Info
	rep := checkpointReport{
		Dir: info.Dir, Format: store.CheckpointFormat, Version: info.Version, Created: info.Created,
		Epoch: info.Epoch, Step: info.Step, RNG: info.RNG, Files: info.Files,
		Metrics:  map[string]any{},
		Config:   info.Config,
		Schedule: info.Schedule,
		OptState: info.OptimizerJSON,
	}
	for k, v := range info.Metrics {
		rep.Metrics[k] = store.MetricValue(v)
	}
	sizes := map[string]int64{}
	for _, f := range info.Files {
		sizes[f.Name] = f.Size
	}
	rep.Model = modelfile.DescribeSafetensors(filepath.Join(info.Dir, "model.safetensors"), sizes["model.safetensors"], r.Model)
	rep.Optimizer = modelfile.DescribeSafetensors(filepath.Join(info.Dir, "optimizer.safetensors"), sizes["optimizer.safetensors"], r.Optimizer)
	return rep
}

// printCheckpoint prints a checkpoint's state, files and tensors.
func printCheckpoint(out io.Writer, rep checkpointReport) {
	fmt.Fprintf(out, "checkpoint  %s\n", rep.Dir)
	if rep.Chosen != "" {
		fmt.Fprintf(out, "chosen as   %s\n", rep.Chosen)
	}
	fmt.Fprintf(out, "format      %s v%d, created %s\n", rep.Format, rep.Version, rep.Created)
	fmt.Fprintf(out, "epoch       %d\nstep        %d\n", rep.Epoch, rep.Step)
	fmt.Fprintf(out, "rng         seed %d, position %d\n", rep.RNG.Seed, rep.RNG.Position)
	names := make([]string, 0, len(rep.Metrics))
	for k := range rep.Metrics {
		names = append(names, k)
	}
	sort.Strings(names)
	var ms []string
	for _, k := range names {
		ms = append(ms, k+"="+formatMetric(k, rep.Metrics[k]))
	}
	if len(ms) == 0 {
		ms = []string{"(none)"}
	}
	fmt.Fprintf(out, "metrics     %s\n", strings.Join(ms, "  "))
	for _, j := range []struct {
		label string
		v     json.RawMessage
	}{{"config", rep.Config}, {"schedule", rep.Schedule}, {"optimizer", rep.OptState}} {
		if len(j.v) > 0 {
			fmt.Fprintf(out, "%-11s %s\n", j.label, compactJSON(j.v, 200))
		}
	}
	fmt.Fprintln(out, "files       (sizes and SHA-256 verified against manifest.json)")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, f := range rep.Files {
		fmt.Fprintf(tw, "  %s\t%s\tsha256 %s\n", f.Name, modelfile.Bytes(f.Size), f.SHA256)
	}
	tw.Flush()
	fmt.Fprintln(out, "\nmodel:")
	rep.Model.Print(out, "  ", 0)
	fmt.Fprintln(out, "\noptimizer:")
	rep.Optimizer.Print(out, "  ", 0)
}

// compactJSON returns v on one line, cut to about limit bytes.
func compactJSON(v json.RawMessage, limit int) string {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return string(v)
	}
	s := b.String()
	if len(s) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// formatMetric formats a metric's value for people: a time in seconds
// (a name ending in _s, seconds or time) as a duration, other numbers to 4
// significant digits, except that those from 10⁴ to 10⁹ are rounded to
// whole numbers rather than shown as 1.235e+04, and anything else (the
// names of NaN and the infinities) as it is.
func formatMetric(name string, v any) string {
	f, ok := v.(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Sprint(v)
	}
	n := strings.ToLower(name)
	if strings.HasSuffix(n, "_s") || strings.HasSuffix(n, "seconds") || strings.HasSuffix(n, "time") {
		return formatSeconds(f)
	}
	if a := math.Abs(f); a >= 1e4 && a < 1e9 {
		return strconv.FormatFloat(math.Round(f), 'f', 0, 64)
	}
	return strconv.FormatFloat(f, 'g', 4, 64)
}

// formatSeconds formats s seconds as a duration with about 4 significant
// digits: 1m23s, 12.35s, 1.235ms.
func formatSeconds(s float64) string {
	if math.Abs(s) >= float64(math.MaxInt64/time.Second) {
		return strconv.FormatFloat(s, 'g', 4, 64) + "s"
	}
	d := time.Duration(s * float64(time.Second))
	unit := time.Nanosecond
	for a := d.Abs(); a >= 10000*unit && unit < time.Second; {
		unit *= 10
	}
	if d.Abs() >= time.Minute {
		unit = time.Second
	}
	return d.Round(unit).String()
}
