package kernel

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kiln-ml/kiln/nn"
	"html"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/kiln-ml/kiln/backends/remote"   // remote://HOST:PORT/DEVICE, served by `kiln serve`
	_ "github.com/kiln-ml/kiln/backends/strict" // the strict test device, for %device strict
	"github.com/kiln-ml/kiln/kernel/display"
	"github.com/kiln-ml/kiln/tensor"
)

// magicHelp is the part of Help about magics.
const magicHelp = `## Magics
A cell that starts with % or ! is a magic instead of Go:
- %help: this text.
- %device: the session's default device and every device detected;
  %device NAME (cpu, cuda:0, strict, …) makes NAME the default, so tensors
  created without an explicit device go there.
- %reset: forget every variable, function, type and import of the session
  (tensors held by variables are released) and start a fresh namespace.
- %time CODE runs one line of Go and prints its wall time; a cell whose
  first line is %%time runs the rest of the cell and prints its wall time.
- %env lists the environment cells see; %env NAME shows one variable;
  %env NAME=VALUE sets it for cells, for Kiln's compiled code (KILN_*
  settings) and for ! commands.
- !COMMAND runs a shell command (sh -c) with its output streamed into the
  cell; a cell may hold several ! lines, run in order until one fails.
  Interrupting the cell kills the command.
- %load FILE runs a Go source file as a cell (its line numbers in errors).
- %who lists the session's variables with their types; tensors with shape,
  dtype, device and memory. %who --json and %device --json give the same as
  JSON, for programs (the workbench).
`

// magic runs a magic cell: one whose first line starts with % or !.
func (s *Session) magic(r *run, out Output, cell string) (*display.Data, error) {
	if strings.HasPrefix(cell, "!") {
		return nil, s.shell(r, cell)
	}
	first, rest, _ := strings.Cut(cell, "\n")
	name, arg, _ := strings.Cut(strings.TrimSpace(first), " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "%help", "%?":
		return &display.Data{Data: display.MIMEMap{
			display.MIMETypeText:     Help,
			display.MIMETypeMarkdown: Help,
		}}, nil
	case "%%time":
		// The blank first line keeps the cell's line numbers in errors.
		return s.timed(r, out, "\n"+rest)
	}
	if strings.TrimSpace(rest) != "" {
		return nil, usageError(name + " takes one line; only %%time and ! lines may be followed by more")
	}
	switch name {
	case "%reset", "%env", "%who":
		// They use the interpreter (see interrupt.go).
		if err := s.awaitInterrupted(r, out); err != nil {
			return nil, err
		}
	}
	switch name {
	case "%time":
		if arg == "" {
			return nil, usageError("%time needs code to run: %time f(x)")
		}
		return s.timed(r, out, arg)
	case "%device":
		if arg == "--json" {
			return devicesJSON()
		}
		return s.deviceMagic(arg)
	case "%reset":
		return nil, s.reset()
	case "%env":
		return s.envMagic(r, arg)
	case "%load":
		if arg == "" {
			return nil, usageError("%load needs a file: %load model.go")
		}
		src, err := os.ReadFile(arg)
		if err != nil {
			return nil, usageError("%load: " + err.Error())
		}
		return s.runCode(r, out, string(src))
	case "%who":
		if arg == "--json" {
			return s.whoJSON()
		}
		return s.who(), nil
	}
	return nil, usageError("unknown magic " + name + " (%help lists what the kernel offers)")
}

// usageError is the error of a magic used wrongly.
func usageError(msg string) error {
	return &Error{Name: "UsageError", Value: msg, Traceback: []string{msg}}
}

// runCode runs code as the cell r.
func (s *Session) runCode(r *run, out Output, code string) (*display.Data, error) {
	if err := s.awaitInterrupted(r, out); err != nil {
		return nil, err
	}
	r.code = code
	return s.runCell(r)
}

// timed runs code and writes its wall time to stdout.
func (s *Session) timed(r *run, out Output, code string) (*display.Data, error) {
	start := time.Now()
	res, err := s.runCode(r, out, code)
	s.drain()
	s.router.write(Stdout, []byte(fmt.Sprintf("Wall time: %s\n", formatDuration(time.Since(start)))))
	return res, err
}

// formatDuration prints d with three significant digits in a unit that
// suits it.
func formatDuration(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%d ns", d.Nanoseconds())
	case d < time.Millisecond:
		return fmt.Sprintf("%.3g µs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.3g ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.3g s", d.Seconds())
}

// deviceMagic shows the devices, or sets the default device to name.
func (s *Session) deviceMagic(name string) (*display.Data, error) {
	if name != "" {
		dev, err := tensor.ParseDevice(name)
		if err != nil {
			return nil, usageError("%device: " + err.Error())
		}
		if err := tensor.Try(func() { tensor.SetDefaultDevice(dev, "set by %device in the notebook") }); err != nil {
			return nil, usageError("%device: " + err.Error())
		}
	}
	def, err := tensor.DefaultDevice()
	head := fmt.Sprintf("default device: %s (%s)", def, tensor.DefaultDeviceReason())
	if err != nil {
		head = "no default device: " + err.Error()
	}
	list := tensor.Devices()
	return &display.Data{Data: display.MIMEMap{
		display.MIMETypeText: head + "\n\n" + list.String(),
		display.MIMETypeHTML: "<p>" + html.EscapeString(head) + "</p>\n<pre>" + html.EscapeString(list.String()) + "</pre>",
	}}, nil
}

// reset replaces the interpreter with a fresh one. Tensors held by the old
// session's variables are released.
func (s *Session) reset() error {
	s.stopGoroutines()
	for _, v := range s.globals() {
		if v.IsValid() && v.CanInterface() {
			if t, ok := v.Interface().(*tensor.Tensor); ok && t != nil {
				_ = tensor.Try(t.Release)
			}
		}
	}
	s.nsMu.Lock()
	defer s.nsMu.Unlock()
	if err := s.newInterpreter(); err != nil {
		return fmt.Errorf("kernel: %%reset: %w", err)
	}
	return nil
}

// environ returns the environment cells see: the interpreter's, which in
// restricted mode is a copy of the kernel's.
func (s *Session) environ() ([]string, error) {
	s.envOut = nil
	if err := s.evalInternal(reserved+`.PutEnv(`+reserved+`os.Environ())`, false); err != nil {
		return nil, err
	}
	return s.envOut, nil
}

// envMagic lists, shows or sets environment variables.
func (s *Session) envMagic(r *run, arg string) (*display.Data, error) {
	if k, v, ok := strings.Cut(arg, "="); ok {
		k = strings.TrimSpace(k)
		if k == "" || strings.ContainsAny(k, " \t\x00") {
			return nil, usageError(fmt.Sprintf("%%env: bad variable name %q", k))
		}
		v = strings.TrimSpace(v)
		code := reserved + `os.Setenv(` + strconv.Quote(k) + `, ` + strconv.Quote(v) + `)`
		if err := s.evalInternal(code, false); err != nil {
			return nil, err
		}
		if err := os.Setenv(k, v); err != nil {
			return nil, usageError("%env: " + err.Error())
		}
		s.router.write(Stdout, []byte("env: "+k+"="+v+"\n"))
		return nil, nil
	}
	env, err := s.environ()
	if err != nil {
		return nil, err
	}
	if arg != "" {
		for _, kv := range env {
			if k, v, _ := strings.Cut(kv, "="); k == arg {
				return &display.Data{Data: display.MIMEMap{display.MIMETypeText: v}}, nil
			}
		}
		return nil, usageError("%env: " + arg + " is not set")
	}
	sort.Strings(env)
	return &display.Data{Data: display.MIMEMap{display.MIMETypeText: strings.Join(env, "\n")}}, nil
}

// shell runs the cell's ! lines one after the other with sh -c, streaming
// their output, until one fails.
func (s *Session) shell(r *run, cell string) error {
	env, err := s.environ()
	if err != nil {
		return err
	}
	for _, line := range strings.Split(cell, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "!") {
			return usageError(fmt.Sprintf("a ! cell holds only ! lines; %q is not one", line))
		}
		cmd := exec.CommandContext(r.ctx, "sh", "-c", strings.TrimPrefix(line, "!"))
		cmd.Env = env
		cmd.Stdout = streamWriter{s.router, Stdout}
		cmd.Stderr = streamWriter{s.router, Stderr}
		killGroup(cmd)
		err := cmd.Run()
		if r.ctx.Err() != nil {
			return interruptedError()
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			msg := fmt.Sprintf("%s: exit status %d", line, exit.ExitCode())
			return &Error{Name: "CommandError", Value: msg, Traceback: []string{msg}}
		}
		if err != nil {
			msg := fmt.Sprintf("%s: %v", line, err)
			return &Error{Name: "CommandError", Value: msg, Traceback: []string{msg}}
		}
	}
	return nil
}

// interruptedError is the error of a cell stopped by an interrupt.
func interruptedError() error {
	msg := "interrupted"
	return &Error{Name: "Interrupted", Value: msg, Traceback: []string{msg}, err: ErrInterrupted}
}

// who lists the session's variables.
func (s *Session) who() *display.Data {
	g := s.globals()
	names := make([]string, 0, len(g))
	for n := range g {
		if n == "ctx" || n == "Display" || n == "_" || strings.HasPrefix(n, reserved) || strings.Contains(n, "__v") {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return &display.Data{Data: display.MIMEMap{display.MIMETypeText: "no variables"}}
	}
	var text strings.Builder
	tw := tabwriter.NewWriter(&text, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTYPE\tVALUE")
	var rows strings.Builder
	for _, n := range names {
		typ, val := describeValue(g[n], true)
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n, typ, val)
		fmt.Fprintf(&rows, "<tr><td><code>%s</code></td><td><code>%s</code></td><td>%s</td></tr>\n",
			html.EscapeString(n), html.EscapeString(typ), html.EscapeString(val))
	}
	tw.Flush()
	return &display.Data{Data: display.MIMEMap{
		display.MIMETypeText: text.String(),
		display.MIMETypeHTML: "<table><thead><tr><th>name</th><th>type</th><th>value</th></tr></thead><tbody>\n" +
			rows.String() + "</tbody></table>",
	}}
}

// describeValue returns a variable's type and a one-line summary of it:
// for a tensor its shape, dtype, device, memory and first values; for a
// model (anything holding parameters) its parameter count; for a slice,
// map or channel its length; for a value with a String method (a device,
// a duration) that; for another struct or pointer nothing (its type says
// it: never a raw dump of its fields and addresses); else the value, cut
// to 60 characters. Without sync, a tensor's values are read only when
// they are in host memory (a GPU's would wait for the device).
func describeValue(v reflect.Value, sync bool) (typ, val string) {
	if !v.IsValid() {
		return "nil", ""
	}
	typ = v.Type().String()
	if !v.CanInterface() {
		return typ, ""
	}
	x := v.Interface()
	if t, ok := x.(*tensor.Tensor); ok {
		if t == nil {
			return typ, "nil"
		}
		var desc string
		err := tensor.Try(func() {
			desc = fmt.Sprintf("%v %s on %s, %s", t.Shape(), t.DType(), t.Device(), tensor.FormatBytes(int64(t.NumElements())*int64(t.DType().Size())))
		})
		if err != nil {
			return typ, "released"
		}
		if !sync && !onHost(t) {
			return typ, desc
		}
		if vs := firstValues(t, 4); vs != "" {
			desc += ": " + vs
		}
		return typ, desc
	}
	switch v.Kind() {
	case reflect.Func:
		return typ, ""
	case reflect.Slice, reflect.Map, reflect.Chan, reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return typ, "nil"
		}
	}
	switch v.Kind() {
	case reflect.Struct, reflect.Pointer, reflect.Slice, reflect.Map: // a model (nn.Sequential is a slice)
		if !mayHoldParams(v.Type()) {
			break
		}
		if n := paramCount(x); n > 0 {
			return typ, fmt.Sprintf("module, %s parameters", groupDigits(n))
		}
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.Chan:
		return typ, fmt.Sprintf("len %d", v.Len())
	}
	if str, ok := x.(fmt.Stringer); ok {
		if s, ok := safeString(str); ok {
			return typ, cut(s, 60)
		}
		return typ, ""
	}
	if v.Kind() == reflect.Struct || v.Kind() == reflect.Pointer {
		return typ, ""
	}
	return typ, cut(fmt.Sprint(x), 60)
}

// onHost reports whether t's values are in host memory, readable without
// waiting for a device.
func onHost(t *tensor.Tensor) (host bool) {
	_ = tensor.Try(func() { host = t.Device().Kind() == "cpu" })
	return host
}

// firstValues formats up to n of t's first elements ("0.1, -2, 3, …"),
// reading only those from the device; "" when they cannot be read.
func firstValues(t *tensor.Tensor, n int) (out string) {
	defer func() {
		if recover() != nil {
			out = ""
		}
	}()
	total := t.NumElements()
	if total == 0 {
		return "[]"
	}
	var vs []float64
	if total <= 4*n { // small: one read beats slicing out the first row
		err := tensor.Try(func() {
			k := 1
			if shape := t.Shape(); len(shape) > 0 {
				k = shape[len(shape)-1]
			}
			vs = t.Float64s()[:min(n, k)]
		})
		if err != nil || len(vs) == 0 {
			return ""
		}
		return joinValues(vs, total)
	}
	err := tensor.Try(func() {
		tensor.Scope(func() {
			head := t.Detach()
			for head.Dims() > 1 { // the first row: no copy of the whole tensor
				head = head.Narrow(0, 0, 1).Reshape(head.Shape()[1:]...)
			}
			if head.Dims() == 1 {
				head = head.Narrow(0, 0, min(n, head.Shape()[0]))
			}
			vs = head.Float64s()
		})
	})
	if err != nil || len(vs) == 0 {
		return ""
	}
	return joinValues(vs, total)
}

// joinValues formats the first values of a tensor of total elements.
func joinValues(vs []float64, total int) string {
	parts := make([]string, len(vs))
	for i, f := range vs {
		parts[i] = strconv.FormatFloat(f, 'g', 4, 64)
	}
	s := strings.Join(parts, ", ")
	if total > len(vs) {
		s += ", …"
	}
	return s
}

// paramCount is nn.NumParams(x), 0 when x holds no parameters or walking
// it fails.
func paramCount(x any) (n int) {
	defer func() {
		if recover() != nil {
			n = 0
		}
	}()
	tensor.Try(func() { n = nn.NumParams(x) })
	return n
}

// safeString calls a String method that may panic (on a nil receiver, a
// half-built value).
func safeString(s fmt.Stringer) (out string, ok bool) {
	defer func() {
		if recover() != nil {
			out, ok = "", false
		}
	}()
	return s.String(), true
}

// cut shortens s to at most n characters (runes), ending in "...".
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-3]) + "..."
	}
	return s
}

// groupDigits writes n with thousands separators: 235146 → "235,146".
func groupDigits(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// VariableInfo is one entry of `%who --json` and of a VariablesSnapshot,
// the machine-readable listing the workbench's Variables panel shows.
type VariableInfo struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Kind is tensor, module, slice, map, chan, func, struct, pointer,
	// value, or error when describing the variable failed.
	Kind   string `json:"kind,omitempty"`
	Value  string `json:"value,omitempty"`  // the %who summary
	Shape  []int  `json:"shape,omitempty"`  // tensors
	DType  string `json:"dtype,omitempty"`  // tensors
	Device string `json:"device,omitempty"` // tensors
	Bytes  int64  `json:"bytes,omitempty"`  // tensors
	Params int    `json:"params,omitempty"` // models: the number of parameter elements
	Len    *int   `json:"len,omitempty"`    // slices, arrays, maps, channels
}

// whoJSON lists the session's variables as JSON (application/json).
func (s *Session) whoJSON() (*display.Data, error) {
	return jsonData(describeGlobals(s.globals(), true))
}

// DeviceInfo is one entry of `%device --json`.
type DeviceInfo struct {
	Name    string `json:"name"` // as ParseDevice and %device take it
	Kind    string `json:"kind"`
	Model   string `json:"model"`
	Memory  int64  `json:"memory"`
	Cores   int    `json:"cores"`
	Detail  string `json:"detail,omitempty"`
	Default bool   `json:"default"`
	// Vendor is the device's maker ("NVIDIA", "Mesa (software)"), "" when
	// unknown; Software marks a GPU API emulated on the CPU (lavapipe),
	// which is listed but never the default, NotDefault saying why.
	Vendor     string `json:"vendor,omitempty"`
	Software   bool   `json:"software,omitempty"`
	NotDefault string `json:"not_default,omitempty"`
	// Remote marks a device of a `kiln serve` process listed in
	// KILN_REMOTE; Error says why it cannot be used now (unreachable,
	// refused token), and is empty when it answered.
	Remote bool   `json:"remote,omitempty"`
	Error  string `json:"error,omitempty"`
}

// devicesJSON lists the detected devices, and the strict test device, as
// JSON (application/json).
func devicesJSON() (*display.Data, error) {
	def, _ := tensor.DefaultDevice()
	out := []DeviceInfo{}
	for _, e := range tensor.Devices() {
		out = append(out, DeviceInfo{Name: e.String(), Kind: e.Kind, Model: e.Name, Memory: e.MemoryBytes,
			Cores: e.Cores, Detail: e.Detail, Default: e.Default, Vendor: e.Vendor, Software: e.Software, NotDefault: e.NotDefault})
	}
	out = append(out, remoteDevices(def)...)
	if strict, err := tensor.ParseDevice("strict"); err == nil {
		out = append(out, DeviceInfo{Name: "strict", Kind: "strict", Model: "strict test backend over the CPU",
			Detail:  "checks every kernel's buffers and poisons freed memory (slow; for tests)",
			Default: def.String() == strict.String()})
	}
	return jsonData(out)
}

// remoteDevices describes the devices of KILN_REMOTE, asking their servers
// at once (at most 3 s each): an unreachable one is listed with the reason.
func remoteDevices(def tensor.Device) []DeviceInfo {
	urls := remote.Configured()
	out := make([]DeviceInfo, len(urls))
	var wg sync.WaitGroup
	for i, url := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := DeviceInfo{Name: url, Kind: remote.Scheme, Remote: true, Default: def.String() == url}
			if info, err := remote.Describe(url, 3*time.Second); err != nil {
				e.Error = err.Error()
			} else {
				e.Model, e.Memory, e.Cores, e.Vendor, e.Software = info.Name, info.MemoryBytes, info.Cores, info.Vendor, info.Software
				addr, _, _ := remote.ParseURL(url)
				e.Detail = "its " + info.String() + ", served by kiln serve at " + addr
				if info.Detail != "" {
					e.Detail += "; " + info.Detail
				}
			}
			out[i] = e
		}()
	}
	wg.Wait()
	return out
}

// jsonData is v as an application/json display bundle with a text form.
func jsonData(v any) (*display.Data, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &display.Data{Data: display.MIMEMap{display.MIMETypeJSON: json.RawMessage(b), display.MIMETypeText: string(b)}}, nil
}
