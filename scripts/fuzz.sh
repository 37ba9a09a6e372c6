#!/bin/sh
# fuzz.sh runs every fuzz target in the module for FUZZTIME each (make fuzz).
#
# Go 1.26's fuzzing coordinator can end a time-limited run with a bare
# "context deadline exceeded" and a failing status although no input failed:
# when -fuzztime runs out while a starved worker is still inside a call, the
# worker's cancelled context escapes the check that treats the deadline as
# a normal end (go.dev/issue/75804, fixed in Go 1.27). On a busy 2-core
# machine that happens now and then. A real finding always writes its input
# under testdata/fuzz/ and says "Failing input written to", and a crash
# prints its panic. So a failure that wrote no input and printed nothing but
# that message is run once more; every other failure, and a second failure
# of any kind, fails the target.
set -u
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-8s}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
for f in $(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do
	pkg=./$(dirname "$f")
	for name in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | cut -d' ' -f2); do
		for try in 1 2; do
			echo "$GO test -run '^\$' -fuzz '^$name\$' -fuzztime $FUZZTIME $pkg"
			if $GO test -run '^$' -fuzz "^$name\$" -fuzztime "$FUZZTIME" "$pkg" >"$log" 2>&1; then
				cat "$log"
				break
			fi
			cat "$log"
			if [ "$try" = 1 ] && grep -q 'context deadline exceeded' "$log" &&
				! grep -q -e 'Failing input written' -e 'panic:' -e '_test.go:[0-9]*:' "$log"; then
				echo "fuzz.sh: $name ended on the fuzzing engine's deadline race (no failing input written); running it once more"
				continue
			fi
			echo "fuzz.sh: $name failed"
			status=1
			break
		done
		[ $status = 0 ] || exit 1
	done
done
exit $status
