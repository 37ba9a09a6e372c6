package workbench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"

	"github.com/kiln-ml/kiln/frontend"
	"github.com/kiln-ml/kiln/workbench"
)

// printer is a Publisher that prints the live updates.
type printer struct{}

func (printer) Publish(topic string, data any) { fmt.Println(topic, data) }

// Example serves the workbench to a browser, as `kiln workbench --browser`
// does: a kernel started from the kiln binary, notebooks under the working
// directory, the UI and the API behind a token. (Not run: it starts a
// kernel and serves until killed.)
func Example() {
	srv, err := workbench.New(context.Background(), workbench.Config{
		Root: ".", Kiln: "/usr/local/bin/kiln", Token: "s3cret", Assets: frontend.Assets(),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	cancel := srv.Subscribe(printer{}) // kernel.status, cell.output, run.update, …
	defer cancel()
	res, err := srv.Call(context.Background(), "kernel.execute", json.RawMessage(`{"code": "1 + 1"}`))
	fmt.Println(res, err)
	log.Fatal(http.ListenAndServe("127.0.0.1:8888", srv.Handler())) // open /?token=s3cret
}

// ExampleNew shows New's answer to a Config that cannot run any kernel.
func ExampleNew() {
	_, err := workbench.New(context.Background(), workbench.Config{Root: "."})
	fmt.Println(err)
	// Output: workbench: Config needs Kiln (the kiln binary that runs kernels) or Existing
}
