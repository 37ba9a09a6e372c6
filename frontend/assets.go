package frontend

import (
	"embed"
	"io/fs"
)

//go:embed all:web
var web embed.FS

// Assets returns the workbench UI's files, rooted so that "index.html" is the
// page to serve at "/". Where the UI was not built (no web/app/index.html),
// it returns a file system holding only index.html, the placeholder page.
func Assets() fs.FS {
	if app, err := fs.Sub(web, "web/app"); err == nil {
		if _, err := fs.Stat(app, "index.html"); err == nil {
			return app
		}
	}
	return placeholderFS{}
}

// Built reports whether the real UI (not the placeholder) is embedded.
func Built() bool {
	_, err := fs.Stat(web, "web/app/index.html")
	return err == nil
}

// placeholderFS serves web/placeholder.html as index.html.
type placeholderFS struct{}

func (placeholderFS) Open(name string) (fs.File, error) {
	if name == "index.html" {
		return web.Open("web/placeholder.html")
	}
	if name == "." {
		return web.Open("web")
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}
