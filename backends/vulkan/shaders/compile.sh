#!/bin/sh
# compile.sh compiles every shaders/*.comp to spv/<name>.spv with glslc, as
# `go generate ./backends/vulkan` runs it from the package directory (and
# as TestSPIRVUpToDate checks).
set -e
for f in shaders/*.comp; do
	n=$(basename "$f" .comp)
	glslc --target-env=vulkan1.2 -O -I shaders "$f" -o "spv/$n.spv"
done
