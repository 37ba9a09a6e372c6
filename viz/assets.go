package viz

import (
	"embed"
	"regexp"
	"strings"
	"sync"
)

// The build (make assets, viz/assets.mk) copies echarts.min.js from the
// npm package pinned in frontend/package.json into assets/; a clean clone
// holds only assets/README.md, which keeps this pattern valid without npm.
//
//go:embed assets
var assetFS embed.FS

const libraryFile = "assets/echarts.min.js"

// MissingLibraryNote is what a chart says in place of its interactive
// rendering when the binary was built without the chart library.
const MissingLibraryNote = "This binary was built without the chart library (run make): showing the static rendering."

var library = sync.OnceValues(func() (string, string) {
	b, err := assetFS.ReadFile(libraryFile)
	if err != nil || len(b) == 0 {
		return "", ""
	}
	js := string(b)
	// Inline in a <script>, the text must not close the element or open
	// an HTML comment; "<\/" means the same in JavaScript strings and
	// regular expressions.
	js = strings.ReplaceAll(js, "</", `<\/`)
	js = strings.ReplaceAll(js, "<!--", `<\!--`)
	version := ""
	if m := regexp.MustCompile(`\.version="(\d+\.\d+\.\d+[^"]*)"`).FindStringSubmatch(js); m != nil {
		version = m[1]
	}
	return js, version
})

// HasLibrary reports whether the echarts library was embedded when this
// binary was built. Without it every chart still shows its static SVG
// rendering, with MissingLibraryNote beside it.
func HasLibrary() bool { js, _ := library(); return js != "" }

// LibraryVersion returns the embedded echarts version ("5.6.0"), or "" when
// the library is missing.
func LibraryVersion() string { _, v := library(); return v }
