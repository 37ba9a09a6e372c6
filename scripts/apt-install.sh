#!/bin/bash
# apt-install.sh PACKAGE... installs Debian packages (as root, or through
# sudo), waiting up to 10 minutes while another apt or dpkg (an unattended
# upgrade, a second terminal) holds the package database's lock, rather
# than failing at once.
set -uo pipefail
[ $# -gt 0 ] || exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
# apt's own wait covers dpkg's lock; `apt-get update` takes the lists lock,
# which it does not wait for on every apt version: retry while it says so.
wait_opts=(-o DPkg::Lock::Timeout=600)
run() {
	local deadline=$((SECONDS + 600)) out
	while :; do
		out=$("$@" 2>&1) && { [ -n "$out" ] && echo "$out"; return 0; }
		if grep -qiE 'could not get lock|unable to lock|is another process using it' <<<"$out" && [ $SECONDS -lt $deadline ]; then
			echo "apt is busy (another process holds its lock); waiting…" >&2
			sleep 5
			continue
		fi
		echo "$out" >&2
		return 1
	done
}
run $SUDO apt-get update -qq "${wait_opts[@]}" || exit 1
run $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${wait_opts[@]}" "$@"
