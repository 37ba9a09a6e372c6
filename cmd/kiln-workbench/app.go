package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
)

// caller is the part of the workbench engine (*workbench.Server) that the
// page's bound method reaches; tests give a fake.
type caller interface {
	Call(ctx context.Context, method string, params json.RawMessage) (any, error)
}

// App is the object bound into the page as window.go.main.App. Its only
// method, Call, is the whole RPC surface: the engine's methods are listed in
// workbench/API.md.
type App struct {
	engine caller
	// ctx is the context each engine call runs under; it is cancelled when
	// the window closes.
	ctx context.Context
}

// newApp returns an App forwarding to engine under ctx.
func newApp(ctx context.Context, engine caller) *App {
	return &App{engine: engine, ctx: ctx}
}

// maxMethodLen bounds a method name; no engine method comes close.
const maxMethodLen = 128

// Call runs the engine method named method with the JSON object paramsJSON
// ("" means {}) and returns the method's result as JSON. It fails, with an
// error naming the method, when paramsJSON is not valid JSON, when the
// engine rejects the call (an unknown method, bad parameters), when the
// engine panics (the panic is recovered; the app keeps working) or when the
// result cannot be encoded. In the page the error rejects the promise
// returned by window.go.main.App.Call.
func (a *App) Call(method, paramsJSON string) (result string, err error) {
	if method == "" {
		return "", errors.New("workbench: call without a method name")
	}
	if len(method) > maxMethodLen {
		return "", fmt.Errorf("workbench: method name of %d bytes is too long", len(method))
	}
	params := json.RawMessage(`{}`)
	if strings.TrimSpace(paramsJSON) != "" {
		if !json.Valid([]byte(paramsJSON)) {
			var probe any
			perr := json.Unmarshal([]byte(paramsJSON), &probe)
			return "", fmt.Errorf("workbench: %s: parameters are not valid JSON: %v", method, perr)
		}
		params = json.RawMessage(paramsJSON)
	}
	if a.engine == nil {
		return "", fmt.Errorf("workbench: %s: the engine is not running", method)
	}
	defer func() {
		if r := recover(); r != nil {
			result = ""
			err = fmt.Errorf("workbench: %s panicked: %v", method, r)
			fmt.Fprintf(os.Stderr, "kiln-workbench: panic in %s: %v\n%s", method, r, debug.Stack())
		}
	}()
	ctx := a.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	v, err := a.engine.Call(ctx, method, params)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("workbench: %s: encode result: %w", method, err)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}
