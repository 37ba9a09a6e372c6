package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
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

// workbenchOptions are the flags of `kiln workbench`.
type workbenchOptions struct {
	browser bool
	browserOptions
}

// workbenchFlags defines the flags of `kiln workbench` on fs.
func workbenchFlags(fs *flag.FlagSet) *workbenchOptions {
	o := &workbenchOptions{}
	fs.BoolVar(&o.browser, "browser", false, "serve the UI to a browser instead of opening the desktop app")
	fs.StringVar(&o.addr, "addr", "127.0.0.1:0", "address to serve on in browser mode (loopback by default; port 0 picks one); a non-loopback one needs --tls-cert and --tls-key, or --insecure")
	fs.StringVar(&o.root, "root", ".", "directory of the notebooks")
	fs.StringVar(&o.existing, "existing", "", "connection file of a running kernel to attach to, instead of starting one")
	fs.Var((*listFlag)(&o.runs), "runs", "a `directory` of training runs to follow (repeatable; default ROOT/runs); the run registry's runs are followed too")
	fs.Var((*listFlag)(&o.allowHosts), "allow-host", "in browser mode, a Host `name` (or name:port) browsers may call the workbench by, beside loopback names and the address it listens on (repeatable)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "in browser mode, serve HTTPS with this certificate (PEM; with --tls-key)")
	fs.StringVar(&o.tlsKey, "tls-key", "", "the private key (PEM) of --tls-cert")
	fs.BoolVar(&o.insecure, "insecure", false, "allow plain HTTP on a non-loopback --addr (the token and your code cross the network in clear)")
	return o
}

// workbenchCommand opens the workbench: the desktop app (kiln-workbench,
// found beside this binary or on PATH) when there is a display, else, or
// with --browser, the same UI served to a browser from this process.
func workbenchCommand(args []string, _, _ io.Writer) error {
	fs := commandFlagSet("workbench")
	wo := workbenchFlags(fs)
	if err := flagError(fs, fs.Parse(args)); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("workbench: unexpected arguments %q (the notebooks' directory is --root DIR)", fs.Args())
	}
	o := wo.browserOptions
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if !wo.browser {
		if desk := desktopBinary(self); desk != "" && hasDisplay() {
			cmd := exec.Command(desk, desktopArgs(self, o.root, o.existing, o.runs)...)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
			started := time.Now()
			err := cmd.Run()
			if err == nil || time.Since(started) > desktopStartup {
				return err
			}
			// It could not open its window (no GTK, a display it cannot use).
			fmt.Fprintf(os.Stderr, "kiln workbench: the desktop app failed to start (%v); serving the UI to a browser instead\n", err)
		} else {
			fmt.Fprintln(os.Stderr, "kiln workbench: no display or no desktop app (kiln-workbench); serving the UI to a browser instead")
		}
	}
	return serveWorkbench(self, o)
}

// desktopStartup is how soon a failing desktop app counts as one that
// could not start (then browser mode takes over) rather than one that ran.
const desktopStartup = 5 * time.Second

// desktopArgs are the desktop app's flags for the same workbench: it has
// no --addr (it serves nobody over the network) and takes --kiln, the
// binary that runs its kernels.
func desktopArgs(self, root, existing string, runs []string) []string {
	args := []string{"--kiln", self, "--root", root}
	for _, r := range runs {
		args = append(args, "--runs", r)
	}
	if existing != "" {
		args = append(args, "--existing", existing)
	}
	return args
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

// browserOptions are the flags of browser mode.
type browserOptions struct {
	addr, root, existing string
	runs, allowHosts     []string
	tlsCert, tlsKey      string
	insecure             bool
}

// serveWorkbench runs browser mode until SIGINT or SIGTERM. A listener
// beyond the loopback interface needs TLS or --insecure, and is announced
// with a warning, before any kernel starts.
func serveWorkbench(self string, o browserOptions) error {
	var certs []tls.Certificate
	switch {
	case (o.tlsCert == "") != (o.tlsKey == ""):
		return errors.New("workbench: --tls-cert and --tls-key go together")
	case o.tlsCert != "":
		c, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return fmt.Errorf("workbench: TLS certificate: %w", err)
		}
		certs = []tls.Certificate{c}
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("workbench: listen on %s: %w", o.addr, err)
	}
	defer ln.Close()
	bound := ln.Addr().(*net.TCPAddr)
	if !bound.IP.IsLoopback() {
		if certs == nil && !o.insecure {
			return fmt.Errorf("workbench: --addr %s listens beyond this machine (%s), where anyone who can reach it and has the token can run code as this user; "+
				"serve it over TLS (--tls-cert FILE --tls-key FILE) or accept plain HTTP with --insecure", o.addr, exposure(bound))
		}
		shown := bound.String()
		if h, _, err := net.SplitHostPort(o.addr); err == nil {
			shown = net.JoinHostPort(h, fmt.Sprint(bound.Port)) // 0.0.0.0 as asked, not Go's [::]
		}
		fmt.Fprintf(os.Stderr, "kiln workbench: WARNING: serving on %s (%s): anyone who can reach this address and has the token can run code as %s on this machine: read and write your files, start processes\n",
			shown, exposure(bound), userName())
		if certs == nil {
			fmt.Fprintln(os.Stderr, "kiln workbench: WARNING: --insecure: plain HTTP, so the token and everything you type cross the network in clear text")
		}
	}
	// A name in --addr is one the user means browsers to use; IP addresses
	// need no listing (the workbench accepts the address a connection
	// arrived on).
	allowed := o.allowHosts
	if h, _, err := net.SplitHostPort(o.addr); err == nil && h != "" && net.ParseIP(h) == nil {
		allowed = append(allowed, h)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var tok [16]byte
	rand.Read(tok[:])
	token := hex.EncodeToString(tok[:])
	if !frontend.Built() {
		fmt.Fprintln(os.Stderr, "kiln workbench: this binary was built without the UI (run make build); serving a placeholder page")
	}
	srv, err := workbench.New(ctx, workbench.Config{Root: o.root, RunDirs: o.runs, Kiln: self, Existing: o.existing,
		Token: token, AllowedHosts: allowed, Assets: frontend.Assets()})
	if err != nil {
		return err
	}
	defer srv.Close()
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	scheme := "http"
	if certs != nil {
		scheme = "https"
		hs.TLSConfig = &tls.Config{Certificates: certs, MinVersion: tls.VersionTLS12}
	}
	shown := bound.String()
	if bound.IP.IsUnspecified() {
		// Every interface: the loopback one works here; other machines use
		// this one's address.
		shown = net.JoinHostPort("127.0.0.1", fmt.Sprint(bound.Port))
	}
	fmt.Printf("Kiln workbench: %s://%s/?token=%s\n", scheme, shown, token)
	done := make(chan error, 1)
	go func() {
		if certs != nil {
			done <- hs.ServeTLS(ln, "", "")
		} else {
			done <- hs.Serve(ln)
		}
	}()
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

// exposure says who can reach a listener's address.
func exposure(a *net.TCPAddr) string {
	if a.IP.IsUnspecified() {
		return "every network interface of this machine"
	}
	return "a network interface of this machine"
}

// userName is the user the kernels run as, for the warning.
func userName() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "you"
}
