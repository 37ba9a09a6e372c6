# Kiln's build. Two commands do everything on a fresh Debian 12 machine:
#   make run    build, install what is missing, open the workbench
#   make test   all tests (what CI runs)
# Other targets: demo, desktop, bench, bench-compare, lint, test-long, fixtures, deps,
# screenshots (docs/screenshots/).

SHELL := /bin/bash
GO ?= $(shell command -v go || echo /usr/local/go/bin/go)
export PATH := $(dir $(GO)):$(PATH)
export CGO_ENABLED ?= 0
# Debian's Python with its packages (PyTorch, numpy, Jupyter); `python3` on
# PATH may be another interpreter without them.
PYTHON := /usr/bin/python3
STATICCHECK_VERSION := v0.8.2
GOTESTFLAGS ?=

# System packages the tests and tools use, installed when missing. The
# Jupyter ones drive the real kernel in kernel/kerneltest (the conformance
# suite, nbconvert on notebooks/) and kernel/jupyter's client tests; gcc
# builds the race detector's runtime; openmpi-bin is what dist's tests run
# under mpirun (dist loads libmpi.so.40 at run time, no headers needed);
# python3-torchvision builds the torchvision models onnx's tests import and
# python3-opencv runs the models Kiln exports in a second ONNX runtime.
APT_PACKAGES := python3 python3-numpy python3-jupyter-client python3-jupyter-kernel-test \
	python3-nbclient python3-nbformat jupyter-nbconvert python3-onnx chromium gcc g++ libc6-dev \
	openmpi-bin tmux libonnx-testdata python3-torchvision python3-opencv \
	mesa-vulkan-drivers libvulkan1 glslc nodejs
# Extra packages only for regenerating fixtures and comparing with PyTorch.
APT_FIXTURE_PACKAGES := python3-torch python3-numpy python3-onnx libopenblas0-pthread


.PHONY: all build run demo test test-unit test-race test-wasm fuzz test-long bench shaders lint screenshots fmt-check vet staticcheck deps deps-fixtures fixtures clean

all: build

# deps installs missing Debian packages (as root, or through sudo), waiting
# while another apt holds the lock (scripts/apt-install.sh).
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		scripts/apt-install.sh $$missing; \
	fi
	@# The workbench UI and the charts' script come from npm (frontend/package-lock.json).
	@# Debian's nodejs and npm when no npm is on PATH (one from NodeSource is kept).
	@command -v npm >/dev/null 2>&1 || { echo "installing: nodejs npm"; scripts/apt-install.sh nodejs npm; }
	@$(GO) version >/dev/null 2>&1 || { echo "Go 1.26 is required (https://go.dev/dl or /usr/local/go)"; exit 1; }

deps-fixtures:
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(APT_FIXTURE_PACKAGES)"

build: deps assets
	$(GO) build -o bin/kiln ./cmd/kiln

# run opens the workbench on notebooks/: the desktop window when a display
# is present and the desktop app builds, otherwise the browser workbench
# (it prints the URL to open).
run: build
	@if { [ -n "$$DISPLAY" ] || [ -n "$$WAYLAND_DISPLAY" ]; } && $(MAKE) --no-print-directory desktop; then \
		echo "./bin/kiln-workbench --root notebooks"; exec ./bin/kiln-workbench --root notebooks; \
	else \
		echo "no display or no desktop build: starting the browser workbench"; \
		echo "./bin/kiln workbench --browser --root notebooks"; exec ./bin/kiln workbench --browser --root notebooks; \
	fi

# demo trains the MNIST MLP for two epochs with a live dashboard (log lines
# when stdout is not a terminal) and writes its run under runs/.
demo: build
	./bin/kiln demo

test: deps lint test-unit test-race test-wasm fuzz desktop-selftest

# fuzz runs every parser's fuzz target briefly (FUZZTIME each); longer runs:
# make fuzz FUZZTIME=10m.
FUZZTIME ?= 5s
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) sh scripts/fuzz.sh

test-unit: assets
	KILN_REQUIRE_TORCHVISION=1 KILN_REQUIRE_OPENCV=1 $(GO) test $(GOTESTFLAGS) -count=1 ./...
	$(GO) test $(GOTESTFLAGS) -count=1 -tags purego ./backends/cpu/...
	KILN_TEST_DEVICES=strict+fused,cpu+fused $(GO) test $(GOTESTFLAGS) -count=1 ./tensor/
	GO=$(GO) sh scripts/remote-suite.sh $(GOTESTFLAGS) ./tensor/ ./nn/

# test-wasm builds tensor, nn, optim, train, store, data and metrics for
# js/wasm and wasip1/wasm and runs their tests (-short, minus the slow
# finite-difference checks the native run makes) under Node with Go's
# go_js_wasm_exec; nodejs comes from APT_PACKAGES.
test-wasm:
	GO=$(GO) bash scripts/test-wasm.sh $(GOTESTFLAGS)

# test-race runs every test again under the race detector, which needs cgo
# (gcc from APT_PACKAGES) and turns on checkptr, so an unsafe view past its
# allocation aborts the test as a data race does. The plain run above keeps
# the CGO_ENABLED=0 build that ships, and the purego CPU build (its portable
# kernels hold no unsafe code of their own; the views they get are the
# ones checked here).
# test-race leaves out the headless-Chromium suite (workbench/browsertest,
# two minutes under the detector, its time spent in the browser): the
# workbench server's concurrency is checked under the detector by the
# workbench package's own HTTP and WebSocket tests, the pages by the plain run.
test-race: assets
	CGO_ENABLED=1 $(GO) test $(GOTESTFLAGS) -race -count=1 -timeout 20m $$($(GO) list ./... | grep -v /workbench/browsertest$$)

# Slow accuracy runs kept out of `make test`. The MNIST training runs (nn's
# and the `make run` demo's, cmd/kiln's TestTrainMNISTDemo) go last, verbose,
# so that their epoch times and accuracies are printed.
test-long: deps assets
	$(GO) test $(GOTESTFLAGS) -count=1 -tags long -timeout 60m -skip '^TestTrainMNIST' ./...
	$(GO) test $(GOTESTFLAGS) -count=1 -tags long -timeout 60m -run '^TestTrainMNIST' -v ./nn ./cmd/kiln

# shaders recompiles the Vulkan backend's GLSL compute shaders into the
# committed SPIR-V (backends/vulkan/spv) with glslc.
shaders: deps
	$(GO) generate ./backends/vulkan

bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 1s -count 1 ./backends/cpu ./tensor

include backends/cpu/bench.mk
include backends/cuda/cuda.mk
include viz/assets.mk
include frontend/frontend.mk
include desktop.mk

# screenshots regenerates docs/screenshots/ (linked from README.md): the
# workbench's main views and a notebook's live dashboard, as the browser
# tests see them in headless Chromium. The tests write into a scratch
# folder; the chosen pictures are copied over the committed ones.
SCREENSHOTS := workbench-files.jpg workbench-variables.jpg workbench-model.jpg workbench-run-live.jpg \
	workbench-runs-compare.jpg workbench-checkpoints.jpg workbench-devices.jpg workbench-runs-registry-live.jpg \
	workbench-runs-empty.jpg workbench-variables-running.jpg workbench-files-onnx.jpg runs-smoothing.jpg \
	kernel/dashboard-mid-run.jpg kernel/dashboard-final.jpg
screenshots: deps assets
	@rm -rf bin/screenshots-docs && mkdir -p bin/screenshots-docs docs/screenshots
	KILN_SCREENSHOTS=$(CURDIR)/bin/screenshots-docs $(GO) test -count=1 -run '^(TestBrowserEndToEnd|TestBrowserRegistryRun|TestBrowserFileBrowser|TestBrowserVariablesWhileCellRuns|TestBrowserFileInspect)$$' ./workbench/browsertest
	KILN_SCREENSHOTS=$(CURDIR)/bin/screenshots-docs $(GO) test -count=1 -run '^TestRunViewSmoothsConstantsAndDownloads$$' ./workbench
	KILN_TEST_OUT=$(CURDIR)/bin/screenshots-docs $(GO) test -count=1 -run '^TestLiveDashboardInBrowser$$' ./kernel
	@for f in $(SCREENSHOTS); do cp bin/screenshots-docs/$$f docs/screenshots/$$(basename $$f) || exit 1; done
	@echo "docs/screenshots/: $(words $(SCREENSHOTS)) pictures"

lint: fmt-check vet staticcheck asm-check

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# fixtures regenerates the PyTorch/NumPy reference values tests compare with
# (every */testdata/gen_*.py script; tests themselves never need Python).
fixtures: deps-fixtures
	@for f in $$(git ls-files '*/testdata/gen_*.py'); do echo "$(PYTHON) $$f"; (cd $$(dirname $$f) && $(PYTHON) $$(basename $$f)) || exit 1; done

clean:
	rm -rf bin
	rm -f viz/assets/echarts.min.js
	rm -rf frontend/web/app
