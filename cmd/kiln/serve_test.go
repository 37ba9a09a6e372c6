package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/remote"
)

// lockedBuffer is a bytes.Buffer safe to write from the server goroutine
// while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServe runs `kiln serve args` until the test ends and returns the
// address and token it printed.
func startServe(t *testing.T, args ...string) (addr, token string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errs lockedBuffer
	done := make(chan error, 1)
	go func() { done <- serve(ctx, args, &out, &errs) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve returned %v", err)
		}
	})
	listening := regexp.MustCompile(`listening on (\S+)`)
	tok := regexp.MustCompile(`token ([0-9a-f]{32})\n`)
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := out.String()
		if m := listening.FindStringSubmatch(s); m != nil && strings.Contains(s, "clients:") {
			if k := tok.FindStringSubmatch(s); k != nil {
				token = k[1]
			}
			return m[1], token
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended early: %v\n%s%s", err, s, errs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve printed no address in 20s:\n%s", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServeServesRemoteDevices: `kiln serve` with a generated token serves
// a client that computes on its CPU, and `kiln devices` lists the remote
// device of KILN_REMOTE, or why it is not available (a wrong token).
func TestServeServesRemoteDevices(t *testing.T) {
	t.Setenv(remote.EnvToken, "")
	addr, token := startServe(t, "--addr", "127.0.0.1:0")
	if token == "" {
		t.Fatal("serve printed no generated token")
	}
	c, err := remote.Dial(addr, "cpu:0", remote.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf, _ := c.Alloc(backends.Int64, 3)
	v := backends.Contiguous(buf, backends.Int64, 3)
	c.Fill(v, 20)
	c.BinaryScalar(backends.Add, v, v, 1, false)
	got := make([]byte, 24)
	if err := c.Read(buf, 0, got); err != nil || got[0] != 21 || got[16] != 21 {
		t.Fatalf("remote add: %v % x", err, got)
	}

	setKilnDevice(t, "unset")
	url := "remote://" + addr + "/cpu:0"
	t.Setenv(remote.EnvRemotes, url)
	t.Setenv(remote.EnvToken, token)
	var out bytes.Buffer
	if err := devicesCommand(nil, &out, &out); err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^remote +` + regexp.QuoteMeta(url) + ` +\S.*\(remote ` + regexp.QuoteMeta(addr) + `\)`)
	if !row.MatchString(out.String()) {
		t.Errorf("kiln devices does not list %s:\n%s", url, out.String())
	}
	t.Setenv(remote.EnvToken, "wrong")
	out.Reset()
	if err := devicesCommand(nil, &out, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "not available: ") || !strings.Contains(out.String(), "refused the token") {
		t.Errorf("kiln devices with a wrong token:\n%s", out.String())
	}
}

// TestServeRefusesPlainTextBeyondLoopback: listening on every interface
// needs TLS or --insecure; mismatched TLS flags are a usage error.
func TestServeRefusesPlainTextBeyondLoopback(t *testing.T) {
	var out bytes.Buffer
	err := serve(context.Background(), []string{"--addr", "0.0.0.0:0", "--token", "x"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "--insecure") {
		t.Errorf("plain text on 0.0.0.0: %v", err)
	}
	err = serve(context.Background(), []string{"--tls-cert", "a.pem"}, &out, &out)
	if _, ok := err.(usageError); !ok {
		t.Errorf("--tls-cert alone: %v, want a usage error", err)
	}
}

// TestServeGivenTokenOnly: with --token, only that token is accepted.
func TestServeGivenTokenOnly(t *testing.T) {
	addr, printed := startServe(t, "--addr", "127.0.0.1:0", "--token", "given-token")
	if printed != "" {
		t.Errorf("serve printed a generated token %q though one was given", printed)
	}
	if _, err := remote.Dial(addr, "cpu", remote.Options{Token: "other"}); err == nil {
		t.Error("a wrong token was accepted")
	}
	c, err := remote.Dial(addr, "cpu", remote.Options{Token: "given-token"})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}
