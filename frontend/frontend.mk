# frontend/frontend.mk: the npm side of the build, included by the top-level
# Makefile. One `npm ci` (run when frontend/node_modules is missing or older
# than the lockfile) installs both what the workbench UI is built from
# (Vite, TypeScript, CodeMirror, echarts) and the echarts library that
# viz/assets.mk copies for package viz. `make frontend` then runs
# `vite build` into frontend/web/app/ when a source changed; package
# frontend embeds that folder. Both are part of `make assets`.
#
# Without npm both steps are skipped with a warning: `go build ./...` still
# works and embeds a placeholder page that says how to build the UI.

NPM ?= npm
FRONTEND_STAMP := frontend/node_modules/.kiln-npm-ci
FRONTEND_APP := frontend/web/app/index.html
FRONTEND_SRCS := frontend/index.html frontend/vite.config.ts frontend/tsconfig.json \
	frontend/package.json frontend/package-lock.json $(wildcard frontend/src/*)

.PHONY: frontend-deps frontend frontend-check

frontend-deps:
	@if [ -f $(FRONTEND_STAMP) ] && [ $(FRONTEND_STAMP) -nt frontend/package-lock.json ]; then :; \
	elif command -v $(NPM) >/dev/null 2>&1; then \
		echo "cd frontend && $(NPM) ci"; \
		(cd frontend && $(NPM) ci --no-audit --no-fund --loglevel=error) && touch $(FRONTEND_STAMP) || exit 1; \
	else \
		echo "warning: $(NPM) not found: the workbench UI and the chart library are not built (Go embeds placeholders)"; \
	fi

frontend: frontend-deps
	@if [ ! -f $(FRONTEND_STAMP) ]; then :; \
	elif [ -f $(FRONTEND_APP) ] && [ -z "$$(find $(FRONTEND_SRCS) -newer $(FRONTEND_APP) 2>/dev/null)" ]; then :; \
	else \
		echo "cd frontend && vite build"; \
		(cd frontend && ./node_modules/.bin/vite build --logLevel warn) && touch $(FRONTEND_APP) || exit 1; \
	fi

# frontend-check type-checks the TypeScript sources (vite build only strips types).
frontend-check: frontend-deps
	cd frontend && ./node_modules/.bin/tsc --noEmit
