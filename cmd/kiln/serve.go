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
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc/credentials"

	"github.com/kiln-ml/kiln/backends/remote"
)

// serveOptions are the flags of `kiln serve`.
type serveOptions struct {
	addr            string
	token           string
	tlsCert, tlsKey string
	insecure        bool
	maxSessionBytes int64
}

func serveFlags(fs *flag.FlagSet) *serveOptions {
	o := &serveOptions{}
	fs.StringVar(&o.addr, "addr", "127.0.0.1:7878", "address to listen on (loopback by default; port 0 picks one); a non-loopback one needs --tls-cert and --tls-key, or --insecure")
	fs.StringVar(&o.token, "token", "", "the token clients must send (default: $"+remote.EnvToken+", else a random one, printed)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "serve over TLS with this certificate (PEM; with --tls-key); clients trust it or its CA through $"+remote.EnvCA)
	fs.StringVar(&o.tlsKey, "tls-key", "", "the private key (PEM) of --tls-cert")
	fs.BoolVar(&o.insecure, "insecure", false, "allow plain text on a non-loopback --addr (the token and the tensors cross the network in clear)")
	fs.Int64Var(&o.maxSessionBytes, "max-session-bytes", 0, "the most bytes of buffers one client may hold (0: no cap beyond the device's memory)")
	return o
}

// serveCommand is `kiln serve`: it serves this machine's devices to
// remote clients until SIGINT or SIGTERM.
func serveCommand(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, args, stdout, stderr)
}

// serve runs `kiln serve` until ctx ends. It prints the address and the
// token on stdout before accepting clients.
func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := commandFlagSet("serve")
	o := serveFlags(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("serve: unexpected arguments %q", pos)
	}
	cfg := remote.ServerConfig{Token: o.token, MaxSessionBytes: o.maxSessionBytes,
		Log: func(format string, args ...any) { fmt.Fprintf(stderr, "kiln serve: "+format+"\n", args...) }}
	if cfg.Token == "" {
		cfg.Token = os.Getenv(remote.EnvToken)
	}
	generated := cfg.Token == ""
	if generated {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return fmt.Errorf("serve: token: %w", err)
		}
		cfg.Token = hex.EncodeToString(b[:])
	}
	switch {
	case (o.tlsCert == "") != (o.tlsKey == ""):
		return usagef("serve: --tls-cert and --tls-key go together")
	case o.tlsCert != "":
		c, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return fmt.Errorf("serve: TLS certificate: %w", err)
		}
		cfg.TLS = credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12})
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("serve: listen on %s: %w", o.addr, err)
	}
	defer ln.Close()
	bound := ln.Addr().(*net.TCPAddr)
	if !bound.IP.IsLoopback() {
		if cfg.TLS == nil && !o.insecure {
			return fmt.Errorf("serve: --addr %s listens beyond this machine (%s), where anyone who can reach it and has the token can use its devices and memory; "+
				"serve over TLS (--tls-cert FILE --tls-key FILE) or accept plain text with --insecure", o.addr, exposure(bound))
		}
		if cfg.TLS == nil {
			fmt.Fprintln(stderr, "kiln serve: WARNING: --insecure: plain text, so the token and every tensor cross the network in clear")
		}
	}
	srv, err := remote.NewServer(cfg)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	scheme := "plain text"
	if cfg.TLS != nil {
		scheme = "TLS"
	}
	fmt.Fprintf(stdout, "kiln serve: listening on %s (%s)\n", bound, scheme)
	if generated {
		fmt.Fprintf(stdout, "kiln serve: token %s\n", cfg.Token)
	} else {
		fmt.Fprintln(stdout, "kiln serve: token as given")
	}
	fmt.Fprintf(stdout, "kiln serve: clients: %s=<token> and a device such as remote://%s/cpu:0\n", remote.EnvToken, bound)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		srv.Stop()
		<-done
		return nil
	case err := <-done:
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		return fmt.Errorf("serve: %w", err)
	}
}
