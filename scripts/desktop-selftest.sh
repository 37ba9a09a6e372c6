#!/usr/bin/env bash
# desktop-selftest.sh BIN SCREENSHOT TIMEOUT_S [ARGS...]: runs the desktop
# workbench's --self-test (under xvfb-run when there is no display), takes a
# screenshot of the screen with ImageMagick once the verdict is printed, and
# exits with the app's status (124 when it ran past TIMEOUT_S).
set -u
bin=$1 shot=$2 limit=$3
shift 3
if [ -z "${DISPLAY:-}" ] && [ -z "${XVFB_INNER:-}" ]; then
	exec env XVFB_INNER=1 xvfb-run -a -s "-screen 0 1400x900x24" "$0" "$bin" "$shot" "$limit" "$@"
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
timeout "$limit" "$bin" --self-test --self-test-hold 3s --self-test-timeout "$((limit - 15))s" "$@" >"$log" 2>&1 &
app=$!
while kill -0 "$app" 2>/dev/null && ! grep -q '^SELFTEST ' "$log"; do sleep 0.5; done
if grep -q '^SELFTEST ' "$log"; then
	sleep 1
	mkdir -p "$(dirname "$shot")"
	import -window root "$shot" && echo "screenshot: $shot"
fi
wait "$app"
rc=$?
grep -v 'Overriding existing handler for signal 10' "$log"
echo "kiln-workbench --self-test: exit $rc"
exit $rc
