# viz/assets.mk: the chart library that package viz embeds. The top-level
# Makefile includes this file; `make assets` (a prerequisite of build and
# test-unit there) installs the pinned npm package and copies its
# echarts.min.js into viz/assets/, where `//go:embed assets` picks it up.
#
# Without npm the copy is skipped with a warning: Go still builds, and the
# binary draws static SVG charts and says it lacks the chart library.

NPM ?= npm
ECHARTS_SRC := frontend/node_modules/echarts/dist/echarts.min.js
ECHARTS_DST := viz/assets/echarts.min.js

.PHONY: assets

assets:
	@if [ -f $(ECHARTS_SRC) ] && [ $(ECHARTS_SRC) -nt frontend/package-lock.json ]; then :; \
	elif command -v $(NPM) >/dev/null 2>&1; then \
		echo "cd frontend && $(NPM) ci"; \
		(cd frontend && $(NPM) ci --no-audit --no-fund --loglevel=error) && touch $(ECHARTS_SRC) || exit 1; \
	else \
		echo "warning: $(NPM) not found: charts will be built without the echarts library (static SVG only)"; \
	fi
	@if [ -f $(ECHARTS_SRC) ] && ! cmp -s $(ECHARTS_SRC) $(ECHARTS_DST); then \
		echo "cp $(ECHARTS_SRC) $(ECHARTS_DST)"; cp $(ECHARTS_SRC) $(ECHARTS_DST); \
	fi
