# viz/assets.mk: the chart library that package viz embeds. The top-level
# Makefile includes this file; `make assets` (a prerequisite of build and
# test-unit there) installs the pinned npm packages (frontend/frontend.mk's
# frontend-deps), copies echarts.min.js into viz/assets/, where
# `//go:embed assets` picks it up, and builds the workbench UI.
#
# Without npm the copy is skipped with a warning: Go still builds, and the
# binary draws static SVG charts and says it lacks the chart library.

ECHARTS_SRC := frontend/node_modules/echarts/dist/echarts.min.js
ECHARTS_DST := viz/assets/echarts.min.js

.PHONY: assets

assets: frontend-deps frontend
	@if [ -f $(ECHARTS_SRC) ] && ! cmp -s $(ECHARTS_SRC) $(ECHARTS_DST); then \
		echo "cp $(ECHARTS_SRC) $(ECHARTS_DST)"; cp $(ECHARTS_SRC) $(ECHARTS_DST); \
	fi
