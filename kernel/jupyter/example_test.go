package jupyter_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/kiln-ml/kiln/kernel/jupyter"
)

// shout is a complete (if useless) language: a cell's value is its code in
// capitals, and "say X" prints X. BaseHandler answers completion,
// inspection and the rest.
type shout struct{ jupyter.BaseHandler }

func (shout) KernelInfo() jupyter.KernelInfo {
	return jupyter.KernelInfo{Implementation: "shout", LanguageInfo: jupyter.LanguageInfo{
		Name: "shout", Mimetype: "text/plain", FileExtension: ".txt"}}
}

func (shout) Execute(ctx context.Context, req jupyter.ExecuteRequest, out jupyter.Output) jupyter.ExecuteResult {
	if text, ok := strings.CutPrefix(req.Code, "say "); ok {
		fmt.Fprintln(out.Stdout(), text)
		return jupyter.ExecuteResult{}
	}
	return jupyter.ExecuteResult{Data: jupyter.MimeBundle{"text/plain": strings.ToUpper(req.Code)}}
}

// A kernel serving a Handler, and a client driving it. A kernel process
// would call jupyter.Run(ctx, connectionFile, handler, nil) instead.
func Example() {
	srv, err := jupyter.NewServer(jupyter.Config{
		Connection: jupyter.ConnectionInfo{IP: "127.0.0.1", Key: jupyter.NewID()}, // port 0: any free port
		Handler:    shout{},
	})
	if err != nil {
		panic(err)
	}
	go srv.Serve(context.Background())

	ctx := context.Background()
	c, err := jupyter.Dial(ctx, srv.ConnectionInfo(), nil)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	if _, err := c.WaitForReady(ctx); err != nil {
		panic(err)
	}
	show := &jupyter.ExecuteHandlers{Output: func(m *jupyter.Message) {
		switch m.Type() {
		case "stream":
			var s jupyter.Stream
			m.Decode(&s)
			fmt.Printf("%s: %s", s.Name, s.Text)
		case "execute_result":
			var r jupyter.ExecuteResultContent
			m.Decode(&r)
			fmt.Printf("Out[%d]: %s\n", r.ExecutionCount, r.Data["text/plain"])
		}
	}}
	c.Execute(ctx, jupyter.NewExecuteRequest("say hello"), show)
	c.Execute(ctx, jupyter.NewExecuteRequest("quiet please"), show)
	c.Shutdown(ctx, false)
	// Output:
	// stdout: hello
	// Out[2]: QUIET PLEASE
}
