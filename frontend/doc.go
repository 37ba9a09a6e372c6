// Package frontend holds the workbench's user interface, a TypeScript
// application built with Vite from this directory's package.json, and embeds
// the built files into the Go binaries that serve it (`kiln workbench
// --browser` and the desktop app).
//
// The build (`make assets`) writes the application to web/app/, which is not
// committed. A clean clone without npm still builds: Assets then serves a
// placeholder page that says how to build the UI.
package frontend
