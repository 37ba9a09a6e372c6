package workbench_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/kiln-ml/kiln/kernel/jupyter"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/workbench"
)

// ExampleServer_Call_filesInspect asks the workbench what a model file
// under its root holds, as its file browser does when the file is
// clicked: the report `kiln inspect` prints (for ONNX, with whether
// onnx.Load accepts the model). A file of no model format is an error
// wrapping ErrNotModelFile.
func ExampleServer_Call_filesInspect() {
	root, err := os.MkdirTemp("", "kiln-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	w := tensor.FromFloat32s(tensor.CPU(), []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	if err := store.WriteSafetensors(filepath.Join(root, "w.safetensors"), map[string]*tensor.Tensor{"fc.weight": w}, nil); err != nil {
		log.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("hello"), 0o644)

	// The workbench needs a kernel; the file browser does not use it.
	conn, stop := exampleKernel(root)
	defer stop()
	srv, err := workbench.New(context.Background(), workbench.Config{Root: root, Existing: conn})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	res, err := srv.Call(context.Background(), "files.inspect", json.RawMessage(`{"path": "w.safetensors"}`))
	if err != nil {
		log.Fatal(err)
	}
	b, _ := json.Marshal(res)
	var rep struct{ Format, Report string }
	json.Unmarshal(b, &rep)
	fmt.Print(rep.Format, "\n", rep.Report)

	_, err = srv.Call(context.Background(), "files.inspect", json.RawMessage(`{"path": "notes.txt"}`))
	fmt.Println(errors.Is(err, workbench.ErrNotModelFile), err)
	// Output:
	// safetensors
	// file      w.safetensors (104 B)
	// metadata  (none)
	// tensors   1, 6 elements, 24 B of data
	//   NAME       DTYPE  SHAPE  SIZE
	//   fc.weight  F32    [2 3]  24 B
	// true files.inspect: notes.txt is not a safetensors, GGUF or ONNX file: it starts with the text "hello"
}

// exampleKernel serves a fakeKernel and writes its connection file in dir.
func exampleKernel(dir string) (conn string, stop func()) {
	srv, err := jupyter.NewServer(jupyter.Config{
		Connection: jupyter.ConnectionInfo{Transport: "tcp", IP: "127.0.0.1", SignatureScheme: "hmac-sha256", Key: jupyter.NewID()},
		Handler:    &fakeKernel{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), NoSignalHandler: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx); close(done) }()
	conn = filepath.Join(dir, ".kernel.json")
	if err := srv.ConnectionInfo().WriteFile(conn); err != nil {
		log.Fatal(err)
	}
	return conn, func() { cancel(); <-done }
}
