package chromium

import (
	"context"
	"os"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// Path returns the Chromium the tests use, $KILN_CHROMIUM or
// /usr/bin/chromium, and whether it exists.
func Path() (string, bool) {
	path := "/usr/bin/chromium"
	if p := os.Getenv("KILN_CHROMIUM"); p != "" {
		path = p
	}
	_, err := os.Stat(path)
	return path, err == nil
}

// New starts a headless Chromium with a fresh profile and a window of
// width × height and returns a tab; both are closed when t ends. It skips
// t, saying why, when there is no Chromium.
func New(t testing.TB, width, height int) context.Context {
	t.Helper()
	path, ok := Path()
	if !ok {
		t.Skipf("no chromium at %s (apt-get install chromium, or set KILN_CHROMIUM): browser test skipped", path)
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); acancel() })
	return ctx
}

// Offline cuts the network of the tab ctx, so a page can only use what it
// carries (a check that nothing is fetched from a CDN).
func Offline(ctx context.Context) error {
	off := func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
			return chromedp.Void{}, err
		}
		_, err := cdp.Call(ctx, tg, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
			MatchedNetworkConditions: []*network.Conditions{{Offline: true, DownloadThroughput: -1, UploadThroughput: -1}}})
		return chromedp.Void{}, err
	}
	return chromedp.Do(ctx, off)
}
