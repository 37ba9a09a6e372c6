// Package frontend holds the workbench's user interface, a TypeScript
// application built with Vite from this directory's package.json, and embeds
// the built files into the Go binaries that serve it (`kiln workbench
// --browser` and the desktop app).
//
// The build (`make assets`, see frontend.mk) runs `npm ci` when the lockfile
// changed and `vite build` when a source changed, writing the application to
// web/app/, which is not committed. A clean clone without npm still builds:
// Assets then serves a placeholder page that says how to build the UI.
//
// The sources, in src/:
//
//   - transport.ts reaches the engine (package workbench): inside the
//     desktop app through the bound App.Call and "workbench" Wails events,
//     in a browser through POST /api/call/{method} and the /ws WebSocket,
//     with the token from the page's URL;
//   - notebook.ts is the Notebook panel (CodeMirror 6 editors with Go
//     highlighting and completion from the kernel), outputs.ts renders
//     nbformat outputs (HTML outputs run their scripts; viz charts draw with
//     the bundled echarts);
//   - files.ts is the Files panel, the page the workbench opens on: the
//     root's folders, notebooks, runs, checkpoints and model files
//     (files.list), recent notebooks on top, each opened in its panel;
//   - runs.ts is the Runs panel (live echarts of a run's metrics, progress,
//     ETA, Stop, comparison with one colour per run and a table of the runs
//     as the legend); panels.ts the Devices, Variables, Model (the
//     session's modules to pick) and Checkpoints panels; main.ts the tabs,
//     the kernel status
//     (#kernel-status[data-status]) and the restart notice.
//
// The page exposes its panels as window.workbench for scripts and tests.
// ui_test.go drives the built UI in headless chromium against a fake engine;
// workbench/browsertest drives it against the real one.
package frontend
