package workbench_test

import (
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"path/filepath"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/workbench"
)

// ExampleGraphFile records a run's model graph, so that the workbench can
// export the run's checkpoints as ONNX as well as safetensors and GGUF,
// then downloads a checkpoint the way the browser's Download button does:
// GET /api/export with the checkpoint and the format. (Not run: it needs
// a workbench serving at 127.0.0.1:8888 with token s3cret.)
func ExampleGraphFile() {
	runDir := filepath.Join("runs", "mlp")
	model := nn.NewLinear(tensor.CPU(), 4, 3)
	// … train with train.Config{RunDir: runDir}, which writes checkpoints …
	example := tensor.Zeros(tensor.CPU(), 1, 4)
	if err := onnx.Export(model, example, filepath.Join(runDir, workbench.GraphFile)); err != nil {
		log.Fatal(err)
	}

	abs, _ := filepath.Abs(filepath.Join(runDir, "checkpoints", "epoch-0001"))
	q := url.Values{"path": {abs}, "format": {"onnx"}} // or safetensors, gguf (gguf_type f32, f16, bf16, q8_0)
	req, _ := http.NewRequest("GET", "http://127.0.0.1:8888/api/export?"+q.Encode(), nil)
	req.Header.Set("Authorization", "token s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := os.Create("mlp-epoch-0001.onnx") // as Content-Disposition names it
	defer out.Close()
	io.Copy(out, resp.Body)
}
