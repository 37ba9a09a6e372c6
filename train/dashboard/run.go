package dashboard

import (
	"context"
	"fmt"
	"io"
	"os"

	tea "github.com/charmbracelet/bubbletea"
	"golang.org/x/term"

	"github.com/kiln-ml/kiln/train"
)

// Options configure Run. The zero value shows the dashboard on standard
// output when it is a terminal.
type Options struct {
	Title  string    // shown in the dashboard's header, e.g. "mnist-mlp"
	Output io.Writer // where the dashboard or the log lines go; nil means os.Stdout
	Input  io.Reader // where keys come from on a terminal; nil means os.Stdin, or /dev/tty when stdin is not a terminal, or none
	Plain  bool      // log lines even on a terminal
	// Resume, when set, continues the run from this checkpoint or run
	// directory (train.Supervised.Resume) instead of starting afresh.
	Resume string
}

// IsTerminal reports whether w is a terminal (an *os.File, or anything
// with an Fd method, whose descriptor is a terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// fit is s.Fit, or s.Resume from dir when dir is set.
func fit(ctx context.Context, s *train.Supervised, l *train.Learner, dir string) (train.Result, error) {
	if dir != "" {
		return s.Resume(ctx, dir, l)
	}
	return s.Fit(ctx, l)
}

// Run fits s with l under ctx (or resumes, with opts.Resume). When opts.Output is a terminal (and not
// opts.Plain) it shows the dashboard while Fit runs, with an Observer added
// to a copy of s, and leaves its final state on the screen; q or ctrl+c
// cancel the run (see the package doc). Otherwise it runs Fit with plain
// log lines: s.Log, or opts.Output when s.Log is nil. s itself is not
// changed. Run returns what Fit returns. When the dashboard ends before
// the run (it failed, or was left with a second ctrl+c or SIGTERM), the run
// is cancelled; a dashboard error is then returned with Fit's result unless
// Fit returned one or completed.
func Run(ctx context.Context, s *train.Supervised, l *train.Learner, opts Options) (train.Result, error) {
	out := opts.Output
	if out == nil {
		out = os.Stdout
	}
	sup := *s
	if opts.Plain || !IsTerminal(out) {
		if sup.Log == nil {
			sup.Log = out
		}
		return fit(ctx, &sup, l, opts.Resume)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := NewModel(opts.Title, cancel, out)
	popts := []tea.ProgramOption{tea.WithOutput(out), tea.WithFilter(filterInterrupt)}
	switch {
	case opts.Input != nil:
		popts = append(popts, tea.WithInput(opts.Input))
	case !term.IsTerminal(int(os.Stdin.Fd())):
		// Keys come from the controlling terminal; without one there are
		// no keys, and SIGINT still stops the run (Bubble Tea would fail
		// to start instead).
		if tty, err := os.Open("/dev/tty"); err == nil {
			defer tty.Close()
			popts = append(popts, tea.WithInput(tty))
		} else {
			popts = append(popts, tea.WithInput(nil))
		}
	}
	p := tea.NewProgram(m, popts...)
	sup.Observers = append(append([]train.Observer(nil), s.Observers...), Observe(p))

	type outcome struct {
		res   train.Result
		err   error
		panic any
	}
	fitted := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			// A panic from Fit (a bug in a model) goes on in Run's
			// goroutine once the terminal is restored.
			o.panic = recover()
			p.Send(doneMsg{o.err})
			fitted <- o
		}()
		o.res, o.err = fit(ctx, &sup, l, opts.Resume)
	}()
	_, uiErr := p.Run()
	// The dashboard ends with the run, unless it failed or was left early
	// (a second ctrl+c, SIGTERM): then the run stops too.
	cancel()
	o := <-fitted
	if o.panic != nil {
		panic(o.panic)
	}
	if uiErr != nil && o.err == nil && o.res.Reason != train.StopCompleted {
		o.err = fmt.Errorf("dashboard: %w", uiErr)
	}
	return o.res, o.err
}

// interruptMsg is a SIGINT, which Bubble Tea reports as tea.InterruptMsg
// and would end the program with an error; the dashboard treats it as
// ctrl+c instead.
type interruptMsg struct{}

func filterInterrupt(_ tea.Model, msg tea.Msg) tea.Msg {
	if _, ok := msg.(tea.InterruptMsg); ok {
		return interruptMsg{}
	}
	return msg
}
