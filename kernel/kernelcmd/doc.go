// Package kernelcmd builds custom Kiln kernels: `kiln kernel build --with
// MODULE[@VERSION][/PKG]...` makes a kernel binary whose cells can import
// the named Go packages (gonum, the user's own module) besides the
// standard library and Kiln's, and can install it as its own kernelspec.
//
// yaegi runs compiled packages only through symbol tables generated ahead
// of time, so a package cannot be imported by a cell of a kernel that was
// not built with it; this command does that build: a temporary module
// requiring Kiln and the packages, their tables generated with yaegi's
// extract, and a main that hands them to kernel.Main. It needs the Go
// toolchain and reaches modules through the usual module proxy. yaegi's
// extract leaves out generic functions and types, which cells therefore
// cannot call; the build lists them.
package kernelcmd
