package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The README and the user guides it links to (docs/*.md) say what Kiln
// does and show commands. TestReadmeCommands runs every command of their
// shell blocks that can run in a test, and says for each one that cannot
// why not; TestReadmeMentions checks every `kiln …` and `make …` named in
// their text against the real commands, flags and targets; TestReadmeLinks
// checks that every relative link leads to a file of the repository.

// docRepoRoot is the repository's root, from cmd/kiln.
const docRepoRoot = "../.."

// userDocs returns the README and every user guide under docs/ (all
// docs/*.md but ARCHITECTURE.md, for contributors, and RELIABILITY.md, a
// table of faults that quotes error messages and internal commands), by
// path relative to the repository root.
func userDocs(t *testing.T) map[string]string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(docRepoRoot, "docs", "*.md"))
	paths = append(paths, filepath.Join(docRepoRoot, "README.md"))
	docs := map[string]string{}
	for _, p := range paths {
		if b := filepath.Base(p); b == "ARCHITECTURE.md" || b == "RELIABILITY.md" {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(docRepoRoot, p)
		docs[filepath.ToSlash(rel)] = string(b)
	}
	return docs
}

// shellCommands returns the commands of md's shell code blocks (```sh,
// ```bash or ```console): one per line, comments removed, "a && b" split
// into a and b.
func shellCommands(md string) []string {
	var cmds []string
	in := false
	for _, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case !in && (trimmed == "```sh" || trimmed == "```bash" || trimmed == "```console"):
			in = true
			continue
		case in && strings.HasPrefix(trimmed, "```"):
			in = false
			continue
		case !in:
			continue
		}
		if i := strings.Index(trimmed, " #"); i >= 0 {
			trimmed = trimmed[:i]
		}
		trimmed = strings.TrimPrefix(strings.TrimSpace(trimmed), "$ ")
		for _, c := range strings.Split(trimmed, "&&") {
			if c = strings.TrimSpace(c); c != "" && !strings.HasPrefix(c, "#") {
				cmds = append(cmds, c)
			}
		}
	}
	return cmds
}

// readmeCommands says, for every command of the docs' shell blocks, how
// TestReadmeCommands checks it: "run" runs it (kiln as this test binary,
// in a scratch home) and wants exit status 0; "serve" starts it, wants the
// URL it promises, then stops it with SIGINT; anything else is why it is
// not run here, and the test that covers it where there is one. A command
// the docs gain must be added here, and one they lose removed.
var readmeCommands = map[string]string{
	"make run":                       "serves the workbench until stopped: its browser mode is `./bin/kiln workbench --browser`, served below",
	"make demo":                      "trains two epochs of MNIST (minutes): `go test -tags long -run TestTrainMNISTDemo ./cmd/kiln` runs it",
	"make test":                      "every test of the repository, about 20 minutes",
	"make build":                     "installs Debian packages and builds the UI; the test runs this same code as kiln in its place",
	"./bin/kiln kernel install":      "run",
	"jupyter lab":                    "an interactive server (the kernel's Jupyter tests drive it through jupyter_client)",
	"./bin/kiln workbench --browser": "serve",
	"kiln help":                      "run",
	"kiln help inspect":              "run",
	"kiln version":                   "run",
	"kiln devices":                   "run",
	"kiln inspect onnx/testdata/models/products_op13.onnx": "run",
	"kiln demo -xor":                           "run",
	"kiln demo -np 2":                          "trains two epochs of MNIST on two processes under mpirun (minutes; TestDemoDataParallel covers -np)",
	"kiln launch -n 4 ./train -epochs 10":      "./train stands for the reader's own program",
	"kiln launch -n 8 --hosts a:4,b:4 ./train": "./train stands for the reader's own program, on machines a and b",
	"mpirun -np 4 ./train":                     "./train stands for the reader's own program (Open MPI's own command)",
	"srun -n 4 ./train":                        "./train stands for the reader's own program (SLURM's own command)",
}

// kilnArgs returns the arguments of a command that runs kiln, and false for
// any other command.
func kilnArgs(cmd string) ([]string, bool) {
	f := strings.Fields(cmd)
	if len(f) == 0 || f[0] != "kiln" && f[0] != "./bin/kiln" {
		return nil, false
	}
	return f[1:], true
}

// scratchEnv is the environment of a command run by the docs' tests: this
// test binary standing in for kiln, and a scratch home, Jupyter data
// folder and run registry, so that nothing of the user's is touched.
func scratchEnv(t *testing.T) []string {
	return scratchEnvIn(t.TempDir())
}

// scratchEnvIn is scratchEnv with its home at home.
func scratchEnvIn(home string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "KILN_DEVICE=") })
	return append(env, "KILN_TEST_MAIN=1", "HOME="+home, "XDG_DATA_HOME="+filepath.Join(home, "data"),
		"JUPYTER_DATA_DIR="+filepath.Join(home, "jupyter"), "KILN_RUN_REGISTRY="+filepath.Join(home, "registry"),
		"XDG_STATE_HOME="+filepath.Join(home, "state"), "DISPLAY=", "WAYLAND_DISPLAY=")
}

func TestReadmeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs kiln's commands, one of them the workbench with a kernel")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for doc, md := range userDocs(t) {
		for _, c := range shellCommands(md) {
			how, ok := readmeCommands[c]
			if !ok {
				t.Errorf("%s shows the command %q, which readmeCommands does not know: add how the test checks it (or why it cannot)", doc, c)
				continue
			}
			if seen[c] {
				continue // shown in two docs: run once
			}
			seen[c] = true
			args, isKiln := kilnArgs(c)
			if (how == "run" || how == "serve") && !isKiln {
				t.Errorf("readmeCommands: %q is not a kiln command and cannot run here", c)
				continue
			}
			switch how {
			case "run":
				t.Run(c, func(t *testing.T) {
					home := t.TempDir()
					cmd := exec.Command(self, args...)
					cmd.Dir, cmd.Env = docRepoRoot, scratchEnvIn(home) // the docs' paths are the repository's
					out, err := cmd.CombinedOutput()
					if err != nil {
						t.Fatalf("%s (in %s): %v\n%s", c, doc, err, out)
					}
					if slices.Equal(args, []string{"kernel", "install"}) { // what it says it did
						if _, err := os.Stat(filepath.Join(home, "jupyter", "kernels", "kiln", "kernel.json")); err != nil {
							t.Errorf("%s wrote no kernelspec kiln for the user: %v", c, err)
						}
					}
					t.Logf("%s:\n%s", c, docFirstLines(string(out), 6))
				})
			case "serve":
				t.Run(c, func(t *testing.T) { docServe(t, self, args) })
			default:
				t.Logf("not run: %s: %s", c, how)
			}
		}
	}
	for c := range readmeCommands {
		if !seen[c] {
			t.Errorf("readmeCommands lists %q, which no user doc shows any more: remove it", c)
		}
	}
}

// docServe runs kiln with args (a server), waits for the URL it
// prints, then interrupts it and wants it to exit cleanly.
func docServe(t *testing.T, self string, args []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Dir, cmd.Env = t.TempDir(), scratchEnv(t)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its kernel goes with it
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	url := regexp.MustCompile(`http://127\.0\.0\.1:\d+/\?token=[0-9a-f]+`)
	found := make(chan string, 1)
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if u := url.FindString(sc.Text()); u != "" {
				select {
				case found <- u:
				default:
				}
			}
		}
		close(found)
	}()
	select {
	case u, ok := <-found:
		if !ok {
			t.Fatalf("kiln %s exited without printing http://127.0.0.1:PORT/?token=…", strings.Join(args, " "))
		}
		t.Logf("kiln %s printed %s", strings.Join(args, " "), u)
	case <-ctx.Done():
		t.Fatalf("kiln %s printed no URL within 3 minutes", strings.Join(args, " "))
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Errorf("kiln %s after SIGINT: %v", strings.Join(args, " "), err)
	}
}

// docFirstLines returns s's first n lines.
func docFirstLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = append(lines[:n], "…\n")
	}
	return strings.Join(lines, "")
}

// TestReadmeMentions checks each `kiln …` in the docs' text and shell
// blocks: its command exists and every flag it shows is one of the
// command's (as `kiln help COMMAND` lists them); and each `make TARGET`:
// the Makefile (or a file it includes) defines the target.
func TestReadmeMentions(t *testing.T) {
	targets := makeTargets(t)
	kilnSpan := regexp.MustCompile("`((?:\\./bin/)?kiln [^`]+)`")
	makeSpan := regexp.MustCompile("`make ([a-z][a-z0-9-]*)")
	for doc, md := range userDocs(t) {
		mentions := shellCommands(md)
		for _, m := range kilnSpan.FindAllStringSubmatch(md, -1) {
			mentions = append(mentions, m[1])
		}
		for _, c := range mentions {
			if f := strings.Fields(c); len(f) > 1 && f[0] == "make" {
				if !targets[f[1]] {
					t.Errorf("%s: %q: the Makefile has no target %s", doc, c, f[1])
				}
				continue
			}
			args, ok := kilnArgs(c)
			if !ok || len(args) == 0 {
				continue
			}
			code, help, stderr := kiln("help", args[0])
			if code != 0 {
				t.Errorf("%s: %q: kiln has no command %s: %s", doc, c, args[0], stderr)
				continue
			}
			for _, a := range args[1:] {
				if args[0] == "launch" && !strings.HasPrefix(a, "-") && strings.Contains(a, "/") {
					break // the program: the flags after it are its own
				}
				a = strings.Trim(a, "[]()|,")
				for _, part := range strings.Split(a, "|") { // [--user|--prefix DIR]
					name, _, _ := strings.Cut(part, "=")
					if !strings.HasPrefix(name, "-") || name == "-" {
						continue
					}
					bare := strings.TrimLeft(name, "-")
					if !regexp.MustCompile(`(?m)(^|[\s\[|,])--?` + regexp.QuoteMeta(bare) + `\b`).MatchString(help) {
						t.Errorf("%s: %q: kiln %s has no flag %s (kiln help %s)", doc, c, args[0], name, args[0])
					}
				}
			}
		}
		for _, m := range makeSpan.FindAllStringSubmatch(md, -1) {
			if !targets[m[1]] {
				t.Errorf("%s: `make %s`: the Makefile has no such target", doc, m[1])
			}
		}
	}
}

// TestReadmeListsEveryCommand: the README's command-line section and its
// layout table name every command kiln has.
func TestReadmeListsEveryCommand(t *testing.T) {
	readme := userDocs(t)["README.md"]
	_, cli, _ := strings.Cut(readme, "## The command line")
	cli, _, _ = strings.Cut(cli, "\n## ")
	_, layout, _ := strings.Cut(readme, "| `cmd/kiln` |")
	layout, _, _ = strings.Cut(layout, "\n")
	for _, name := range commandNames() {
		if !strings.Contains(cli, "`"+name+"`") {
			t.Errorf("README.md's command-line section does not name the command %s", name)
		}
		if !strings.Contains(layout, name) {
			t.Errorf("README.md's layout table does not name the command %s in cmd/kiln's row", name)
		}
	}
}

// makeTargets returns the targets the Makefile and the files it includes
// define.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	files := []string{filepath.Join(docRepoRoot, "Makefile")}
	targets := map[string]bool{}
	rule := regexp.MustCompile(`(?m)^([a-z][a-z0-9 -]*):([^=]|$)`)
	include := regexp.MustCompile(`(?m)^include\s+(.+)$`)
	for i := 0; i < len(files); i++ {
		b, err := os.ReadFile(files[i])
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range rule.FindAllStringSubmatch(string(b), -1) {
			for _, name := range strings.Fields(m[1]) {
				targets[name] = true
			}
		}
		for _, m := range include.FindAllStringSubmatch(string(b), -1) {
			for _, f := range strings.Fields(m[1]) {
				files = append(files, filepath.Join(docRepoRoot, f))
			}
		}
	}
	if !targets["test"] || !targets["run"] {
		t.Fatalf("the Makefile's targets were not found: %v", slices.Sorted(docKeys(targets)))
	}
	return targets
}

func docKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestReadmeLinks checks that every relative link and image of the docs
// leads to a file of the repository (links to other sites are not
// fetched), and that the README links every user guide.
func TestReadmeLinks(t *testing.T) {
	docs := userDocs(t)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for doc, md := range docs {
		for _, m := range link.FindAllStringSubmatch(md, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			p := filepath.Join(docRepoRoot, filepath.Dir(doc), filepath.FromSlash(target))
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s links to %s, which is not in the repository: %v", doc, m[1], err)
			}
			if rel, err := filepath.Rel(docRepoRoot, p); err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s links to %s, outside the repository", doc, m[1])
			}
		}
	}
	for doc := range docs {
		if doc == "README.md" || !strings.HasPrefix(doc, "docs/") {
			continue
		}
		if !strings.Contains(docs["README.md"], "]("+doc+")") {
			t.Errorf("README.md does not link the guide %s", doc)
		}
	}
}
