package data_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/kernel/symbols"
	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"
)

// A data set declared in interpreted code, mapped by an interpreted
// function and read by a loader whose workers call back into the
// interpreter concurrently.
func TestYaegiDataset(t *testing.T) {
	i := interp.New(interp.Options{})
	if err := i.Use(stdlib.Symbols); err != nil {
		t.Fatal(err)
	}
	if err := i.Use(symbols.Symbols); err != nil { // the kernel's tables, as notebook cells see them
		t.Fatal(err)
	}
	const src = `
package main

import (
	"context"
	"fmt"

	"github.com/kiln-ml/kiln/data"
)

type Squares struct{ N int }

func (s Squares) Len() int { return s.N }

func (s Squares) Get(i int) (data.Item, error) {
	if i == 13 {
		return data.Item{}, fmt.Errorf("thirteen")
	}
	return data.Item{X: []float32{float32(i * i)}, Label: int64(i)}, nil
}

func double(i int, it data.Item) (data.Item, error) {
	it.X[0] *= 2
	return it, nil
}

func Run(n int) string {
	ds := data.Map(data.Shuffle(Squares{n}, 3), double)
	l, err := data.NewLoader(ds, data.LoaderConfig{BatchSize: 4, Workers: 3, Shuffle: true, Seed: 5})
	if err != nil {
		return err.Error()
	}
	it := l.Iter(context.Background(), 0)
	defer it.Close()
	total, count := 0.0, 0
	for it.Next() {
		b := it.Batch()
		for _, v := range b.X.Float32s() {
			total += float64(v)
		}
		count += len(b.Y.Int64s())
		b.Release()
	}
	return fmt.Sprint(total, " ", count, " ", it.Err())
}
`
	if _, err := i.Eval(src); err != nil {
		t.Fatal(err)
	}
	v, err := i.Eval("main.Run")
	if err != nil {
		t.Fatal(err)
	}
	run := v.Interface().(func(int) string)
	if got := run(10); got != "570 10 <nil>" {
		t.Errorf("Run(10) = %q, want the sum of 2i² for i < 10 over 10 items", got)
	}
	// Base item 13 is item k of the shuffled data set the loader reads.
	k := slices.Index(data.Permutation(20, 3), 13)
	if got := run(20); !strings.HasSuffix(got, fmt.Sprintf(" item %d: thirteen", k)) {
		t.Errorf("Run(20) = %q, want an error naming item %d", got, k)
	}
}
