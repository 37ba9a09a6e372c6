package kernel

import (
	"errors"
	"fmt"
	"go/scanner"
	"regexp"
	"strconv"
	"strings"

	"github.com/traefik/yaegi/interp"
)

// ErrInterrupted is what an interrupted cell's error wraps (errors.Is).
var ErrInterrupted = errors.New("interrupted")

// ErrClosed is returned by Execute after Close.
var ErrClosed = errors.New("kernel: session closed")

// Error is a cell's failure, shaped like a Jupyter error message.
//
// Positions in the current cell read "line:col"; positions in another cell
// read "cell[N]:line:col", N counting the non-empty cells this session
// executed (Jupyter's execution_count when every request stores history).
type Error struct {
	// Name is the kind of failure (Jupyter's ename): "SyntaxError",
	// "CompileError", "ImportError", "panic", "Interrupted",
	// "InternalError" (the interpreter itself failed; the session is
	// still usable) or "UsageError" (an unknown %magic).
	Name string
	// Value is the message (Jupyter's evalue).
	Value string
	// Traceback is the message with context: the offending source line,
	// or the frames a panic unwound, innermost first.
	Traceback []string
	// Panic is the value a panicking cell panicked with (Name "panic").
	Panic any
	err   error
}

// Error returns "Name: Value".
func (e *Error) Error() string { return e.Name + ": " + e.Value }

// Unwrap returns the underlying error (ErrInterrupted for an interrupted
// cell, the panic value when it is an error).
func (e *Error) Unwrap() error { return e.err }

var cellPos = regexp.MustCompile(`cell(\d+)/_\.go:(\d+)(?::(\d+))?`)

// positions rewrites the file positions in msg into cell positions.
func positions(msg string, cell int) string {
	return cellPos.ReplaceAllStringFunc(msg, func(m string) string {
		sub := cellPos.FindStringSubmatch(m)
		n, _ := strconv.Atoi(sub[1])
		pos := sub[2]
		if sub[3] != "" {
			pos += ":" + sub[3]
		}
		if n == cell {
			return pos
		}
		return "cell[" + sub[1] + "]:" + pos
	})
}

// firstLine returns the line a message (in raw file positions) points at in
// the given cell, or 0.
func firstLine(msg string, cell int) (line, col int) {
	for _, sub := range cellPos.FindAllStringSubmatch(msg, -1) {
		if n, _ := strconv.Atoi(sub[1]); n != cell {
			continue
		}
		line, _ = strconv.Atoi(sub[2])
		col, _ = strconv.Atoi(sub[3])
		return line, col
	}
	return 0, 0
}

// excerpt returns the cell's line and a caret under col, as traceback
// lines.
func excerpt(code string, line, col int) []string {
	lines := strings.Split(code, "\n")
	if line < 1 || line > len(lines) {
		return nil
	}
	text := strings.TrimRight(lines[line-1], "\r")
	gutter := fmt.Sprintf("%4d | ", line)
	out := []string{gutter + text}
	if col >= 1 && col <= len(text)+1 {
		pad := strings.Map(func(r rune) rune {
			if r == '\t' {
				return '\t'
			}
			return ' '
		}, text[:col-1])
		out = append(out, strings.Repeat(" ", len(gutter)-2)+"| "+pad+"^")
	}
	return out
}

// compileError builds the Error for a message from the parser or yaegi.
func compileError(name string, err error, code string, cell int) *Error {
	var msgs []string
	if list, ok := err.(scanner.ErrorList); ok {
		for i, e := range list {
			if i == 10 {
				msgs = append(msgs, fmt.Sprintf("(and %d more errors)", len(list)-10))
				break
			}
			msgs = append(msgs, e.Error())
		}
	} else {
		msgs = []string{err.Error()}
	}
	raw := strings.Join(msgs, "\n")
	e := &Error{Name: name, Value: positions(raw, cell), err: err}
	e.Traceback = strings.Split(e.Value, "\n")
	if line, col := firstLine(raw, cell); line > 0 {
		e.Traceback = append(e.Traceback, excerpt(code, line, col)...)
	}
	return e
}

// panicError builds the Error for a cell that panicked. frames are yaegi's
// "pos: panic: f(...)" lines, innermost first.
// bodyLine is the line of the cell-body statement that was running (0 if
// unknown): the outermost frame, "N: in the cell".
func panicError(p interp.Panic, frames []string, code string, cell, bodyLine int) *Error {
	value := fmt.Sprint(p.Value)
	if err, ok := p.Value.(error); ok {
		value = err.Error()
	}
	e := &Error{Name: "panic", Value: value, Panic: p.Value}
	if err, ok := p.Value.(error); ok {
		e.err = err
	}
	e.Traceback = []string{"panic: " + value}
	// Frames of functions point at the failing line; yaegi's position for
	// the cell body itself (main) often does not, so it is left out.
	quoted := false
	for _, f := range frames {
		pos, fn, ok := strings.Cut(strings.TrimSuffix(f, "(...)"), ": panic: ")
		if !ok || fn == "main" {
			continue
		}
		e.Traceback = append(e.Traceback, "    "+positions(pos, cell)+": in "+strings.TrimPrefix(fn, "main."))
		if line, col := firstLine(f, cell); line > 0 && !quoted {
			e.Traceback = append(e.Traceback, excerpt(code, line, col)...)
			quoted = true
		}
	}
	if bodyLine > 0 {
		e.Traceback = append(e.Traceback, fmt.Sprintf("    %d: in the cell", bodyLine))
		if !quoted {
			e.Traceback = append(e.Traceback, excerpt(code, bodyLine, 0)...)
		}
	}
	return e
}
