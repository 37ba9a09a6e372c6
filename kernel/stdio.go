package kernel

import (
	"fmt"
	"os"
	"time"
)

// Cells' os.Stdout and os.Stderr.
//
// In compiled Go they are *os.File, and cells use them so:
// os.Stdout.WriteString, os.Stderr.Fd(), exec.Cmd's Stdout. yaegi can
// only make them the interpreter's io.Writers (YAEGI_SPECIAL_STDIO), which
// breaks such code, or leave them the process's files, whose output goes
// nowhere useful unless fd 1 and 2 are captured. So the session gives
// cells a pipe per stream, created with the session, whose reader routes
// what arrives to the running cell (or the last one, for goroutines still
// writing after their cell ended). They are separate from fd 1 and 2,
// which the Go runtime writes its crash reports to: what a cell does to
// its files (Fd makes them blocking, Close closes them) does not touch
// the process's descriptors.
//
// fmt.Print* and log in cells still go to the router directly (no system
// call per line); a direct write first syncs the pipes (streamPipe.sync),
// so that what a cell writes reaches its output in order, whichever way
// it went. Writes to os.Stdout and to os.Stderr travel through separate
// pipes: a write to one followed at once by a write to the other may
// arrive in the other order, as with fd 1 and 2 of any Jupyter kernel.

// cellStdio holds the pipes behind cells' os.Stdout and os.Stderr.
type cellStdio struct {
	files [3]*os.File    // the write ends, which cells see
	pipes [3]*streamPipe // their readers
}

// newCellStdio makes the pipes, delivering to r.
func newCellStdio(r *router) (*cellStdio, error) {
	c := &cellStdio{}
	for _, s := range []Stream{Stdout, Stderr} {
		pr, pw, err := os.Pipe()
		if err != nil {
			c.close()
			return nil, fmt.Errorf("kernel: pipe for cells' os.%s: %w", stdioName(s), err)
		}
		p, err := newStreamPipe(s, r, pr)
		if err != nil {
			pr.Close()
			pw.Close()
			c.close()
			return nil, fmt.Errorf("kernel: pipe for cells' os.%s: %w", stdioName(s), err)
		}
		c.files[s], c.pipes[s] = pw, p
	}
	return c, nil
}

func stdioName(s Stream) string {
	if s == Stderr {
		return "Stderr"
	}
	return "Stdout"
}

// close delivers what is pending and closes the write ends; the readers
// end once no goroutine is writing any more (at most a moment later).
func (c *cellStdio) close() {
	deadline := time.Now().Add(time.Second)
	for _, s := range []Stream{Stdout, Stderr} {
		if p := c.pipes[s]; p != nil {
			p.sync(deadline)
		}
		if f := c.files[s]; f != nil {
			f.Close()
		}
	}
	for _, p := range c.pipes {
		if p != nil {
			p.wait(time.Until(deadline) + 100*time.Millisecond)
		}
	}
}
