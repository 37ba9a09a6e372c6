package kerneltest_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// notebookCheck is one value a notebook must show: Pattern must match the
// text of some code cell's outputs (stream text, and the text/plain of
// results and displays, joined), and Check, if set, must accept the match
// (its submatches at index 1 and up).
type notebookCheck struct {
	Name    string
	Pattern *regexp.Regexp
	Check   func(m []string) error
}

// notebookChecks lists, per notebook file name, what it must show beyond
// running without errors (which every notebook in notebooks/ must).
var notebookChecks = map[string][]notebookCheck{
	"01-tensors.ipynb": {
		{Name: "devices table", Pattern: regexp.MustCompile(`(?m)^DEVICE\s+NAME\s+VENDOR\s+MEMORY`)},
		{Name: "default device reason", Pattern: regexp.MustCompile(`because: (KILN_DEVICE|best detected)`)},
		{Name: "sum of a", Pattern: regexp.MustCompile(`sum of a = (\S+)`), Check: equals(15)},
		{Name: "broadcast row", Pattern: regexp.MustCompile(`\[\[10\., 21\., 32\.\],\s+\[13\., 24\., 35\.\]\]`)},
		{Name: "broadcast column", Pattern: regexp.MustCompile(`\[\[100\., 101\., 102\.\],\s+\[203\., 204\., 205\.\]\]`)},
		{Name: "transposed view", Pattern: regexp.MustCompile(`shape \[3 2\] strides \[1 3\] contiguous false`)},
		{Name: "matmul", Pattern: regexp.MustCompile(`\[\[ 5\., 14\.\],\s+\[14\., 50\.\]\]`)},
		{Name: "batched matmul shape", Pattern: regexp.MustCompile(`(?m)^\[4 2 2\]$`)},
		{Name: "summarised print", Pattern: regexp.MustCompile(`\.\.\.,[\s\S]*shape=\[100 100\]`)},
		{Name: "shape error caught", Pattern: regexp.MustCompile(`tensor\.Matmul: cannot multiply \[2 3\] by \[2 3\][\s\S]*is a shape error: true`)},
		{Name: "gradient check", Pattern: regexp.MustCompile(`gradients match 6x \+ cos\(x\): (\w+)`), Check: isWord("true")},
		{Name: "f(x)", Pattern: regexp.MustCompile(`f\(x\) = (\S+)`), Check: near(16.297251980621986, 1e-9)},
		{Name: "broadcast gradient", Pattern: regexp.MustCompile(`\[\[5\., 5\.\],\s+\[5\., 5\.\],\s+\[5\., 5\.\]\], shape=\[3 2\]`)},
		{Name: "XOR first loss", Pattern: regexp.MustCompile(`first loss (\S+)`), Check: between(0.15, 0.5)},
		{Name: "XOR final loss", Pattern: regexp.MustCompile(`final loss (\S+) after 400 steps`), Check: between(0, 0.02)},
		{Name: "XOR predictions", Pattern: regexp.MustCompile(`XOR predictions: tensor\(\[0\., 1\., 1\., 0\.\]`)},
		{Name: "no storage left by training", Pattern: regexp.MustCompile(`live storages before and after 400 steps: (\d+) -> (\d+)`), Check: notMore},
		{Name: "Release frees", Pattern: regexp.MustCompile(`with a 4 MiB tensor: live ([\d.]+) MiB[\s\S]*after Release:\s+live ([\d.]+) KiB`)},
	},
	"02-mnist-mlp.ipynb": {
		{Name: "module tree", Pattern: regexp.MustCompile(`Param #[\s\S]*101,770|Param #[\s\S]*101770`)},
		{Name: "logged steps", Pattern: regexp.MustCompile(`logged (\d+) training steps`), Check: between(2, 1e6)},
		{Name: "final accuracy", Pattern: regexp.MustCompile(`final accuracy (\S+)`), Check: between(minAccuracy, 1)},
		{Name: "run result", Pattern: regexp.MustCompile(`2 epochs, \d+ steps: completed`)},
	},
	"03-mnist-cnn.ipynb": {
		{Name: "module tree with output shapes", Pattern: regexp.MustCompile(`Output shape[\s\S]*\[2 32 5 5\]`)},
		{Name: "traced graph", Pattern: regexp.MustCompile(`graph: (\d+) ops`), Check: between(8, 100)},
		{Name: "logged steps", Pattern: regexp.MustCompile(`logged (\d+) training steps`), Check: between(2, 1e6)},
		{Name: "final accuracy", Pattern: regexp.MustCompile(`final accuracy (\S+)`), Check: between(minAccuracy, 1)},
		{Name: "confusion matrix", Pattern: regexp.MustCompile(`confusion matrix: \d+ items, accuracy (\S+) \(rows: true class`), Check: between(minAccuracy, 1)},
	},
	"04-checkpoints.ipynb": {
		{Name: "fit", Pattern: regexp.MustCompile(`fit: completed after 1 epoch, (\d+) steps`), Check: between(1, 1e6)},
		{Name: "resume", Pattern: regexp.MustCompile(`resumed run continued: (\w+)`), Check: isWord("true")},
		{Name: "checkpoint loads", Pattern: regexp.MustCompile(`fresh model loaded from the checkpoint matches: (\w+)`), Check: isWord("true")},
		{Name: "safetensors export", Pattern: regexp.MustCompile(`safetensors round trip matches: (\w+)`), Check: isWord("true")},
	},
	"06-data-parallel.ipynb": {
		{Name: "dashboard of the followed run", Pattern: regexp.MustCompile(`following: \S+ · data-parallel, (\d+) ranks`), Check: equals(2)},
		{Name: "two processes", Pattern: regexp.MustCompile(`2 processes under Open MPI`)},
		{Name: "run result", Pattern: regexp.MustCompile(`(?m)^completed after 2 epochs, \d+ steps$`)},
		{Name: "world size", Pattern: regexp.MustCompile(`world size (\d+)`), Check: equals(2)},
		{Name: "logged steps", Pattern: regexp.MustCompile(`logged (\d+) training steps`), Check: between(2, 1e6)},
		{Name: "final accuracy", Pattern: regexp.MustCompile(`final accuracy (\S+)`), Check: between(minAccuracy, 1)},
	},
}

// mpiNotebooks run `kiln demo -np 2` under mpirun: without mpirun they are
// left out (as dist's tests skip), saying so.
var mpiNotebooks = []string{"06-data-parallel.ipynb"}

// dashboardNotebooks train in a cell: their live dashboard is checked (see
// checkDashboard), and the first one's HTML export is opened in Chromium.
var dashboardNotebooks = []string{"02-mnist-mlp.ipynb", "03-mnist-cnn.ipynb", "06-data-parallel.ipynb"}

func equals(want float64) func([]string) error {
	return func(m []string) error {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil || v != want {
			return fmt.Errorf("got %s, want %g", m[1], want)
		}
		return nil
	}
}

// notMore accepts a second number no larger than the first.
func notMore(m []string) error {
	a, err1 := strconv.Atoi(m[1])
	b, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil || b > a {
		return fmt.Errorf("got %s then %s, want no more than %s", m[1], m[2], m[1])
	}
	return nil
}

func near(want, tol float64) func([]string) error {
	return func(m []string) error {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil || v < want-tol || v > want+tol {
			return fmt.Errorf("got %s, want %g ± %g", m[1], want, tol)
		}
		return nil
	}
}

func between(lo, hi float64) func([]string) error {
	return func(m []string) error {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil || v < lo || v > hi {
			return fmt.Errorf("got %s, want a value in [%g, %g]", m[1], lo, hi)
		}
		return nil
	}
}

func isWord(want string) func([]string) error {
	return func(m []string) error {
		if m[1] != want {
			return fmt.Errorf("got %s, want %s", m[1], want)
		}
		return nil
	}
}

// TestNotebooks executes every notebook in notebooks/ with nbconvert on the
// installed kernel and checks the executed copies.
func TestNotebooks(t *testing.T) {
	requirePython(t, "python3-nbclient python3-nbformat jupyter-nbconvert", "nbconvert", "nbclient", "nbformat")
	t.Parallel()
	k := kernel(t)
	notebooks, err := filepath.Glob(filepath.Join(k.root, "notebooks", "*.ipynb"))
	if err != nil || len(notebooks) == 0 {
		t.Fatalf("no notebooks in %s: %v", filepath.Join(k.root, "notebooks"), err)
	}
	for name := range notebookChecks {
		if !slices.Contains(notebooks, filepath.Join(k.root, "notebooks", name)) {
			t.Errorf("notebookChecks names %s, which is not in notebooks/", name)
		}
	}
	if _, err := exec.LookPath("mpirun"); err != nil {
		notebooks = slices.DeleteFunc(notebooks, func(p string) bool {
			if slices.Contains(mpiNotebooks, filepath.Base(p)) {
				t.Logf("%s left out: mpirun not on PATH (install Debian's openmpi-bin)", filepath.Base(p))
				return true
			}
			return false
		})
	}
	// The notebooks run as copies in a folder of their own: the runs they
	// keep beside themselves (runs/) never land in the repository.
	workDir := t.TempDir()
	for i, src := range notebooks {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		notebooks[i] = filepath.Join(workDir, filepath.Base(src))
		if err := os.WriteFile(notebooks[i], b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outDir := t.TempDir()
	// `jupyter nbconvert` (python3 -m nbconvert runs the same application
	// without depending on which jupyter is first on PATH). It carries on
	// past failing cells (--allow-errors) so that every failure is reported
	// below, with the cell that failed.
	//
	// kiln_record.py swaps nbconvert's ExecutePreprocessor for a subclass
	// that also records every display message in recordDir.
	recordDir := t.TempDir()
	args := []string{"-m", "nbconvert", "--config", filepath.Join(k.root, "kernel", "testdata", "kiln_record.py"),
		"--to", "notebook", "--execute", "--allow-errors",
		"--ExecutePreprocessor.kernel_name=" + kernelName, "--ExecutePreprocessor.timeout=" + strconv.Itoa(int(notebookTimeout.Seconds())),
		"--RecordingExecutePreprocessor.record_dir=" + recordDir,
		"--output-dir", outDir}
	out, err := k.run(t, workDir, notebookTimeout+time.Minute, debianPython, append(args, notebooks...)...)
	if err != nil {
		t.Fatalf("nbconvert failed: %v\n%s", err, out)
	}
	for _, src := range notebooks {
		name := filepath.Base(src)
		t.Run(name, func(t *testing.T) {
			nb, err := readNotebook(filepath.Join(outDir, name))
			if err != nil {
				t.Fatalf("executed copy: %v\nnbconvert said:\n%s", err, out)
			}
			if ks := nb.Metadata.Kernelspec; ks.Name != kernelName || ks.Language != "go" {
				t.Errorf("kernelspec in the notebook's metadata is %+v, want name %q, language go", ks, kernelName)
			}
			var texts []string
			for i, c := range nb.Cells {
				if c.CellType != "code" {
					continue
				}
				where := fmt.Sprintf("cell %d (%s)", i, firstLine(c.Source))
				if c.ExecutionCount == nil {
					t.Errorf("%s did not run", where)
				}
				raises := slices.Contains(c.Metadata.Tags, "raises-exception")
				failed := false
				for _, o := range c.Outputs {
					if o.OutputType == "error" {
						failed = true
						if !raises {
							t.Errorf("%s failed: %s: %s\n%s", where, o.Ename, o.Evalue, strings.Join(o.Traceback, "\n"))
						}
					}
				}
				if raises && !failed {
					t.Errorf("%s is tagged raises-exception but did not fail", where)
				}
				texts = append(texts, c.outputText())
			}
			for _, chk := range notebookChecks[name] {
				found := false
				for _, text := range texts {
					m := chk.Pattern.FindStringSubmatch(text)
					if m == nil {
						continue
					}
					found = true
					if chk.Check != nil {
						if err := chk.Check(m); err != nil {
							t.Errorf("%s: %v", chk.Name, err)
						}
					}
					break
				}
				if !found {
					t.Errorf("%s: no cell output matches %s", chk.Name, chk.Pattern)
				}
			}
			if slices.Contains(dashboardNotebooks, name) {
				logged := -1
				for _, text := range texts {
					if m := regexp.MustCompile(`logged (\d+) training steps`).FindStringSubmatch(text); m != nil {
						logged, _ = strconv.Atoi(m[1])
					}
				}
				checkDashboard(t, filepath.Join(recordDir, strings.TrimSuffix(name, ".ipynb")+".jsonl"), logged)
				if name == dashboardNotebooks[0] {
					checkHTMLExport(t, k, filepath.Join(outDir, name), logged)
				}
			}
		})
	}
}

// notebook is the part of nbformat 4 the test reads.
type notebook struct {
	Metadata struct {
		Kernelspec struct {
			Name     string `json:"name"`
			Language string `json:"language"`
		} `json:"kernelspec"`
	} `json:"metadata"`
	Cells []cell `json:"cells"`
}

type cell struct {
	CellType       string    `json:"cell_type"`
	Source         multiline `json:"source"`
	ExecutionCount *int      `json:"execution_count"`
	Metadata       struct {
		Tags []string `json:"tags"`
	} `json:"metadata"`
	Outputs []struct {
		OutputType string               `json:"output_type"`
		Text       multiline            `json:"text"`
		Data       map[string]multiline `json:"data"`
		Ename      string               `json:"ename"`
		Evalue     string               `json:"evalue"`
		Traceback  []string             `json:"traceback"`
	} `json:"outputs"`
}

// outputText joins what a cell printed and the text/plain form of what it
// showed.
func (c cell) outputText() string {
	var b strings.Builder
	for _, o := range c.Outputs {
		switch o.OutputType {
		case "stream":
			b.WriteString(string(o.Text))
		case "execute_result", "display_data":
			b.WriteString(string(o.Data["text/plain"]))
			b.WriteString("\n")
		}
	}
	return b.String()
}

// multiline is nbformat's text: a string or a list of lines. Other JSON
// values (a mime bundle's application/json) read as empty.
type multiline string

func (m *multiline) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*m = multiline(s)
		return nil
	}
	var lines []string
	if err := json.Unmarshal(b, &lines); err == nil {
		*m = multiline(strings.Join(lines, ""))
		return nil
	}
	*m = ""
	return nil
}

func readNotebook(path string) (*notebook, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var nb notebook
	if err := json.Unmarshal(b, &nb); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &nb, nil
}

func firstLine(s multiline) string {
	line, _, _ := strings.Cut(string(s), "\n")
	return line
}
