// Package docs holds the documentation the kernel's inspection shows: the
// declaration and doc comment of every exported name of Kiln's packages and
// of the standard-library packages a cell can import, extracted from their
// sources with go/doc by `go generate ./kernel/docs` and embedded
// compressed (docs.json.gz), so a kernel answers `nn.NewLinear?` with the
// doc comment without Go sources on the machine.
//
// Keys are "import/path.Name" for package-level names and
// "import/path.Type.Method" for methods; Lookup finds an entry.
package docs

//go:generate go run ./gen -out docs.json.gz
