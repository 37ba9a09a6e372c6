package workbench

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// maxParams bounds the body of an API call.
const maxParams = 64 << 20

// Handler serves the workbench over HTTP: the UI (Config.Assets) at "/",
// API calls as POST /api/call/{method} with the JSON params as the body
// (answered {"result": …} with 200, or {"error": "…"} with 400), and the
// live updates on the WebSocket /ws as text frames {"topic", "data"}. With
// a Token, every request without it is refused with 403; loading a page
// with ?token= sets a cookie, so the UI's later requests carry it.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/call/{method}", s.serveCall)
	mux.HandleFunc("GET /ws", s.serveWS)
	if s.cfg.Assets != nil {
		mux.Handle("GET /", http.FileServerFS(s.cfg.Assets))
	}
	return s.guard(mux)
}

// guard refuses requests without the token.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Token != "" {
			got := r.URL.Query().Get("token")
			if got == "" {
				got, _ = strings.CutPrefix(r.Header.Get("Authorization"), "token ")
			}
			if got == "" {
				if c, err := r.Cookie("kiln_token"); err == nil {
					got = c.Value
				}
			}
			if subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Token)) != 1 {
				http.Error(w, "403 forbidden: this workbench needs its token (open the URL it printed, with ?token=…)", http.StatusForbidden)
				return
			}
			if r.URL.Query().Get("token") != "" {
				http.SetCookie(w, &http.Cookie{Name: "kiln_token", Value: s.cfg.Token, Path: "/", HttpOnly: true,
					SameSite: http.SameSiteStrictMode})
			}
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
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
