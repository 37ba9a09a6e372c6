package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// fakeEngine answers like the workbench engine: a few methods, an error
// naming unknown ones, and a panic on request.
type fakeEngine struct {
	gotParams json.RawMessage
	gotCtx    context.Context
}

var errUnknownMethod = errors.New("unknown method")

func (f *fakeEngine) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	f.gotParams, f.gotCtx = params, ctx
	switch method {
	case "server.info":
		return map[string]any{"version": "0.1.0-dev", "root": "/nb"}, nil
	case "echo":
		var v any
		if err := json.Unmarshal(params, &v); err != nil {
			return nil, fmt.Errorf("echo: %w", err)
		}
		return v, nil
	case "html":
		return "<b>a & b</b>", nil
	case "boom":
		panic("kernel client exploded")
	case "unencodable":
		return make(chan int), nil
	}
	return nil, fmt.Errorf("workbench: %w %q", errUnknownMethod, method)
}

func TestAppCall(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "app")
	tests := []struct {
		name, method, params string
		want                 string // JSON result; empty when an error is expected
		wantErr              []string
	}{
		{name: "result is the method's JSON", method: "server.info", params: "{}", want: `{"root":"/nb","version":"0.1.0-dev"}`},
		{name: "empty params mean an empty object", method: "echo", params: "", want: `{}`},
		{name: "params reach the engine unchanged", method: "echo", params: `{"path":"a.ipynb","n":[1,2]}`, want: `{"n":[1,2],"path":"a.ipynb"}`},
		{name: "HTML is not escaped", method: "html", params: "{}", want: `"<b>a & b</b>"`},
		{name: "bad JSON names the method", method: "echo", params: `{"path":`, wantErr: []string{"echo", "not valid JSON"}},
		{name: "trailing garbage is bad JSON", method: "echo", params: `{} x`, wantErr: []string{"not valid JSON"}},
		{name: "unknown method is rejected with its name", method: "no.such", params: "{}", wantErr: []string{"unknown method", `"no.such"`}},
		{name: "engine panic becomes an error", method: "boom", params: "{}", wantErr: []string{"boom panicked", "kernel client exploded"}},
		{name: "unencodable result", method: "unencodable", params: "{}", wantErr: []string{"unencodable", "encode result"}},
		{name: "empty method", method: "", params: "{}", wantErr: []string{"without a method name"}},
		{name: "overlong method", method: strings.Repeat("m", 500), params: "{}", wantErr: []string{"too long"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eng := &fakeEngine{}
			got, err := newApp(ctx, eng).Call(tc.method, tc.params)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("Call(%q, %q) = %q, want an error", tc.method, tc.params, got)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				if got != "" {
					t.Errorf("result %q alongside an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Call(%q, %q): %v", tc.method, tc.params, err)
			}
			if got != tc.want {
				t.Errorf("Call(%q, %q) = %s, want %s", tc.method, tc.params, got, tc.want)
			}
			if eng.gotCtx.Value(key{}) != "app" {
				t.Error("the engine did not get the app's context")
			}
		})
	}
}

func TestAppCallKeepsWorkingAfterPanic(t *testing.T) {
	app := newApp(context.Background(), &fakeEngine{})
	if _, err := app.Call("boom", "{}"); err == nil {
		t.Fatal("boom: no error")
	}
	got, err := app.Call("server.info", "")
	if err != nil || !strings.Contains(got, `"version"`) {
		t.Fatalf("after a panic: %q, %v", got, err)
	}
}

func TestAppCallWithoutEngine(t *testing.T) {
	_, err := newApp(context.Background(), nil).Call("server.info", "{}")
	if err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("err = %v, want 'the engine is not running'", err)
	}
}

// FuzzAppCall checks that no method name or parameter text crashes the
// bridge: every call gives valid JSON or an error, and invalid parameters
// never reach the engine.
func FuzzAppCall(f *testing.F) {
	for _, s := range [][2]string{
		{"echo", `{"a":1}`}, {"echo", `{`}, {"boom", `{}`}, {"server.info", ""},
		{"", "{}"}, {"echo", "\xff"}, {"echo", `[1,2,3]`}, {"no.such", "null"}, {"unencodable", "{}"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, method, params string) {
		eng := &fakeEngine{}
		got, err := newApp(context.Background(), eng).Call(method, params)
		if err != nil {
			if got != "" {
				t.Fatalf("result %q with error %v", got, err)
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
		} else if !json.Valid([]byte(got)) {
			t.Fatalf("Call(%q, %q) = %q, not JSON", method, params, got)
		}
		if strings.TrimSpace(params) != "" && !json.Valid([]byte(params)) && eng.gotParams != nil {
			t.Fatalf("invalid params %q reached the engine", params)
		}
	})
}
