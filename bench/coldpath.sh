#!/bin/bash
# coldpath.sh [REV...]: a newcomer's first run, measured. For each revision
# (default HEAD): git clone this checkout, then the README's demo command
# with an empty module cache and an empty build cache (modules from the Go
# module proxy), printing the wall time and the caches' sizes. Lite builds
# (-tags lite) and full builds are measured one after the other.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
[ $# -gt 0 ] || set -- HEAD
for rev in "$@"; do
	for lite in yes no; do
		tags=()
		[ "$lite" = no ] || tags=(-tags lite)
		d=$work/run && rm -rf "$d" && mkdir -p "$d"
		t0=$(date +%s.%N)
		git clone -q "$repo" "$d/src"
		git -C "$d/src" checkout -q "$rev"
		(cd "$d/src" && GOFLAGS=-modcacherw GOCACHE=$d/gocache GOMODCACHE=$d/gomod KVSWEEP_STORE=$d/h.db \
			go run "${tags[@]}" ./cmd/kvsweep demo --out "$d/demo" >"$d/out" 2>&1) || { cat "$d/out"; exit 1; }
		t1=$(date +%s.%N)
		printf '%s %-10s %6.1f s  modules %4s MB  build cache %4s MB\n' "$rev" "$([ "$lite" = yes ] && echo lite || echo full)" \
			"$(echo "$t1 - $t0" | bc)" "$(du -sm "$d/gomod" | cut -f1)" "$(du -sm "$d/gocache" | cut -f1)"
		chmod -R u+w "$d"
	done
done
