package main

import (
	"bytes"
	"io"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/kernel"
	"github.com/kiln-ml/kiln/kernel/kernelcmd"
)

// kiln runs the command line args in this process as main does, and
// returns the exit status, stdout and stderr.
func kiln(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = runMain(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// flagNames lists the flags in text as flag.PrintDefaults writes them.
func flagNames(text string) []string {
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^  -([\w-]+)`).FindAllStringSubmatch(text, -1) {
		names = append(names, m[1])
	}
	return names
}

// Every command's help, however asked for, goes to stdout with status 0,
// shows its usage and flags, and never the flag package's "help requested".
func TestHelpForEveryCommand(t *testing.T) {
	// Flags each command's help must show, listed here rather than taken
	// from the table, so that a flag lost from the help fails.
	wantFlags := map[string][]string{
		"demo":      {"epochs", "batch", "lr", "subset", "device", "run-dir", "xor", "steps", "np"},
		"devices":   nil,
		"export":    {"format", "gguf-type", "model", "o"},
		"help":      nil,
		"inspect":   {"json"},
		"kernel":    {"user", "prefix", "name", "display-name"},
		"launch":    {"n", "hosts", "x", "mpirun", "dry-run"},
		"onnx":      {"o", "package"},
		"serve":     {"addr", "token", "tls-cert", "tls-key", "insecure", "max-session-bytes"},
		"version":   nil,
		"workbench": {"browser", "addr", "root", "runs", "existing", "allow-host", "tls-cert", "tls-key", "insecure"},
	}
	if names := commandNames(); !slices.Equal(names, slices.Sorted(maps.Keys(wantFlags))) {
		t.Fatalf("commands %v: the test's list (or the table's order) needs updating", names)
	}
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			forms := [][]string{{"help", c.name}, {c.name, "-h"}, {c.name, "-help"}, {c.name, "--help"}}
			for _, s := range c.subcommands {
				forms = append(forms, []string{c.name, s, "-h"})
			}
			var first string
			for _, args := range forms {
				code, stdout, stderr := kiln(args...)
				if code != 0 || stderr != "" {
					t.Fatalf("kiln %s: status %d, stderr %q", strings.Join(args, " "), code, stderr)
				}
				if first == "" {
					first = stdout
				} else if stdout != first {
					t.Errorf("kiln %s prints another help than kiln help %s:\n%s", strings.Join(args, " "), c.name, stdout)
				}
			}
			if !strings.HasPrefix(first, "usage: kiln "+c.name) || strings.Contains(first, "help requested") {
				t.Errorf("help of %s:\n%s", c.name, first)
			}
			if !strings.Contains(first, "\n\n"+strings.ToUpper(c.name[:1])+c.name[1:]+" ") && c.name != "onnx" {
				t.Errorf("help of %s does not start its description with its name:\n%s", c.name, first)
			}
			for _, f := range wantFlags[c.name] {
				if !strings.Contains(first, "\n  -"+f+" ") && !strings.Contains(first, "\n  -"+f+"\n") {
					t.Errorf("help of %s lacks flag -%s:\n%s", c.name, f, first)
				}
			}
			// Every flag shown is in the usage lines too: they agree.
			usage := strings.Join(c.usage, " ")
			for _, f := range flagNames(first) {
				if !regexp.MustCompile(`\W-?-` + regexp.QuoteMeta(f) + `\b`).MatchString(usage) {
					t.Errorf("flag -%s of %s is missing from its usage %q", f, c.name, usage)
				}
			}
		})
	}
}

// The flags of kernel run and kernel build, whose FlagSets live in package
// kernel and kernelcmd and print to os.Stderr, are all in kernel's help.
func TestKernelHelpNamesEveryFlag(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	kernel.Main([]string{"run", "-h"})
	kernelcmd.Build([]string{"-h"}, io.Discard)
	os.Stderr = saved
	w.Close()
	printed, _ := io.ReadAll(r)
	names := flagNames(string(printed))
	if len(names) < 4 {
		t.Fatalf("found flags %v in:\n%s", names, printed)
	}
	_, help, _ := kiln("help", "kernel")
	for _, f := range names {
		if !strings.Contains(help, "-"+f+" ") {
			t.Errorf("kernel's help lacks -%s:\n%s", f, help)
		}
	}
}

// `kiln help`, `kiln -h` and the like list every command with its summary
// on stdout; plain `kiln` lists them on stderr with status 2, as go does.
func TestHelpListsCommands(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"-help"}, {"--help"}, {}} {
		code, stdout, stderr := kiln(args...)
		list, want := stdout, 0
		if len(args) == 0 {
			list, want = stderr, 2
		}
		if code != want || !strings.Contains(list, "Usage:\n\n\tkiln <command> [arguments]") {
			t.Errorf("kiln %v: status %d, stdout %q, stderr %q", args, code, stdout, stderr)
			continue
		}
		for _, c := range commands {
			if !strings.Contains(list, "\t"+c.name+strings.Repeat(" ", 12-len(c.name))+c.summary+"\n") {
				t.Errorf("kiln %v does not list %s: %s", args, c.name, list)
			}
		}
	}
}

// Each command has a one-line summary and a description.
func TestCommandsAreDocumented(t *testing.T) {
	for _, c := range commands {
		if c.summary == "" || strings.Contains(c.summary, "\n") || strings.HasSuffix(c.summary, ".") || len(c.summary) > 70 ||
			len(c.usage) == 0 || c.doc == "" || c.run == nil {
			t.Errorf("command %s: summary %q, usage %q, doc %d bytes", c.name, c.summary, c.usage, len(c.doc))
		}
	}
}

// An unknown command names itself and points at kiln help, suggesting a
// near name; so does help for one.
func TestUnknownCommand(t *testing.T) {
	for _, c := range []struct {
		args    []string
		says    []string
		without string
	}{
		{[]string{"frobnicate"}, []string{"kiln frobnicate: unknown command\n", "Run 'kiln help' for usage."}, "Did you mean"},
		{[]string{"device"}, []string{"kiln device: unknown command\n", "Did you mean 'kiln devices'?"}, ""},
		{[]string{"insp", "x"}, []string{"Did you mean 'kiln inspect'?"}, ""},
		{[]string{"help", "frobnicate"}, []string{`help: unknown command "frobnicate"`, "demo, devices", "usage: kiln help"}, ""},
		{[]string{"help", "exprot"}, []string{`did you mean "export"?`}, ""},
	} {
		code, stdout, stderr := kiln(c.args...)
		if code != 2 || stdout != "" {
			t.Errorf("kiln %v: status %d, stdout %q", c.args, code, stdout)
		}
		for _, s := range c.says {
			if !strings.Contains(stderr, s) {
				t.Errorf("kiln %v: stderr %q lacks %q", c.args, stderr, s)
			}
		}
		if c.without != "" && strings.Contains(stderr, c.without) {
			t.Errorf("kiln %v: stderr %q says %q", c.args, stderr, c.without)
		}
	}
}

// Bad flags and arguments are usage errors (status 2) that show the
// command's usage; a help flag among other arguments still asks for help.
func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		says string // in stderr, or in stdout for status 0
	}{
		{[]string{"inspect", "--frob", "x"}, 2, "kiln: inspect: flag provided but not defined: -frob\nusage: kiln inspect [--json] FILE_OR_DIRECTORY\nRun 'kiln help inspect' for details.\n"},
		{[]string{"export", "run", "-o"}, 2, "flag needs an argument: -o"},
		{[]string{"export", "run"}, 2, "an output file is required"},
		{[]string{"devices", "extra"}, 2, `devices: unexpected arguments ["extra"]`},
		{[]string{"version", "-json"}, 2, "flag provided but not defined: -json"},
		{[]string{"kernel"}, 2, "usage: kiln kernel run"},
		{[]string{"kernel", "frob"}, 2, `unknown subcommand "frob"`},
		{[]string{"kernel", "install", "--frob"}, 2, "kernel install: flag provided but not defined: -frob"},
		{[]string{"workbench", "dir"}, 2, "the notebooks' directory is --root DIR"},
		{[]string{"help", "a", "b"}, 2, "help: want one command"},
		{[]string{"export", "some-run", "--format", "gguf", "-h"}, 0, "usage: kiln export"},
		{[]string{"inspect", "README.md", "--help"}, 0, "usage: kiln inspect"},
		{[]string{"workbench", "--browser", "-h"}, 0, "usage: kiln workbench"},
		{[]string{"kernel", "install", "--name", "x", "-h"}, 0, "usage: kiln kernel"},
		{[]string{"demo", "-epochs", "3", "--help"}, 0, "usage: kiln demo"},
	} {
		code, stdout, stderr := kiln(c.args...)
		got := stderr
		if c.code == 0 {
			got = stdout
		}
		if code != c.code || !strings.Contains(got, c.says) || strings.Contains(stdout+stderr, "help requested") {
			t.Errorf("kiln %v: status %d (want %d), stdout %q, stderr %q, want %q", c.args, code, c.code, stdout, stderr, c.says)
		}
	}
}

// The package comment (go doc) lists every form of every command, and no
// command that is not one.
func TestDocListsEveryCommand(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src)
	for _, c := range commands {
		for i, u := range c.usage {
			line := "//\tkiln " + u + "\n"
			if strings.HasPrefix(u, " ") {
				line = "//\t" + strings.Repeat(" ", len("kiln  ")+len(c.name)) + strings.TrimLeft(u, " ") + "\n"
			}
			if !strings.Contains(doc, line) {
				t.Errorf("doc.go lacks form %d of %s: %q", i, c.name, line)
			}
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^//\tkiln (\S+)`).FindAllStringSubmatch(doc, -1) {
		if name := strings.TrimPrefix(m[1], "--"); lookup(name) == nil && m[1] != "<command>" {
			t.Errorf("doc.go shows `kiln %s`, which is no command", m[1])
		}
	}
}

// The real binary (this test binary as kiln) exits with the status and
// writes to the stream runMain says.
func TestMainExitStatus(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args           []string
		env            string
		code           int
		stdout, stderr string
	}{
		{[]string{"--help"}, "", 0, "The commands are:", ""},
		{[]string{"--version"}, "", 0, "kiln " + version, ""},
		{[]string{"workbench", "--help"}, "", 0, "usage: kiln workbench", ""},
		{[]string{"frobnicate"}, "", 2, "", "unknown command"},
		{[]string{"devices"}, "KILN_DEVICE=bogus", 1, "cpu", `kiln: devices: tensor: KILN_DEVICE="bogus": `},
	} {
		cmd := exec.Command(self, c.args...)
		cmd.Env = append(os.Environ(), "KILN_TEST_MAIN=1")
		if c.env != "" {
			cmd.Env = append(cmd.Env, c.env)
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if e, ok := err.(*exec.ExitError); ok {
			code = e.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code || !strings.Contains(stdout.String(), c.stdout) || !strings.Contains(stderr.String(), c.stderr) ||
			(c.stderr == "" && stderr.Len() > 0) {
			t.Errorf("kiln %v (%s): status %d (want %d)\nstdout %q\nstderr %q", c.args, c.env, code, c.code, stdout.String(), stderr.String())
		}
	}
}

func TestSuggest(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"device", "devices"}, {"exprot", "export"}, {"insp", "inspect"}, {"vesion", "version"},
		{"x", ""}, {"", ""}, {"frobnicate", ""}, {"de", ""},
	} {
		if got := suggest(c.in); got != c.want {
			t.Errorf("suggest(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
