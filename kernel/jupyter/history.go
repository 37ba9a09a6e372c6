package jupyter

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
)

// HistoryEntry is one executed cell: the session it ran in (numbered from 1
// per kernel start), its execution count, its code, and the text/plain form
// of its result (nil when it had none).
type HistoryEntry struct {
	Session int     `json:"session"`
	Line    int     `json:"line"`
	Input   string  `json:"input"`
	Output  *string `json:"output,omitempty"`
}

// History keeps executed cells for history_request. It lives in memory and,
// when opened with a file, appends every entry to that file as a JSON line
// and loads earlier sessions from it at start. Methods are safe for
// concurrent use.
type History struct {
	mu      sync.Mutex
	session int
	entries []HistoryEntry // all sessions, in order
	file    *os.File
}

// NewHistory returns a History for a new session. With path "" it only keeps
// memory; otherwise it reads the earlier sessions from path (lines that do
// not parse are skipped) and appends to it. It fails if the file cannot be
// opened.
func NewHistory(path string) (*History, error) {
	h := &History{session: 1}
	if path == "" {
		return h, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("jupyter: history: %w", err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for sc.Scan() {
		var e HistoryEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Session <= 0 {
			continue
		}
		h.entries = append(h.entries, e)
		h.session = max(h.session, e.Session+1)
	}
	h.file = f
	return h, nil
}

// Session returns the current session number.
func (h *History) Session() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.session
}

// Add records a cell of the current session. A failed write to the history
// file is returned; the entry stays in memory regardless.
func (h *History) Add(line int, input string, output *string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := HistoryEntry{Session: h.session, Line: line, Input: input, Output: output}
	h.entries = append(h.entries, e)
	if h.file == nil {
		return nil
	}
	b, _ := json.Marshal(e)
	if _, err := h.file.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("jupyter: history: %w", err)
	}
	return nil
}

// Close closes the history file.
func (h *History) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.file == nil {
		return nil
	}
	err := h.file.Close()
	h.file = nil
	return err
}

// Tail returns the last n entries over all sessions, oldest first
// (n <= 0: none).
func (h *History) Tail(n int) []HistoryEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n <= 0 {
		return nil
	}
	return append([]HistoryEntry(nil), h.entries[max(0, len(h.entries)-n):]...)
}

// Range returns the entries of session with start <= line < stop, as
// IPython does: session 0 or less counts back from the current session
// (0 is the current one, -1 the one before), and stop <= 0 means no end.
func (h *History) Range(session, start, stop int) []HistoryEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	if session <= 0 {
		session += h.session
	}
	var out []HistoryEntry
	for _, e := range h.entries {
		if e.Session == session && e.Line >= start && (stop <= 0 || e.Line < stop) {
			out = append(out, e)
		}
	}
	return out
}

// Search returns entries whose input matches the glob pattern (* matches
// any text including newlines, ? one character, [...] a class), oldest
// first. n > 0 keeps only the last n matches; unique drops repeated inputs,
// keeping the latest.
func (h *History) Search(pattern string, n int, unique bool) []HistoryEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	if pattern == "" {
		pattern = "*"
	}
	var out []HistoryEntry
	seen := map[string]bool{}
	for i := len(h.entries) - 1; i >= 0; i-- {
		e := h.entries[i]
		if !globMatch(pattern, e.Input) || (unique && seen[e.Input]) {
			continue
		}
		seen[e.Input] = true
		out = append(out, e)
		if n > 0 && len(out) == n {
			break
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// globMatch matches s against a glob pattern the way SQLite's GLOB (which
// IPython's history search uses) does: case-sensitive, * and ? match any
// character including '/' and newlines, [abc], [a-z] and [^a-z] classes.
func globMatch(pattern, s string) bool {
	p, t := []rune(pattern), []rune(s)
	// Iterative matcher with backtracking to the last star.
	pi, ti, starP, starT := 0, 0, -1, 0
	for ti < len(t) {
		if pi < len(p) {
			switch p[pi] {
			case '*':
				starP, starT = pi, ti
				pi++
				continue
			case '?':
				pi++
				ti++
				continue
			case '[':
				if end, ok := matchClass(p, pi, t[ti]); end > 0 {
					if ok {
						pi = end
						ti++
						continue
					}
				} else if t[ti] == '[' { // unterminated class: literal '['
					pi++
					ti++
					continue
				}
			default:
				if p[pi] == t[ti] {
					pi++
					ti++
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		starT++
		pi, ti = starP+1, starT
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// matchClass matches c against the class starting at p[i] == '['. It
// returns the index after the closing ']' (0 if there is none) and whether
// c is in the class.
func matchClass(p []rune, i int, c rune) (int, bool) {
	j := i + 1
	negate := false
	if j < len(p) && (p[j] == '^' || p[j] == '!') {
		negate = true
		j++
	}
	in := false
	first := true
	for ; j < len(p); j++ {
		if p[j] == ']' && !first {
			return j + 1, in != negate
		}
		first = false
		if j+2 < len(p) && p[j+1] == '-' && p[j+2] != ']' {
			if p[j] <= c && c <= p[j+2] {
				in = true
			}
			j += 2
			continue
		}
		if p[j] == c {
			in = true
		}
	}
	return 0, false
}
