// Package chromium starts Debian's headless Chromium for Kiln's browser
// tests (viz's charts, the notebook HTML export, the workbench UI), with the
// flags this project's machines need: no sandbox (tests run as root in CI),
// no GPU, no background networking (the machines reach no network, and
// Chromium's attempts fail noisily), a fresh profile per test.
package chromium
