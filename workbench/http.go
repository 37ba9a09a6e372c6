package workbench

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// maxParams bounds the body of an API call.
const maxParams = 64 << 20

// Handler serves the workbench over HTTP: the UI (Config.Assets) at "/",
// API calls as POST /api/call/{method} with the JSON params as the body
// (answered {"result": …} with 200, or {"error": "…"} with 400, 404 for an
// unknown method), checkpoint downloads as GET /api/export (see
// serveExport: the exported file with Content-Disposition: attachment),
// and the live updates on the WebSocket /ws as text frames {"topic",
// "data"}.
//
// Every request to the engine (/api/call, /api/export and /ws) passes these checks, in
// this order, and a refused one executes nothing:
//
//   - Host must be a loopback name (localhost, *.localhost, 127.0.0.0/8,
//     [::1], any port), one of Config.AllowedHosts, or the IP address the
//     connection arrived on; else 403 (DNS rebinding).
//   - With a Token, the token (?token=, an "Authorization: token T"
//     header, or the kiln_token cookie that loading a page with ?token=
//     sets); else 403.
//   - Origin, or Referer when Origin is absent, must be this workbench's
//     own origin (scheme, host and port of the request's Host); else 403.
//     A request with neither is accepted when it shows the token itself
//     (header or query: curl, scripts) or no Token is configured, and
//     refused when only the cookie vouches for it, since browsers always
//     send Origin on cross-origin POSTs and WebSocket handshakes.
//   - A call's Content-Type must be application/json, which a page of
//     another origin can only send after a CORS preflight that this
//     handler never grants; text/plain, forms and the like get 415.
//
// The UI's own files are the same public bundle for everyone and are
// served without the Host check (the desktop app's webview asks for them
// with Host "wails"), behind the token like everything else.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/call/{method}", s.serveCall)
	mux.HandleFunc("GET /api/export", s.serveExport)
	mux.HandleFunc("POST /api/", func(w http.ResponseWriter, r *http.Request) {
		refuse(w, r, http.StatusNotFound, "no API at "+r.URL.Path+" (calls are POST /api/call/METHOD)")
	})
	mux.HandleFunc("GET /ws", s.serveWS)
	if s.cfg.Assets != nil {
		mux.Handle("GET /", http.FileServerFS(s.cfg.Assets))
	}
	return s.guard(mux)
}

// How a request showed the token.
const (
	authNone     = iota // no Token is configured
	authExplicit        // ?token= or the Authorization header
	authCookie          // only the kiln_token cookie, which browsers add by themselves
)

// guard applies Handler's checks before next sees a request.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		// Everything but reading the UI's files reaches the engine.
		engine := r.URL.Path == "/ws" || strings.HasPrefix(r.URL.Path, "/api/") ||
			r.Method != http.MethodGet && r.Method != http.MethodHead
		if engine {
			if msg := s.checkHost(r); msg != "" {
				refuse(w, r, http.StatusForbidden, msg)
				return
			}
		}
		auth, ok := s.authenticate(r)
		if !ok {
			refuse(w, r, http.StatusForbidden, "this workbench needs its token (open the URL it printed, with ?token=…)")
			return
		}
		if engine {
			if msg := checkOrigin(r, auth); msg != "" {
				refuse(w, r, http.StatusForbidden, msg)
				return
			}
		}
		if r.Method == http.MethodPost {
			if ct := r.Header.Get("Content-Type"); !isJSON(ct) {
				if ct == "" {
					ct = "none"
				}
				refuse(w, r, http.StatusUnsupportedMediaType, fmt.Sprintf(
					"API calls take Content-Type: application/json (this request's: %s)", ct))
				return
			}
		}
		if auth != authNone && r.URL.Query().Get("token") != "" {
			http.SetCookie(w, &http.Cookie{Name: "kiln_token", Value: s.cfg.Token, Path: "/", HttpOnly: true,
				Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
		}
		next.ServeHTTP(w, r)
	})
}

// refuse answers a refused request: JSON {"error"} on the API, as the UI
// reads it, text elsewhere. The message is prefixed with the status.
func refuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	msg = fmt.Sprintf("%d %s: %s", code, strings.ToLower(http.StatusText(code)), msg)
	if strings.HasPrefix(r.URL.Path, "/api/") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]string{"error": msg})
		return
	}
	http.Error(w, msg, code)
}

// authenticate compares the token the request shows with Config.Token in
// constant time.
func (s *Server) authenticate(r *http.Request) (auth int, ok bool) {
	if s.cfg.Token == "" {
		return authNone, true
	}
	auth = authExplicit
	got := r.URL.Query().Get("token")
	if got == "" {
		got, _ = strings.CutPrefix(r.Header.Get("Authorization"), "token ")
	}
	if got == "" {
		if c, err := r.Cookie("kiln_token"); err == nil {
			got, auth = c.Value, authCookie
		}
	}
	return auth, subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Token)) == 1
}

// checkHost says why it refuses the request's Host, or "" when it does
// not: a Host that is neither a loopback name, nor one of
// Config.AllowedHosts, nor the IP address the connection arrived on. A
// page of a DNS name the attacker rebinds to 127.0.0.1 carries that name
// as its Host, so it never passes; an IP address can never be rebound.
func (s *Server) checkHost(r *http.Request) string {
	host, port := splitHost(r.Host)
	if host == "" {
		return "a request without a Host header is refused"
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return "" // RFC 6761: browsers resolve these to loopback themselves
	}
	ip := net.ParseIP(host)
	if ip != nil && ip.IsLoopback() {
		return ""
	}
	for _, a := range s.cfg.AllowedHosts {
		ah, ap := splitHost(a)
		if ah == host && (ap == "" || ap == port) {
			return ""
		}
	}
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok && ip != nil && local.IP.Equal(ip) {
		return ""
	}
	return fmt.Sprintf("Host %s is not this workbench's (a loopback name, the address it listens on, or one of its allowed hosts: kiln workbench --allow-host NAME)", r.Host)
}

// splitHost returns the lower-case host name (without the brackets of an
// IPv6 address and any trailing dot) and the port of a Host header value.
func splitHost(hostport string) (host, port string) {
	host = hostport
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		host, port = h, p
	}
	host = strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), ".")
	return strings.ToLower(host), port
}

// checkOrigin says why it refuses a request, or "" when it does not: one
// whose Origin (or, without one, Referer) is not this workbench's own
// origin, or one with neither that only the cookie authenticates.
func checkOrigin(r *http.Request, auth int) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	self := scheme + "://" + r.Host
	header, origin := "Origin", r.Header.Get("Origin")
	if origin == "" {
		header, origin = "Referer", r.Header.Get("Referer")
	}
	if origin == "" {
		if auth == authCookie {
			return "a request with neither Origin nor Referer that only the kiln_token cookie authenticates is refused (send the token in an \"Authorization: token T\" header)"
		}
		return ""
	}
	if !sameOrigin(origin, scheme, r.Host) {
		return fmt.Sprintf("%s %s does not match this workbench (%s)", header, truncate(origin, 200), self)
	}
	return ""
}

// sameOrigin reports whether the URL origin (an Origin or Referer value)
// has the given scheme, host and port; ports default to the scheme's.
func sameOrigin(origin, scheme, hostport string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.User != nil || !strings.EqualFold(u.Scheme, scheme) {
		return false
	}
	defaultPort := map[string]string{"http": "80", "https": "443"}[scheme]
	oh, op := splitHost(u.Host)
	sh, sp := splitHost(hostport)
	if op == "" {
		op = defaultPort
	}
	if sp == "" {
		sp = defaultPort
	}
	return oh == sh && op == sp
}

// isJSON reports whether a Content-Type value is application/json.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

func (s *Server) serveCall(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxParams))
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": "reading the request: " + err.Error()})
		return
	}
	res, err := s.Call(r.Context(), r.PathValue("method"), body)
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, ErrUnknownMethod) {
			code = http.StatusNotFound
		}
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	if err := json.NewEncoder(w).Encode(map[string]any{"result": res}); err != nil {
		s.publish("server.error", map[string]any{"error": "encoding the result of " + r.PathValue("method") + ": " + err.Error()})
	}
}

// wsQueue is how many updates a WebSocket client may fall behind before it
// is disconnected (it reconnects and takes a snapshot).
const wsQueue = 4096

// wsPublisher queues updates for one WebSocket client without blocking the
// Server.
type wsPublisher struct {
	mu     sync.Mutex
	queue  chan []byte
	closed bool
}

func (p *wsPublisher) Publish(topic string, data any) {
	b, err := json.Marshal(map[string]any{"topic": topic, "data": data})
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	select {
	case p.queue <- b:
	default: // too far behind: drop the client
		p.closed = true
		close(p.queue)
	}
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	p := &wsPublisher{queue: make(chan []byte, wsQueue)}
	cancel := s.Subscribe(p)
	defer cancel()
	ctx := c.CloseRead(r.Context())
	// The first frame says where things stand, so a reconnecting page
	// refreshes its view.
	p.Publish("kernel.status", s.kernel.status())
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.ctx.Done():
			c.Close(websocket.StatusGoingAway, "the workbench is closing")
			return
		case b, ok := <-p.queue:
			if !ok {
				c.Close(websocket.StatusTryAgainLater, "too far behind; reconnect")
				return
			}
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := c.Write(wctx, websocket.MessageText, b)
			cancel()
			if err != nil {
				return
			}
		}
	}
}
