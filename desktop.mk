# desktop.mk: the desktop workbench (cmd/kiln-workbench), the only Kiln binary
# built with cgo (Wails v2 on GTK 3 and WebKitGTK 4.1). The top-level
# Makefile includes this file.
#   make desktop           install the GTK/WebKit -dev packages when missing, build bin/kiln-workbench
#   make desktop-selftest  run its --self-test under Xvfb; screenshot in bin/screenshots/desktop.png

DESKTOP_APT_PACKAGES := libgtk-3-dev libwebkit2gtk-4.1-dev pkg-config build-essential
DESKTOP_TEST_APT_PACKAGES := xvfb xauth imagemagick
DESKTOP_TAGS := desktop,production,webkit2_41
DESKTOP_SELFTEST_TIMEOUT ?= 180

.PHONY: desktop desktop-deps desktop-selftest

desktop-deps:
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(DESKTOP_APT_PACKAGES)"

desktop: desktop-deps assets
	CGO_ENABLED=1 $(GO) build -tags $(DESKTOP_TAGS) -o bin/kiln-workbench ./cmd/kiln-workbench

# The self-test needs bin/kiln beside the app: the engine starts a real
# kernel with it.
desktop-selftest: desktop build
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(DESKTOP_TEST_APT_PACKAGES)"
	scripts/desktop-selftest.sh bin/kiln-workbench bin/screenshots/desktop.png $(DESKTOP_SELFTEST_TIMEOUT) --root notebooks --runs runs
