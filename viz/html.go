package viz

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"strings"
	"sync"
)

// Visual is a value viz can render into a display bundle (MIME type →
// content). Chart, Board, Table and LiveDashboard implement it; a kernel
// shows one with Session.Render so that the chart library is sent once.
type Visual interface {
	// Bundle returns the value's display bundle: text/html made with s
	// (the chart library inline only if s has not yet sent it; a nil s
	// always inlines it), plus image/svg+xml where there is a static
	// rendering, and text/plain.
	Bundle(s *Session) map[string]string
}

// Session remembers whether the chart library has been sent to a page (a
// notebook, the workbench): the first chart it renders carries the library
// inline (about 1 MB), later ones only a loader that waits for it. A kernel
// owns one Session per kernel process; a fresh Session (or a chart's own
// HTML and MIME methods) always inlines the library, so the HTML stands
// alone.
//
// If the output that carried the library disappears (its cell's outputs
// cleared, or replaced by an update), charts rendered later in a reloaded
// page cannot draw: they show their static SVG and say so. RenderDisplay
// keeps the library in every update of the display that carried it; Reset
// makes the next chart carry it again. A Session is safe for concurrent
// use.
type Session struct {
	root    *Session // nil for a root session
	display string   // RenderDisplay's display id, on a view
	inlined bool     // this view already inlined the library in this render

	mu      sync.Mutex
	sent    bool   // the library went out
	carrier string // the display id of the output that carried it
}

// NewSession returns a Session that has sent nothing yet.
func NewSession() *Session { return &Session{} }

// Render returns v's display bundle, with the chart library inline only if
// the session has not sent it before.
func (s *Session) Render(v Visual) map[string]string {
	return v.Bundle(&Session{root: s.base()})
}

// RenderDisplay is Render for an output that later updates will replace
// (a Jupyter display_id): if this output carries the library, every later
// RenderDisplay with the same displayID carries it again, so that the
// final state of the output still holds it.
func (s *Session) RenderDisplay(v Visual, displayID string) map[string]string {
	return v.Bundle(&Session{root: s.base(), display: displayID})
}

// Preload returns a display bundle carrying only the chart library, if the
// session has not sent it yet (nil otherwise, or when this binary has no
// library), and marks it sent. A kernel shows it as an output of its own
// before a display it will update often (a live dashboard), so that the
// updates stay small instead of each carrying the library again. Like any
// output carrying it, the bundle must stay in the page for later charts to
// draw (see Session).
func (s *Session) Preload() map[string]string {
	if !HasLibrary() {
		return nil
	}
	b := s.base()
	b.mu.Lock()
	if b.sent {
		b.mu.Unlock()
		return nil
	}
	b.sent, b.carrier = true, ""
	b.mu.Unlock()
	lib, version := library()
	var h strings.Builder
	h.WriteString("<script>(function(){if(!window.echarts){(function(define,exports,module,require){\n")
	h.WriteString(lib)
	h.WriteString("\n}).call(window);}})();</script>\n")
	return map[string]string{
		mimeHTML:  h.String(),
		mimePlain: "(echarts " + version + ", loaded for the charts below)",
	}
}

// Fragment returns v's HTML as Render would make it.
func (s *Session) Fragment(v Visual) string { return s.Render(v)[mimeHTML] }

// Sent reports whether the session has sent the chart library.
func (s *Session) Sent() bool {
	b := s.base()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sent
}

// Reset forgets that the library was sent: the next chart carries it.
func (s *Session) Reset() {
	b := s.base()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sent, b.carrier = false, ""
}

func (s *Session) base() *Session {
	if s.root != nil {
		return s.root
	}
	return s
}

// takeLibrary reports whether the chart being rendered must carry the
// library: the first one a session renders, and the first one of each
// later render of the display that carried it.
func (s *Session) takeLibrary() bool {
	if !HasLibrary() || s.inlined {
		return false
	}
	b := s.base()
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case !b.sent:
		b.sent, b.carrier = true, s.display
	case s.display != "" && s.display == b.carrier:
	default:
		return false
	}
	s.inlined = true
	return true
}

// newID returns a fresh element id, unique across processes and renders,
// so that a fragment rendered again in the same page does not collide.
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "kiln-viz-" + hex.EncodeToString(b[:])
}

// waitTicks is how many 50 ms ticks a chart waits for the library (or for
// its element to be attached to the page) before giving up (a variable so
// that tests can shorten it).
var waitTicks = 200

// lateNote is shown when a chart rendered without the library finds none
// in the page.
const lateNote = "The chart library did not load in this page (the output that carried it may have been cleared: run the cell again): showing the static rendering."

// chartBlock renders one chart: a container holding the echarts element
// (hidden until drawn), the static SVG (shown until the chart draws, and
// wherever scripts do not run: untrusted notebooks, GitHub), a note, and a
// script wrapped in a function.
//
// The library, when inline, runs inside a function whose parameters hide
// define, exports, module and require, so that its UMD wrapper sets
// window.echarts even where RequireJS is loaded (classic Notebook), instead
// of registering an AMD module nobody asks for. Scripts run on insertion in
// JupyterLab and VS Code (re-created script elements) and in classic
// Notebook (jQuery), before or after the element is attached, so the
// script looks its container up beside itself first and waits until it is
// attached and the library is there.
func (s *Session) chartBlock(title string, width, height int, option map[string]any, svg, note string) string {
	id := newID()
	opt, err := json.Marshal(option) // escapes <, > and & as \u00XX: safe inside <script>
	if err != nil {
		opt = []byte("null")
		note = strings.TrimSpace(note + " viz: cannot encode the chart option: " + err.Error())
	}
	inline := s.takeLibrary()
	if !HasLibrary() {
		note = strings.TrimSpace(MissingLibraryNote + " " + note)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<div id="%s" class="kiln-viz" style="display:inline-block;vertical-align:top;max-width:100%%;margin:4px">`, id)
	fmt.Fprintf(&b, `<div class="kiln-viz-chart" style="width:%dpx;height:%dpx;display:none"></div>`, width, height)
	fmt.Fprintf(&b, `<img class="kiln-viz-static" alt="%s" width="%d" height="%d" style="max-width:100%%;height:auto" src="data:image/svg+xml;base64,%s">`,
		html.EscapeString(title), width, height, base64.StdEncoding.EncodeToString([]byte(svg)))
	fmt.Fprintf(&b, `<div class="kiln-viz-note" style="font:12px sans-serif;color:#a33;max-width:%dpx">%s</div>`, width, html.EscapeString(note))
	b.WriteString("</div>\n<script>(function(){\n")
	fmt.Fprintf(&b, "var id=%q,opt=%s,me=document.currentScript,tries=0;\n", id, opt)
	if inline {
		lib, _ := library()
		b.WriteString("if(!window.echarts){(function(define,exports,module,require){\n")
		b.WriteString(lib)
		b.WriteString("\n}).call(window);}\n")
	}
	fmt.Fprintf(&b, loaderJS, waitTicks, jsString(lateNote))
	b.WriteString("})();</script>\n")
	return b.String()
}

// loaderJS finds the chart's container, waits for it to be attached and
// for window.echarts, then draws. Formatted with the number of 50 ms ticks
// to wait and the note shown when the library never comes.
const loaderJS = `function root(){var r=null;if(me&&me.parentNode&&me.parentNode.querySelector){r=me.parentNode.querySelector("#"+id);}return r||document.getElementById(id);}
function draw(){
var r=root(),ec=window.echarts;
if(!r||!r.isConnected||!ec||!ec.init){
if(++tries<%d){setTimeout(draw,50);return;}
if(r&&!ec){var n0=r.querySelector(".kiln-viz-note");if(n0&&!n0.textContent){n0.textContent=%s;}}
return;}
var box=r.querySelector(".kiln-viz-chart");box.style.display="block";
var c=ec.getInstanceByDom(box)||ec.init(box,null,{renderer:"canvas"});
c.setOption(opt,true);
var img=r.querySelector(".kiln-viz-static");if(img){img.style.display="none";}
var n=r.querySelector(".kiln-viz-note");if(n){n.textContent="";}
}
draw();
`

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
