package kernel

import (
	"context"
	"io"
	"sync"
)

// InputOutput is an Output that can also ask the user for a line of input
// (Jupyter's input_request). When the running cell's Output implements it,
// reads from os.Stdin inside the cell (fmt.Scanln, bufio.Reader, …) prompt
// the front end; otherwise they see end of file.
type InputOutput interface {
	Output
	// Input returns one line typed by the user, without its newline. It
	// fails when the front end does not allow input or the cell is
	// interrupted.
	Input(ctx context.Context, prompt string, password bool) (string, error)
}

// stdinReader is the interpreter's os.Stdin: each time its buffer runs dry
// it asks the running cell's Output for another line.
type stdinReader struct {
	s   *Session
	mu  sync.Mutex
	buf []byte
}

// Read implements io.Reader.
func (r *stdinReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) == 0 {
		r.s.router.mu.Lock()
		out := r.s.router.current
		r.s.router.mu.Unlock()
		in, ok := out.(InputOutput)
		if !ok {
			return 0, io.EOF
		}
		r.s.router.catchUp() // show any prompt printed before asking
		r.s.router.flush()
		line, err := in.Input(r.s.cellContext(), "", false)
		if err != nil {
			return 0, io.EOF
		}
		r.buf = append([]byte(line), '\n')
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}
