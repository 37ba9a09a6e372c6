// Command gen writes kernel/docs/docs.json.gz: the declarations and doc
// comments of every package the kernel's cells can import (the yaegi
// symbol tables of the standard library and of Kiln). Run it through
// `go generate ./kernel/docs`.
package main
