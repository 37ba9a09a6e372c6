package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kiln-ml/kiln/frontend"
	"github.com/kiln-ml/kiln/workbench"
)

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// runWorkbench opens the workbench: the desktop app (kiln-workbench, found
// beside this binary or on PATH) when there is a display, else, or with
// --browser, the same UI served to a browser from this process.
func runWorkbench(args []string) error {
	fs := flag.NewFlagSet("workbench", flag.ContinueOnError)
	browser := fs.Bool("browser", false, "serve the UI to a browser instead of opening the desktop app")
	addr := fs.String("addr", "127.0.0.1:0", "address to serve on in browser mode (loopback by default; port 0 picks one)")
	root := fs.String("root", ".", "directory of the notebooks")
	existing := fs.String("existing", "", "connection file of a running kernel to attach to, instead of starting one")
	var runs listFlag
	fs.Var(&runs, "runs", "directory of training runs to follow (repeatable; default ROOT/runs)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if !*browser {
		if desk := desktopBinary(self); desk != "" && hasDisplay() {
			cmd := exec.Command(desk, append([]string{"--kiln", self}, args...)...)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
			return cmd.Run()
		}
		fmt.Fprintln(os.Stderr, "kiln workbench: no display or no desktop app (kiln-workbench); serving the UI to a browser instead")
	}
	return serveWorkbench(self, *addr, *root, *existing, runs)
}

// desktopBinary finds kiln-workbench beside self or on PATH.
func desktopBinary(self string) string {
	beside := filepath.Join(filepath.Dir(self), "kiln-workbench")
	if st, err := os.Stat(beside); err == nil && !st.IsDir() {
		return beside
	}
	if p, err := exec.LookPath("kiln-workbench"); err == nil {
		return p
	}
	return ""
}

func hasDisplay() bool { return os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "" }

// serveWorkbench runs browser mode until SIGINT or SIGTERM.
func serveWorkbench(self, addr, root, existing string, runs []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var tok [16]byte
	rand.Read(tok[:])
	token := hex.EncodeToString(tok[:])
	if !frontend.Built() {
		fmt.Fprintln(os.Stderr, "kiln workbench: this binary was built without the UI (run make build); serving a placeholder page")
	}
	srv, err := workbench.New(ctx, workbench.Config{Root: root, RunDirs: runs, Kiln: self, Existing: existing,
		Token: token, Assets: frontend.Assets()})
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("workbench: listen on %s: %w", addr, err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("Kiln workbench: http://%s/?token=%s\n", ln.Addr(), token)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		hs.Shutdown(sctx)
		cancel()
	}
	return nil
}
