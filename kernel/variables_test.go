package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/kernel"
	"github.com/kiln-ml/kiln/kernel/jupyter"
)

// serveKernel serves a session on a fresh connection file and returns the
// file and a client of it.
func serveKernel(t *testing.T) (string, *jupyter.KernelClient) {
	t.Helper()
	info, err := jupyter.NewConnectionInfo("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "kernel-vars.json")
	if err := info.WriteFile(file); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- kernel.Serve(ctx, file, kernel.Options{}) }()
	dial, dialCancel := context.WithTimeout(ctx, 30*time.Second)
	defer dialCancel()
	c, err := jupyter.DialFile(dial, file, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if _, err := c.WaitForReady(dial); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		cancel()
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return")
		}
	})
	return file, c
}

func execute(t *testing.T, c *jupyter.KernelClient, code string) jupyter.ExecuteReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := c.Execute(ctx, jupyter.ExecuteRequest{Code: code, StoreHistory: true}, nil)
	if err != nil {
		t.Fatalf("execute %q: %v", code, err)
	}
	if rep.Status != "ok" {
		t.Fatalf("execute %q: %s: %s: %s", code, rep.Status, rep.Ename, rep.Evalue)
	}
	return rep
}

// variablesCell defines 100 tensors t00…t99 of shape [i+1, 3], a model, a
// slice, a map and a value whose String method panics.
func variablesCell() string {
	var b strings.Builder
	b.WriteString("dev := tensor.CPU()\n")
	for i := range 100 {
		fmt.Fprintf(&b, "t%02d := tensor.Full(dev, %d, %d, 3)\n", i, i, i+1)
	}
	b.WriteString(`net := nn.NewLinear(dev, 4, 2)
xs := []int{1, 2, 3}
ages := map[string]int{"ada": 36, "alan": 41}
type bad struct{ p *int }
func (b bad) String() string { return fmt.Sprint(*b.p) }
oops := bad{}
`)
	return b.String()
}

func listVariables(t *testing.T, file string, timeout time.Duration) (kernel.VariablesSnapshot, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	rep, err := kernel.RequestVariables(ctx, file, kernel.VariablesRequest{Op: "list"})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("list variables: %v (after %v)", err, took)
	}
	return *rep.Snapshot, took
}

// TestVariablesWhileCellRuns checks that the variables socket lists 100
// tensors with their summaries within 500 ms while a cell sleeps 5 s,
// marked as of the last finished cell, that inspecting says busy at once
// instead of waiting, and that both work live once the kernel is idle.
func TestVariablesWhileCellRuns(t *testing.T) {
	file, c := serveKernel(t)
	// A front end says it watches when it connects (the workbench does):
	// from then on the kernel keeps a snapshot.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if _, err := kernel.RequestVariables(ctx, file, kernel.VariablesRequest{Op: "watch"}); err != nil {
		t.Fatal(err)
	}
	cancel()
	first := execute(t, c, variablesCell())

	slept := make(chan jupyter.ExecuteReply, 1)
	go func() {
		rep, _ := c.Execute(context.Background(), jupyter.ExecuteRequest{Code: "time.Sleep(5 * time.Second)", StoreHistory: true}, nil)
		slept <- rep
	}()
	// Wait until the sleeping cell runs.
	deadline := time.Now().Add(4 * time.Second)
	var snap kernel.VariablesSnapshot
	for {
		snap, _ = listVariables(t, file, 2*time.Second)
		if snap.Busy || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !snap.Busy {
		t.Fatal("the kernel never reported the sleeping cell as running")
	}
	snap, took := listVariables(t, file, 2*time.Second)
	if took > 500*time.Millisecond {
		t.Errorf("listing while a cell runs took %v, want under 500 ms", took)
	}
	if !snap.Busy || snap.Live || snap.Cell != first.ExecutionCount || snap.Running != first.ExecutionCount+1 {
		t.Errorf("snapshot: busy %v live %v cell %d running %d; want busy, not live, as of cell %d with cell %d running",
			snap.Busy, snap.Live, snap.Cell, snap.Running, first.ExecutionCount, first.ExecutionCount+1)
	}
	byName := map[string]kernel.VariableInfo{}
	tensors := 0
	for _, v := range snap.Variables {
		byName[v.Name] = v
		if v.Kind == "tensor" {
			tensors++
		}
	}
	if tensors != 100 {
		t.Errorf("%d tensors listed, want 100", tensors)
	}
	t42 := byName["t42"]
	if fmt.Sprint(t42.Shape) != "[43 3]" || t42.DType != "float32" || t42.Device != "cpu" || !strings.HasPrefix(t42.Value, "[43 3] float32 on cpu") || !strings.Contains(t42.Value, ": 42, 42, 42") {
		t.Errorf("t42 = %+v, want shape [43 3], float32 on cpu, values 42, 42, 42", t42)
	}
	if n := byName["net"]; n.Kind != "module" || n.Params != 10 || n.Type != "*nn.Linear" {
		t.Errorf("net = %+v, want a *nn.Linear module of 10 parameters", n)
	}
	if xs := byName["xs"]; xs.Kind != "slice" || xs.Len == nil || *xs.Len != 3 || xs.Value != "len 3" {
		t.Errorf("xs = %+v, want a slice of len 3", xs)
	}
	if m := byName["ages"]; m.Kind != "map" || m.Len == nil || *m.Len != 2 {
		t.Errorf("ages = %+v, want a map of len 2", m)
	}
	if o, ok := byName["oops"]; !ok || strings.Contains(o.Value, "0x") {
		t.Errorf("oops = %+v, want listed without a raw dump", o)
	}

	// Inspecting needs the interpreter: busy, at once.
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
	start := time.Now()
	_, err := kernel.RequestVariables(ctx, file, kernel.VariablesRequest{Op: "inspect", Name: "t42"})
	cancel()
	if !errors.Is(err, kernel.ErrBusy) || time.Since(start) > 500*time.Millisecond {
		t.Errorf("inspect while busy: %v after %v; want ErrBusy at once", err, time.Since(start))
	} else if !strings.Contains(err.Error(), fmt.Sprintf("cell %d", first.ExecutionCount+1)) {
		t.Errorf("inspect while busy: %v; want the running cell named", err)
	}

	// Interrupting ends the sleep early; then the listing is live.
	ictx, icancel := context.WithTimeout(context.Background(), 10*time.Second)
	if err := c.Interrupt(ictx); err != nil {
		t.Fatal(err)
	}
	icancel()
	select {
	case <-slept:
	case <-time.After(10 * time.Second):
		t.Fatal("the sleeping cell did not end after an interrupt")
	}
	// The interrupted cell's reply can come before its evaluation has
	// unwound: until it has, the cell lingers and the kernel is busy
	// (Session.idle), so poll for idle instead of taking one snapshot.
	snap, _ = listVariables(t, file, 5*time.Second)
	for deadline := time.Now().Add(5 * time.Second); snap.Busy && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		snap, _ = listVariables(t, file, 5*time.Second)
	}
	if snap.Busy || !snap.Live || snap.Cell != first.ExecutionCount+1 {
		t.Errorf("idle snapshot: busy %v live %v cell %d; want live as of cell %d", snap.Busy, snap.Live, snap.Cell, first.ExecutionCount+1)
	}

	inspect := func(name string) kernel.VariableDetail {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rep, err := kernel.RequestVariables(ctx, file, kernel.VariablesRequest{Op: "inspect", Name: name})
		if err != nil {
			t.Fatalf("inspect %s: %v", name, err)
		}
		return *rep.Detail
	}
	if d := inspect("t01"); !strings.Contains(d.Values, "1.") || !strings.Contains(d.Values, "shape=[2 3]") {
		t.Errorf("t01's values = %q, want its ones and shape", d.Values)
	}
	d := inspect("net")
	if len(d.Parameters) != 2 || d.Parameters[0].Count+d.Parameters[1].Count != 10 {
		t.Errorf("net's parameters = %+v, want weight and bias, 10 in all", d.Parameters)
	}
	if d := inspect("ages"); len(d.Elements) != 2 || d.Elements[0].Name != "[ada]" || d.Elements[0].Value != "36" {
		t.Errorf("ages' elements = %+v, want [ada] 36 first", d.Elements)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := kernel.RequestVariables(ctx, file, kernel.VariablesRequest{Op: "inspect", Name: "nothere"}); err == nil || !strings.Contains(err.Error(), "no variable named nothere") {
		t.Errorf("inspect nothere: %v, want no variable named nothere", err)
	}
}

// TestVariablesSocketRefusesWrongKey checks that a request must carry the
// connection file's key.
func TestVariablesSocketRefusesWrongKey(t *testing.T) {
	file, _ := serveKernel(t)
	c, err := net.DialTimeout("unix", kernel.VariablesSocket(file), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintln(c, `{"key": "not-the-key", "op": "list"}`)
	var rep kernel.VariablesReply
	if err := json.NewDecoder(c).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	if rep.Snapshot != nil || !strings.Contains(rep.Error, "wrong key") {
		t.Errorf("a request with another key got %+v, want refused", rep)
	}
}

// TestVariablesReadValuesOnlyFromHost checks that a listing shows the
// values of tensors in host memory only (a device's would wait for it),
// while inspecting one reads them; and that a failing String method does
// not break the list.
func TestVariablesReadValuesOnlyFromHost(t *testing.T) {
	s, err := kernel.New(kernel.Options{MemoryLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	code := `dev, _ := tensor.ParseDevice("strict")
onDevice := tensor.Full(dev, 2, 2, 3)
onHost := tensor.Full(tensor.CPU(), 5, 2, 3)
type bad struct{ p *int }
func (b bad) String() string { return fmt.Sprint(*b.p) }
oops := bad{}
`
	if _, err := s.Execute(context.Background(), code, nil); err != nil {
		t.Fatal(err)
	}
	vars := map[string]kernel.VariableInfo{}
	for _, v := range s.Variables().Variables {
		vars[v.Name] = v
	}
	if v := vars["onDevice"]; v.Device != "strict" || strings.Contains(v.Value, ": 2") {
		t.Errorf("onDevice = %+v, want on strict without values", v)
	}
	if v := vars["onHost"]; !strings.HasSuffix(v.Value, ": 5, 5, 5, …") {
		t.Errorf("onHost = %+v, want its first values", v)
	}
	if v, ok := vars["oops"]; !ok || v.Type == "" {
		t.Errorf("oops = %+v, want listed", v)
	}
	d, err := s.InspectVariable("onDevice")
	if err != nil || !strings.Contains(d.Values, "2.") {
		t.Errorf("inspect onDevice: %q, %v; want its values", d.Values, err)
	}
}
