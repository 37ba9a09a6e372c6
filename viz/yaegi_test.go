package viz_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"

	"github.com/kiln-ml/kiln/kernel/symbols"
)

// Charts, a dashboard sink and a Visual declared in interpreted code, as
// in a notebook cell, through the kernel's symbol tables.
func TestYaegiNotebookUse(t *testing.T) {
	i := interp.New(interp.Options{})
	for _, s := range []map[string]map[string]reflect.Value{stdlib.Symbols, symbols.Symbols} {
		if err := i.Use(s); err != nil {
			t.Fatal(err)
		}
	}
	const src = `
package main

import (
	"fmt"
	"time"

	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
	"github.com/kiln-ml/kiln/viz"
)

type Sink struct{ Updates, Points int; Final bool }

func (s *Sink) Update(u viz.DashboardUpdate) {
	s.Updates++
	s.Points += len(u.Points)
	s.Final = s.Final || u.Final
	_ = u.Board()
}

type Mine struct{}

func (Mine) Bundle(s *viz.Session) map[string]string { return map[string]string{"text/plain": "mine"} }

func Run() string {
	xs := []float64{0, 1, 2}
	line := viz.Line(xs, []float64{1, 4, 9}).SetTitle("squares")
	hist := viz.Histogram(tensor.Randn(tensor.CPU(), 100))
	sink := &Sink{}
	d := viz.NewLiveDashboard(sink, viz.DashboardConfig{})
	for step := 1; step <= 50; step++ {
		d.OnEvent(train.Event{Kind: train.EventStep, Time: time.Now(), Step: step, Metrics: train.Values{"loss": 1 / float64(step)}})
	}
	d.OnEvent(train.Event{Kind: train.EventEnd, Step: 50})
	s := viz.NewSession()
	mine := viz.For(Mine{})
	return fmt.Sprintf("%s|%s|%d|%d|%v|%s|%s", line.String(), hist.Key(), sink.Points, d.Final().Chart("step_loss").Points(),
		sink.Final, s.Render(mine)["text/plain"], s.Render(line)["text/plain"])
}
`
	if _, err := i.Eval(src); err != nil {
		t.Fatal(err)
	}
	v, err := i.Eval("main.Run()")
	if err != nil {
		t.Fatal(err)
	}
	got := v.Interface().(string)
	want := `chart "squares": 1 series (y), 3 points|histogram|50|100|true|mine|chart "squares": 1 series (y), 3 points`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if strings.Contains(got, "%!") {
		t.Fatal(got)
	}
}
