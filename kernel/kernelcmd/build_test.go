package kernelcmd_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/kernel/jupyter"
	"github.com/kiln-ml/kiln/kernel/kernelcmd"
)

// TestBuildWithGonum builds a kernel with gonum's mat package, installs its
// kernelspec, starts it from kernel.json through the Jupyter client and runs
// cells that use mat.
func TestBuildWithGonum(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a kernel binary (about 30 s); skipped with -short")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "kernel")
	var out bytes.Buffer
	if err := kernelcmd.Build([]string{"--with", "gonum.org/v1/gonum/mat", "-o", bin, "--install", "--prefix", dir, "--name", "kiln-gonum"}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	spec, err := jupyter.ReadKernelSpec(filepath.Join(dir, "share", "jupyter", "kernels", "kiln-gonum"))
	if err != nil {
		t.Fatal(err)
	}
	if spec.Argv[0] != bin || !strings.Contains(spec.DisplayName, "gonum.org/v1/gonum/mat") {
		t.Fatalf("kernelspec %+v", spec)
	}
	p, err := jupyter.StartKernel(jupyter.StartOptions{Spec: spec, Name: "kiln-gonum"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := p.Connect(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	result := func(code string) string {
		t.Helper()
		var got strings.Builder
		rep, err := c.Execute(ctx, jupyter.ExecuteRequest{Code: code}, &jupyter.ExecuteHandlers{Output: func(m *jupyter.Message) {
			var content map[string]any
			m.Decode(&content)
			if data, ok := content["data"].(map[string]any); ok {
				got.WriteString(data["text/plain"].(string))
			}
			if text, ok := content["text"].(string); ok {
				got.WriteString(text)
			}
		}})
		if err != nil || rep.Status != "ok" {
			t.Fatalf("%s: %v %+v", code, err, rep.ErrorContent)
		}
		return got.String()
	}
	result(`import "gonum.org/v1/gonum/mat"`)
	if got := result("a := mat.NewDense(2, 2, []float64{1, 2, 3, 4})\nmat.Det(a)"); strings.TrimSpace(got) != "-2" {
		t.Errorf("det = %q, want -2", got)
	}
	if got := result("var b mat.Dense\nb.Mul(a, a)\nb.At(1, 0)"); strings.TrimSpace(got) != "15" {
		t.Errorf("(a·a)[1,0] = %q, want 15", got)
	}
	comp, err := c.Complete(ctx, "mat.NewDe", 9)
	if err != nil || !strings.Contains(strings.Join(comp.Matches, " "), "NewDense") {
		t.Errorf("completion of mat.NewDe: %v %v", comp.Matches, err)
	}
}

func TestBuildRefusesBadSpecs(t *testing.T) {
	for _, args := range [][]string{{}, {"--with", "x; rm -rf /"}, {"--with", "gonum.org/v1/gonum@/mat"}} {
		if err := kernelcmd.Build(args, &bytes.Buffer{}); err == nil {
			t.Errorf("kernel build %v: no error", args)
		}
	}
}
