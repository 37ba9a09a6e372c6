//go:build !desktop

package main

import (
	"fmt"
	"io"
	"os"
)

// stubMessage says how to get the real app; a build without the desktop tag
// has no window.
const stubMessage = `kiln-workbench: this binary was built without the desktop window (the "desktop" build tag).
Build the desktop app (cgo, GTK 3 and WebKitGTK 4.1) with:
    make desktop
or
    CGO_ENABLED=1 go build -tags desktop,production,webkit2_41 -o bin/kiln-workbench ./cmd/kiln-workbench
(Debian packages: libgtk-3-dev libwebkit2gtk-4.1-dev pkg-config).
Without a display, use the browser workbench instead: kiln workbench --browser`

func main() {
	os.Exit(stub(os.Stderr))
}

// stub explains how to build the desktop app and returns the exit status, 2.
func stub(w io.Writer) int {
	fmt.Fprintln(w, stubMessage)
	return 2
}
