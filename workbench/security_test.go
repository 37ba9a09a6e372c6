package workbench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/coder/websocket"
	"github.com/kiln-ml/kiln/workbench"
)

// securedServer serves a Server with the token "s3cret", the allowed host
// wb.example and a one-page UI over a real HTTP server, attached to a fake
// kernel that records what reaches it.
func securedServer(t *testing.T) (*httptest.Server, *fakeKernel) {
	t.Helper()
	srv, k := newFakeServer(t, workbench.Config{Token: "s3cret", AllowedHosts: []string{"wb.example"},
		Assets: fstest.MapFS{"index.html": {Data: []byte("<p>ui</p>")}}})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts, k
}

// TestAPIRefusesCrossSiteAndRebindingRequests sends kernel.execute calls
// that a page of another origin, a DNS-rebinding page or a script could
// send, and checks which are answered, which are refused with a message
// naming the fault, and that a refused call never reached the kernel.
func TestAPIRefusesCrossSiteAndRebindingRequests(t *testing.T) {
	ts, k := securedServer(t)
	self := ts.URL                                    // http://127.0.0.1:PORT
	port := ts.URL[strings.LastIndex(ts.URL, ":")+1:] // PORT
	cookie := &http.Cookie{Name: "kiln_token", Value: "s3cret"}
	for i, c := range []struct {
		name        string
		host        string // Host header; "" is the server's own
		origin      string
		referer     string
		contentType string
		cookie      bool   // send the kiln_token cookie
		header      bool   // send "Authorization: token s3cret"
		query       string // appended to the URL
		want        int
		message     string // the refusal must contain it
	}{
		{name: "cross-origin text/plain with the cookie (the CSRF a page on another port sends)",
			origin: "http://127.0.0.1:9999", contentType: "text/plain", cookie: true,
			want: 403, message: "Origin http://127.0.0.1:9999 does not match this workbench (" + self + ")"},
		{name: "cross-origin form with the cookie", origin: "http://127.0.0.1:9999",
			contentType: "application/x-www-form-urlencoded", cookie: true, want: 403, message: "does not match"},
		{name: "cross-origin JSON with the cookie", origin: "http://evil.example",
			contentType: "application/json", cookie: true, want: 403, message: "Origin http://evil.example does not match"},
		{name: "origin null (sandboxed frame) with the cookie", origin: "null",
			contentType: "application/json", cookie: true, want: 403, message: "Origin null does not match"},
		{name: "same host over https is another origin", origin: "https://127.0.0.1:" + port,
			contentType: "application/json", cookie: true, want: 403, message: "does not match"},
		{name: "cross-origin Referer without Origin", referer: "http://127.0.0.1:9999/attack.html",
			contentType: "application/json", cookie: true, want: 403, message: "Referer http://127.0.0.1:9999/attack.html does not match"},
		{name: "neither Origin nor Referer with only the cookie", contentType: "application/json", cookie: true,
			want: 403, message: "neither Origin nor Referer"},
		{name: "same-origin text/plain with the cookie", origin: self, contentType: "text/plain", cookie: true,
			want: 415, message: "Content-Type: application/json (this request's: text/plain)"},
		{name: "same-origin multipart form with the cookie", origin: self, contentType: "multipart/form-data; boundary=x",
			cookie: true, want: 415, message: "multipart/form-data"},
		{name: "no Content-Type with the token header", header: true, want: 415, message: "this request's: none"},
		{name: "DNS rebinding: foreign Host and its own Origin, with the token", host: "evil.example:" + port,
			origin: "http://evil.example:" + port, contentType: "application/json", header: true,
			want: 403, message: "Host evil.example:" + port + " is not this workbench's"},
		{name: "foreign Host without Origin, with the token", host: "evil.example", contentType: "application/json",
			header: true, want: 403, message: "Host evil.example is not"},
		{name: "a name that only ends in localhost", host: "evillocalhost:" + port, contentType: "application/json",
			header: true, want: 403, message: "Host evillocalhost:" + port + " is not"},
		{name: "foreign Host without the token: refused for the Host first", host: "evil.example",
			contentType: "application/json", want: 403, message: "Host evil.example is not"},
		{name: "same origin without the token", origin: self, contentType: "application/json", want: 403,
			message: "needs its token"},
		{name: "same-origin JSON with the cookie (the UI)", origin: self, contentType: "application/json", cookie: true, want: 200},
		{name: "same-origin JSON with ?token= (the UI's first load)", origin: self, contentType: "application/json; charset=utf-8",
			query: "?token=s3cret", want: 200},
		{name: "same-origin Referer without Origin, with the cookie", referer: self + "/?x=1", contentType: "application/json",
			cookie: true, want: 200},
		{name: "localhost Host and Origin", host: "localhost:" + port, origin: "http://localhost:" + port,
			contentType: "application/json", cookie: true, want: 200},
		{name: "a subdomain of localhost (RFC 6761)", host: "app.localhost:" + port, origin: "http://app.localhost:" + port,
			contentType: "application/json", cookie: true, want: 200},
		{name: "another loopback address", host: "127.0.0.2:" + port, origin: "http://127.0.0.2:" + port,
			contentType: "application/json", cookie: true, want: 200},
		{name: "[::1] Host and Origin", host: "[::1]:" + port, origin: "http://[::1]:" + port,
			contentType: "application/json", cookie: true, want: 200},
		{name: "an allowed host", host: "WB.example:" + port, origin: "http://wb.example:" + port,
			contentType: "application/json", cookie: true, want: 200},
		{name: "a script: the token header, no Origin", contentType: "application/json", header: true, want: 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			code := fmt.Sprintf("marker %d", i)
			body, _ := json.Marshal(map[string]string{"code": code})
			req, _ := http.NewRequest("POST", ts.URL+"/api/call/kernel.execute"+c.query, strings.NewReader(string(body)))
			if c.host != "" {
				req.Host = c.host
			}
			for h, v := range map[string]string{"Origin": c.origin, "Referer": c.referer, "Content-Type": c.contentType} {
				if v != "" {
					req.Header.Set(h, v)
				}
			}
			if c.cookie {
				req.AddCookie(cookie)
			}
			if c.header {
				req.Header.Set("Authorization", "token s3cret")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var answer struct {
				Result map[string]any
				Error  string
			}
			if err := json.Unmarshal(b, &answer); err != nil {
				t.Fatalf("HTTP %d answered %q, not JSON: %v", resp.StatusCode, b, err)
			}
			if resp.StatusCode != c.want || !strings.Contains(answer.Error, c.message) {
				t.Fatalf("HTTP %d %s, want %d with an error containing %q", resp.StatusCode, b, c.want, c.message)
			}
			if c.want != 200 && !strings.HasPrefix(answer.Error, fmt.Sprint(c.want)) {
				t.Errorf("the refusal %q does not start with its status", answer.Error)
			}
			if ran := k.ran(code); ran != (c.want == 200) {
				t.Errorf("the kernel ran the cell: %v, want %v", ran, c.want == 200)
			}
			if c.want == 200 && answer.Result["status"] != "ok" {
				t.Errorf("result %v", answer.Result)
			}
		})
	}
}

// TestCORSPreflightIsNeverGranted: a preflight (which carries no
// credentials) is refused and never allows another origin.
func TestCORSPreflightIsNeverGranted(t *testing.T) {
	ts, _ := securedServer(t)
	req, _ := http.NewRequest("OPTIONS", ts.URL+"/api/call/kernel.execute", nil)
	req.Header.Set("Origin", "http://127.0.0.1:9999")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 400 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight answered %d with Access-Control-Allow-Origin %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
}

// TestWebSocketChecksHostAndOrigin opens /ws as a DNS-rebinding page, a
// page of another origin, the UI and a script would.
func TestWebSocketChecksHostAndOrigin(t *testing.T) {
	ts, _ := securedServer(t)
	self := ts.URL
	port := ts.URL[strings.LastIndex(ts.URL, ":")+1:]
	for _, c := range []struct {
		name, host, origin, query string
		cookie                    bool
		want                      int
		message                   string
	}{
		{name: "foreign Host with its own Origin (DNS rebinding)", host: "evil.example:" + port,
			origin: "http://evil.example:" + port, query: "?token=s3cret", want: 403, message: "Host evil.example:" + port + " is not"},
		{name: "foreign Origin with the cookie", origin: "http://127.0.0.1:9999", cookie: true, want: 403,
			message: "Origin http://127.0.0.1:9999 does not match this workbench (" + self + ")"},
		{name: "foreign Origin with ?token=", origin: "http://evil.example", query: "?token=s3cret", want: 403,
			message: "does not match"},
		{name: "no Origin with only the cookie", cookie: true, want: 403, message: "neither Origin nor Referer"},
		{name: "without the token", origin: self, want: 403, message: "needs its token"},
		{name: "same origin with the cookie (the UI)", origin: self, cookie: true, want: 101},
		{name: "a script with ?token=", query: "?token=s3cret", want: 101},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", ts.URL+"/ws"+c.query, nil)
			for h, v := range map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
				"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Origin": c.origin} {
				if v != "" {
					req.Header.Set(h, v)
				}
			}
			if c.host != "" {
				req.Host = c.host
			}
			if c.cookie {
				req.AddCookie(&http.Cookie{Name: "kiln_token", Value: "s3cret"})
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var b []byte
			if resp.StatusCode != http.StatusSwitchingProtocols {
				b, _ = io.ReadAll(resp.Body)
			}
			if resp.StatusCode != c.want || !strings.Contains(string(b), c.message) {
				t.Errorf("HTTP %d %q, want %d with %q", resp.StatusCode, b, c.want, c.message)
			}
		})
	}
	// The UI's WebSocket, through a real client, gets its first update.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.URL, "http")+"/ws", &websocket.DialOptions{
		HTTPHeader: http.Header{"Origin": {self}, "Cookie": {"kiln_token=s3cret"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if _, frame, err := ws.Read(ctx); err != nil || !strings.Contains(string(frame), `"topic":"kernel.status"`) {
		t.Errorf("first frame %s, %v: want a kernel.status", frame, err)
	}
}

// TestUIFilesAndCookie: the UI's files need the token but not a loopback
// Host (the desktop app's webview asks for them as Host "wails"), and
// loading /?token= sets the SameSite=Strict, HttpOnly cookie.
func TestUIFilesAndCookie(t *testing.T) {
	ts, _ := securedServer(t)
	for _, c := range []struct {
		name, host, query string
		want              int
	}{
		{"loopback without the token", "", "", 403},
		{"loopback with the token", "", "?token=s3cret", 200},
		{"the desktop webview's host", "wails", "?token=s3cret", 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", ts.URL+"/"+c.query, nil)
			if c.host != "" {
				req.Host = c.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Fatalf("HTTP %d, want %d", resp.StatusCode, c.want)
			}
			if c.want == 200 {
				var set *http.Cookie
				for _, ck := range resp.Cookies() {
					if ck.Name == "kiln_token" {
						set = ck
					}
				}
				if set == nil || set.Value != "s3cret" || !set.HttpOnly || set.SameSite != http.SameSiteStrictMode {
					t.Errorf("cookie %v: want kiln_token=s3cret, HttpOnly, SameSite=Strict", set)
				}
			}
		})
	}
}

// TestAPIWithoutTokenStillChecksOrigin: a Server without a Token (the
// desktop app's, tests') still refuses cross-origin and rebinding calls.
func TestAPIWithoutTokenStillChecksOrigin(t *testing.T) {
	srv, k := newFakeServer(t, workbench.Config{})
	h := srv.Handler()
	for _, c := range []struct {
		name, host, origin, contentType string
		want                            int
	}{
		{"cross-origin text/plain", "127.0.0.1:8888", "http://127.0.0.1:9999", "text/plain", 403},
		{"foreign Host", "evil.example:8888", "http://evil.example:8888", "application/json", 403},
		{"same origin", "127.0.0.1:8888", "http://127.0.0.1:8888", "application/json", 200},
		{"no Origin (a script)", "127.0.0.1:8888", "", "application/json", 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			code := "no token: " + c.name
			body, _ := json.Marshal(map[string]string{"code": code})
			req := httptest.NewRequest("POST", "/api/call/kernel.execute", strings.NewReader(string(body)))
			req.Host = c.host
			req.Header.Set("Content-Type", c.contentType)
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.want {
				t.Errorf("HTTP %d %s, want %d", rec.Code, rec.Body, c.want)
			}
			if ran := k.ran(code); ran != (c.want == 200) {
				t.Errorf("the kernel ran the cell: %v, want %v", ran, c.want == 200)
			}
		})
	}
}
