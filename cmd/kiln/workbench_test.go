package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/kiln-ml/kiln/kernel/jupyter"
)

// TestMain lets the test binary stand in for kiln: with KILN_TEST_MAIN=1 it
// runs main, so `workbench` starts kernels with this same binary.
func TestMain(m *testing.M) {
	if os.Getenv("KILN_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestWorkbenchBrowserFallbackAndToken runs `kiln workbench` with no display:
// it falls back to browser mode, prints a URL with its token, refuses
// requests without the token (/, /api/call, /ws) and answers those with it,
// including live updates on the WebSocket, then stops cleanly on SIGINT.
func TestWorkbenchBrowserFallbackAndToken(t *testing.T) {
	checkWorkbenchCommand(t, t.TempDir(), []string{"DISPLAY=", "WAYLAND_DISPLAY="}, "no display or no desktop app")
}

// TestWorkbenchDesktopFailureFallsBack gives `kiln workbench` a display and
// a kiln-workbench that fails at once: browser mode takes over.
func TestWorkbenchDesktopFailureFallsBack(t *testing.T) {
	bin := t.TempDir()
	fake := "#!/bin/sh\necho 'panic: failed to init GTK' >&2\nexit 2\n"
	if err := os.WriteFile(bin+"/kiln-workbench", []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	checkWorkbenchCommand(t, bin, []string{"DISPLAY=:99"}, "the desktop app failed to start")
}

// checkWorkbenchCommand runs `kiln workbench` with PATH=path and env, checks
// that stderr says message, and checks browser mode's token protection.
func checkWorkbenchCommand(t *testing.T, path string, env []string, message string) {
	if testing.Short() {
		t.Skip("starts a real kernel; skipped with -short")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	cmd := exec.Command(self, "workbench", "--addr", "127.0.0.1:0", "--root", root)
	cmd.Env = append(append(os.Environ(), "KILN_TEST_MAIN=1", "PATH="+path), env...)
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	errText := make(chan string, 1)
	go func() { b, _ := io.ReadAll(stderr); errText <- string(b) }()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "Kiln workbench: "); ok {
				urls <- u
			}
		}
		close(urls)
	}()
	var url string
	select {
	case u, ok := <-urls:
		if !ok {
			cmd.Wait()
			t.Fatalf("kiln workbench exited without a URL: %s", <-errText)
		}
		url = u
	case <-time.After(2 * time.Minute):
		t.Fatal("no URL printed within 2 minutes")
	}
	base, token, ok := strings.Cut(url, "/?token=")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") || len(token) != 32 {
		t.Fatalf("printed URL %q: want http://127.0.0.1:PORT/?token=<32 hex digits>", url)
	}
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/", 403}, {"POST", "/api/call/server.info", 403}, {"GET", "/ws", 403},
		{"GET", "/?token=" + token, 200},
	} {
		req, _ := http.NewRequest(c.method, base+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.want)
		}
	}
	req, _ := http.NewRequest("POST", base+"/api/call/kernel.status", strings.NewReader("{}"))
	req.Header.Set("Authorization", "token "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Result struct{ Status string } `json:"result"`
	}
	json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if resp.StatusCode != 200 || answer.Result.Status == "" {
		t.Errorf("kernel.status with the token: %d %+v", resp.StatusCode, answer)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wsURL := "ws" + strings.TrimPrefix(base, "http") + "/ws"
	if _, resp, err := websocket.Dial(ctx, wsURL, nil); err == nil || resp == nil || resp.StatusCode != 403 {
		t.Errorf("WebSocket without the token: %v (response %v), want 403", err, resp)
	}
	ws, _, err := websocket.Dial(ctx, wsURL+"?token="+token, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	_, frame, err := ws.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var first struct {
		Topic string
		Data  map[string]any
	}
	if err := json.Unmarshal(frame, &first); err != nil || first.Topic != "kernel.status" || first.Data["status"] == nil {
		t.Errorf("first frame %s (%v): want a kernel.status", frame, err)
	}

	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("kiln workbench after SIGINT: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Error("kiln workbench did not stop within 20 s of SIGINT")
	}
	if msg := <-errText; !strings.Contains(msg, message) || !strings.Contains(msg, "serving the UI to a browser instead") {
		t.Errorf("stderr %q: want the fallback message %q", msg, message)
	}
}

// TestDesktopArgsOmitAddr checks the flags handed to kiln-workbench: the
// ones it knows, never --addr (which would make it exit with a usage error).
func TestDesktopArgsOmitAddr(t *testing.T) {
	got := strings.Join(desktopArgs("/bin/kiln", "nb", "", []string{"r1", "r2"}), " ")
	if want := "--kiln /bin/kiln --root nb --runs r1 --runs r2"; got != want {
		t.Errorf("desktop args %q, want %q", got, want)
	}
	got = strings.Join(desktopArgs("/bin/kiln", ".", "k.json", nil), " ")
	if want := "--kiln /bin/kiln --root . --existing k.json"; got != want {
		t.Errorf("desktop args %q, want %q", got, want)
	}
}

// fakeKernel is a Jupyter kernel served in the test process (every cell's
// value is its code), so `kiln workbench --existing` starts no kernel.
type fakeKernel struct{ jupyter.BaseHandler }

func (fakeKernel) KernelInfo() jupyter.KernelInfo {
	return jupyter.KernelInfo{Implementation: "fake", LanguageInfo: jupyter.LanguageInfo{Name: "go"}}
}

func (fakeKernel) Execute(ctx context.Context, req jupyter.ExecuteRequest, out jupyter.Output) jupyter.ExecuteResult {
	return jupyter.ExecuteResult{Data: jupyter.MimeBundle{"text/plain": req.Code}}
}

// startFakeKernel serves a fakeKernel until the test ends and returns its
// connection file.
func startFakeKernel(t *testing.T) string {
	t.Helper()
	srv, err := jupyter.NewServer(jupyter.Config{
		Connection: jupyter.ConnectionInfo{Transport: "tcp", IP: "127.0.0.1", SignatureScheme: "hmac-sha256", Key: jupyter.NewID()},
		Handler:    fakeKernel{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), NoSignalHandler: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	conn := filepath.Join(t.TempDir(), "kernel.json")
	if err := srv.ConnectionInfo().WriteFile(conn); err != nil {
		t.Fatal(err)
	}
	return conn
}

// selfSignedCert writes a certificate for 127.0.0.1 and localhost and its
// key, and returns their paths and a pool trusting the certificate.
func selfSignedCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kiln test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(crand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// externalIPv4 is a non-loopback IPv4 address of this machine, or nil.
func externalIPv4() net.IP {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.To4()
		}
	}
	return nil
}

// TestWorkbenchNonLoopbackAddr runs `kiln workbench --browser` on
// addresses beyond loopback: without TLS or --insecure it refuses to start
// (before attaching to any kernel) with an error naming the exposure and
// the ways out; with either it warns on stderr, serves, accepts calls by
// the loopback and the external address it listens on and refuses a
// foreign Host. On loopback it warns of nothing.
func TestWorkbenchNonLoopbackAddr(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, pool := selfSignedCert(t)
	missing := filepath.Join(t.TempDir(), "no-kernel.json") // attaching to it would fail
	for _, c := range []struct {
		name       string
		args       []string
		refused    string   // the command must fail, its stderr saying this
		warnings   []string // else stderr must say these
		noWarnings []string // and not these
		scheme     string
	}{
		{name: "every interface without TLS or --insecure", args: []string{"--addr", "0.0.0.0:0", "--existing", missing},
			refused: "--addr 0.0.0.0:0 listens beyond this machine (every network interface of this machine), where anyone who can reach it and has the token can run code as this user; serve it over TLS (--tls-cert FILE --tls-key FILE) or accept plain HTTP with --insecure"},
		{name: "a certificate without its key", args: []string{"--addr", "0.0.0.0:0", "--tls-cert", certFile, "--existing", missing},
			refused: "--tls-cert and --tls-key go together"},
		{name: "a key that is no key", args: []string{"--addr", "0.0.0.0:0", "--tls-cert", certFile, "--tls-key", certFile, "--existing", missing},
			refused: "TLS certificate"},
		{name: "every interface with --insecure", args: []string{"--addr", "0.0.0.0:0", "--insecure"},
			warnings: []string{"WARNING: serving on 0.0.0.0:", "every network interface", "anyone who can reach this address and has the token can run code as",
				"--insecure: plain HTTP"}, scheme: "http"},
		{name: "every interface over TLS", args: []string{"--addr", "0.0.0.0:0", "--tls-cert", certFile, "--tls-key", keyFile},
			warnings: []string{"WARNING: serving on 0.0.0.0:", "can run code as"}, noWarnings: []string{"plain HTTP"}, scheme: "https"},
		{name: "loopback", args: []string{"--addr", "127.0.0.1:0"}, noWarnings: []string{"WARNING"}, scheme: "http"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"workbench", "--browser", "--root", t.TempDir()}, c.args...)
			if c.refused == "" {
				args = append(args, "--existing", startFakeKernel(t))
			}
			cmd := exec.Command(self, args...)
			cmd.Env = append(os.Environ(), "KILN_TEST_MAIN=1")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if c.refused != "" {
				out, err := cmd.Output()
				if err == nil || !strings.Contains(stderr.String(), c.refused) || len(out) != 0 {
					t.Fatalf("exit %v, stdout %q, stderr %q: want a failure saying %q", err, out, stderr.String(), c.refused)
				}
				return
			}
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil {
				cmd.Wait()
				t.Fatalf("no URL (%v); stderr %q", err, stderr.String())
			}
			base, token, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "Kiln workbench: ")), "/?token=")
			if !strings.HasPrefix(base, c.scheme+"://127.0.0.1:") {
				t.Fatalf("printed %q: want %s://127.0.0.1:PORT/?token=…", line, c.scheme)
			}
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}}}
			calls := []struct {
				host string
				want int
			}{{"", 200}, {"evil.example", 403}}
			if ip := externalIPv4(); ip != nil && strings.HasPrefix(c.args[1], "0.0.0.0") {
				// Called by its external address, as another machine would.
				calls = append(calls, struct {
					host string
					want int
				}{ip.String(), 200})
			}
			_, port, _ := strings.Cut(strings.TrimPrefix(base, c.scheme+"://"), ":")
			for _, call := range calls {
				url := base
				if call.host != "" && call.want == 200 {
					url = c.scheme + "://" + net.JoinHostPort(call.host, port)
				}
				req, _ := http.NewRequest("POST", url+"/api/call/kernel.status", strings.NewReader("{}"))
				req.Header.Set("Authorization", "token "+token)
				req.Header.Set("Content-Type", "application/json")
				if call.host != "" {
					req.Host = net.JoinHostPort(call.host, port)
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatalf("Host %q: %v", call.host, err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != call.want {
					t.Errorf("kernel.status with Host %q: HTTP %d %s, want %d", call.host, resp.StatusCode, b, call.want)
				}
			}
			cmd.Process.Signal(syscall.SIGINT)
			if err := cmd.Wait(); err != nil {
				t.Errorf("after SIGINT: %v", err)
			}
			for _, w := range c.warnings {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q lacks %q", stderr.String(), w)
				}
			}
			for _, w := range c.noWarnings {
				if strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q says %q", stderr.String(), w)
				}
			}
		})
	}
}
