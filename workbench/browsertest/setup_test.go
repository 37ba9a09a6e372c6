//go:build unix

package browsertest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kiln-ml/kiln/frontend"
)

// browserSetup starts what a browser test needs: a Chromium tab, the
// screenshot folder (bin/screenshots, or $KILN_SCREENSHOTS) and a
// workbench. It skips the test with -short or without the built UI.
func browserSetup(t *testing.T) (ctx context.Context, shots string, w *workbench) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the browser tests build kiln and run the workbench")
	}
	if !frontend.Built() {
		t.Skip("the workbench UI is not built (frontend/web/app missing: run make assets): browser test skipped")
	}
	ctx = newTab(t)
	return ctx, screenshotDir(t), startWorkbench(t)
}

// screenshotDir returns the folder screenshots go to, made if missing.
func screenshotDir(t *testing.T) string {
	t.Helper()
	shots := filepath.Join(repoRoot(t), "bin", "screenshots")
	if d := os.Getenv("KILN_SCREENSHOTS"); d != "" {
		shots = d
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	return shots
}

// openPage opens w in the tab and waits for the page and an idle kernel.
func openPage(t *testing.T, ctx context.Context, shots string, w *workbench) *page {
	t.Helper()
	p := &page{t: t, ctx: ctx, shot: shots}
	if _, err := chromedp.Run(ctx, chromedp.Navigate(w.url)); err != nil {
		t.Fatal(err)
	}
	p.wait("the page to start", `document.body.dataset.ready === "true"`, 60*time.Second)
	p.wait("an idle kernel", `document.querySelector("#kernel-status").dataset.status === "idle"`, 120*time.Second)
	return p
}
