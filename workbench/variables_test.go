package workbench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestVariablesWhileTheCellRuns checks that variables.list answers at once
// while a cell runs, from the kernel's snapshot after the last cell (busy,
// with the running cell's number), that variables.inspect says the kernel
// is busy instead of waiting, and that both work once the cell ends.
func TestVariablesWhileTheCellRuns(t *testing.T) {
	srv, _, _ := newServer(t)
	call(t, srv, "kernel.execute", map[string]any{"code": "w := tensor.Full(tensor.CPU(), 7, 3, 4)\nm := nn.NewLinear(tensor.CPU(), 4, 3)\nxs := []int{1, 2}"})
	done := make(chan error, 1)
	go func() {
		_, err := callErr(srv, "kernel.execute", map[string]any{"code": "time.Sleep(4 * time.Second)"})
		done <- err
	}()
	// Wait for the sleeping cell to run, then list.
	var list map[string]any
	for deadline := time.Now().Add(3 * time.Second); ; {
		list = call(t, srv, "variables.list", nil).(map[string]any)
		if list["busy"] == true || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if list["busy"] != true {
		t.Fatalf("variables.list never reported the running cell: %v", list)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	start := time.Now()
	res, err := srv.Call(ctx, "variables.list", nil)
	took := time.Since(start)
	cancel()
	if err != nil || took > 500*time.Millisecond {
		t.Fatalf("variables.list during a running cell: %v after %v, want an answer within 500 ms", err, took)
	}
	b, _ := json.Marshal(res)
	text := string(b)
	for _, want := range []string{`"busy":true`, `"name":"w"`, `"shape":[3,4]`, `"value":"[3 4] float32 on cpu, 48 B: 7, 7, 7, 7, …"`, `"name":"m"`, `"params":15`, `"name":"xs"`, `"len":2`} {
		if !strings.Contains(text, want) {
			t.Errorf("variables.list while busy lacks %s: %s", want, text)
		}
	}
	if _, err := callErr(srv, "variables.inspect", map[string]any{"name": "w"}); err == nil || !strings.Contains(err.Error(), "busy") {
		t.Errorf("variables.inspect while busy: %v, want a busy error", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	list = call(t, srv, "variables.list", nil).(map[string]any)
	if list["busy"] != false || list["live"] != true {
		t.Errorf("variables.list after the cell: busy %v live %v, want live", list["busy"], list["live"])
	}
	d := call(t, srv, "variables.inspect", map[string]any{"name": "m"}).(map[string]any)
	if ps, _ := d["parameters"].([]any); len(ps) != 2 {
		t.Errorf("m's parameters: %v, want weight and bias", d["parameters"])
	}
	d = call(t, srv, "variables.inspect", map[string]any{"name": "w"}).(map[string]any)
	if v := fmt.Sprint(d["values"]); !strings.Contains(v, "7.") {
		t.Errorf("w's values: %q", v)
	}
	if _, err := callErr(srv, "variables.inspect", map[string]any{"name": "w)\nos.Exit(1"}); err == nil {
		t.Error("a variable name with code in it was accepted")
	}
}
