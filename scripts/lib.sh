# shellcheck shell=bash
# lib.sh: helpers the scripts share. Source it; it defines functions only.

# apt_need PKG...: install the Debian packages that are missing (idempotent).
apt_need() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	if [ "${#missing[@]}" -gt 0 ]; then
		echo "installing ${missing[*]}" >&2
		apt-get update -qq
		# Packages with a service (postgresql, etcd-server) must not start
		# it: the tests run their own, and nothing may outlive the run.
		local policy=""
		if [ ! -e /usr/sbin/policy-rc.d ]; then
			policy=/usr/sbin/policy-rc.d
			printf '#!/bin/sh\nexit 101\n' >"$policy"
			chmod 755 "$policy"
		fi
		local rc=0
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null || rc=$?
		[ -z "$policy" ] || rm -f "$policy"
		return "$rc"
	fi
}

# pid_running FILE: whether the process in a pid file is alive.
pid_running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# stop_pidfile FILE: TERM the process in a pid file, KILL it after 10 s,
# and remove the file.
stop_pidfile() {
	local f=$1 pid
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	rm -f "$f"
}

# Per-run isolation. Every state directory and port of the test services
# derives from one slot, so two checkouts running the test command on one
# machine never share a daemon, a port or a file. The slot defaults to a
# number derived from the checkout's path; KVSWEEP_TEST_SLOT (0-49) sets it.
# KVSWEEP_TEST_BASE (default /tmp/kvsweep-SLOT) holds all state.
KVSWEEP_CHECKOUT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${KVSWEEP_TEST_SLOT:=$(($(printf %s "$KVSWEEP_CHECKOUT" | cksum | cut -d' ' -f1) % 50))}"
: "${KVSWEEP_TEST_BASE:=/tmp/kvsweep-$KVSWEEP_TEST_SLOT}"
export KVSWEEP_TEST_SLOT KVSWEEP_TEST_BASE
# PORT_BASE+0..99 are this slot's ports (below the kernel's ephemeral range
# and the ports two-node jobs give their etcd).
# shellcheck disable=SC2034 # used by the scripts that source this file
PORT_BASE=$((10000 + KVSWEEP_TEST_SLOT * 100))
