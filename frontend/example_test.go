package frontend_test

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"

	"github.com/kiln-ml/kiln/frontend"
)

// Serving the UI: the built application, or the placeholder page in a
// build without npm, is at index.html either way.
func ExampleAssets() {
	srv := httptest.NewServer(http.FileServerFS(frontend.Assets()))
	defer srv.Close()
	res, err := http.Get(srv.URL + "/")
	if err != nil {
		panic(err)
	}
	res.Body.Close()
	_, statErr := fs.Stat(frontend.Assets(), "index.html")
	fmt.Println(res.StatusCode, statErr == nil)
	// Output: 200 true
}
