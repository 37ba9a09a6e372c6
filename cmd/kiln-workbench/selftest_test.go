package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// goodReport is what a page that passes sends for nonce "n1" and unknown
// method "selftest.x".
func goodReport() map[string]any {
	return map[string]any{
		"info":         map[string]any{"version": "0.1.0-dev", "kernel": map[string]any{"status": "idle"}},
		"devices":      map[string]any{"devices": []any{map[string]any{"name": "cpu", "kind": "cpu"}}},
		"unknownError": `workbench: unknown method "selftest.x"`,
		"nonce":        "n1",
		"ui":           "kernel-status:idle",
		"errors":       []string{},
	}
}

func TestJudge(t *testing.T) {
	tests := []struct {
		name   string
		change func(r map[string]any)
		raw    string
		want   string // a reason; "" means it passes
	}{
		{name: "everything right passes", change: func(map[string]any) {}},
		{name: "placeholder page is accepted", change: func(r map[string]any) { r["ui"] = "placeholder" }},
		{name: "a starting kernel is accepted", change: func(r map[string]any) { r["ui"] = "kernel-status:starting" }},
		{name: "no version", change: func(r map[string]any) { r["info"] = map[string]any{} }, want: "no version"},
		{name: "devices failed", change: func(r map[string]any) { delete(r, "devices"); r["devicesError"] = "kernel dead" }, want: "devices.list failed: kernel dead"},
		{name: "no devices", change: func(r map[string]any) { r["devices"] = map[string]any{"devices": []any{}} }, want: "no devices"},
		{name: "devices of the wrong shape", change: func(r map[string]any) { r["devices"] = []any{"cpu"} }, want: "not {devices"},
		{name: "nameless device", change: func(r map[string]any) { r["devices"] = map[string]any{"devices": []any{map[string]any{"kind": "cpu"}}} }, want: "without a name"},
		{name: "unknown method accepted", change: func(r map[string]any) { r["unknownError"] = nil }, want: "was accepted"},
		{name: "unknown method rejected without its name", change: func(r map[string]any) { r["unknownError"] = "error" }, want: "does not name it"},
		{name: "wrong nonce", change: func(r map[string]any) { r["nonce"] = "n2" }, want: `nonce "n2", want "n1"`},
		{name: "no event", change: func(r map[string]any) { r["nonce"] = "" }, want: "nonce"},
		{name: "UI script did not run", change: func(r map[string]any) { r["ui"] = "" }, want: "did not run"},
		{name: "script error", change: func(r map[string]any) { r["errors"] = []string{"self-test script: boom"} }, want: "boom"},
		{name: "report not JSON", raw: "{", want: "not valid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := []byte(tc.raw)
			if tc.change != nil {
				r := goodReport()
				tc.change(r)
				raw, _ = json.Marshal(r)
			}
			v := judge(raw, "n1", "selftest.x")
			if tc.want == "" {
				if !v.ok {
					t.Fatalf("failed: %v", v.reasons)
				}
				if !strings.Contains(v.summary, "devices cpu") {
					t.Errorf("summary %q does not list the devices", v.summary)
				}
				return
			}
			if v.ok {
				t.Fatalf("passed (%s), want a failure with %q", v.summary, tc.want)
			}
			if !strings.Contains(strings.Join(v.reasons, "\n"), tc.want) {
				t.Errorf("reasons %q do not contain %q", v.reasons, tc.want)
			}
		})
	}
}

func TestSelfTestPingSendsNonceThroughPublisher(t *testing.T) {
	p := &publisher{}
	em := &fakeEmitter{}
	p.ready(em)
	st, err := newSelfTest(p)
	if err != nil {
		t.Fatal(err)
	}
	st.Ping(st.nonce)
	if len(em.events) != 1 || em.names[0] != "workbench" || em.events[0].Topic != "selftest" {
		t.Fatalf("events %v %v, want one workbench event with topic selftest", em.names, em.events)
	}
	if got := em.events[0].Data.(map[string]string)["nonce"]; got != st.nonce {
		t.Errorf("nonce %q, want %q", got, st.nonce)
	}
	st2, _ := newSelfTest(p)
	if st2.nonce == st.nonce || len(st.nonce) != 24 {
		t.Errorf("nonces %q and %q: want distinct random 24-hex values", st.nonce, st2.nonce)
	}
}

func TestSelfTestReportAndTimeout(t *testing.T) {
	st, _ := newSelfTest(&publisher{})
	r := goodReport()
	r["nonce"] = st.nonce
	r["unknownError"] = "workbench: unknown method " + st.unknown
	raw, _ := json.Marshal(r)
	st.Report(string(raw))
	st.Report("{") // only the first report counts
	if v := st.wait(time.Second); !v.ok {
		t.Fatalf("verdict failed: %v", v.reasons)
	}

	st, _ = newSelfTest(&publisher{})
	v := st.wait(20 * time.Millisecond)
	if v.ok || !strings.Contains(v.reasons[0], "no report") {
		t.Fatalf("timeout verdict %+v", v)
	}
	st.Report(string(raw)) // a late report must not block
}

func TestSelfTestScript(t *testing.T) {
	st, _ := newSelfTest(&publisher{})
	js := st.script(30000)
	for _, want := range []string{`"` + st.nonce + `"`, `"` + st.unknown + `"`, `"workbench"`, `"selftest"`, "+ 30000",
		`App.Call("server.info"`, `App.Call("devices.list"`, "#kernel-status[data-status]", `getElementById("placeholder")`, "ST.Report("} {
		if !strings.Contains(js, want) {
			t.Errorf("script lacks %s", want)
		}
	}
	if strings.Contains(js, "%!") {
		t.Errorf("format error in script: %s", js)
	}
	for _, tc := range []struct{ in, want time.Duration }{{2 * time.Minute, 115 * time.Second}, {8 * time.Second, 6 * time.Second}} {
		if got := scriptBudget(tc.in); got != tc.want {
			t.Errorf("scriptBudget(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
