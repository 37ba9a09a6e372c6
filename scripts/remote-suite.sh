#!/bin/sh
# remote-suite.sh runs test packages (default: ./tensor/) once more with a
# device served by `kiln serve` on loopback added to every test's devices
# (KILN_TEST_DEVICES=remote://127.0.0.1:PORT/cpu:0): the same tests, the
# same expected values, each call crossing a gRPC stream to another
# process. The server listens on a port the kernel picks, with a random
# token, and is stopped when the tests end, pass or fail.
set -eu
GO=${GO:-go}
dir=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT INT TERM
"$GO" build -o "$dir/kiln" ./cmd/kiln
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
"$dir/kiln" serve --addr 127.0.0.1:0 --token "$token" >"$dir/out" 2>"$dir/log" &
pid=$!
addr=
for _ in $(seq 100); do
	addr=$(sed -n 's/^kiln serve: listening on \([^ ]*\) .*/\1/p' "$dir/out")
	[ -n "$addr" ] && break
	kill -0 "$pid" 2>/dev/null || { cat "$dir/log" >&2; echo "remote-suite: kiln serve exited" >&2; exit 1; }
	sleep 0.1
done
[ -n "$addr" ] || { echo "remote-suite: kiln serve printed no address" >&2; exit 1; }
echo "remote-suite: kiln serve on $addr"
[ $# -gt 0 ] || set -- ./tensor/
KILN_REMOTE_TOKEN=$token KILN_TEST_DEVICES=remote://$addr/cpu:0 "$GO" test -count=1 "$@"
