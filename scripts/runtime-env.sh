#!/usr/bin/env bash
# runtime-env.sh: the container runtimes jobs run in, for real: enroot,
# pyxis and apptainer built from source at pinned releases, and Docker from
# Debian.
#
#   scripts/runtime-env.sh install   apt packages; enroot and pyxis built and
#                                    installed under $KVSWEEP_RUNTIME_CACHE
#                                    (default /var/cache/kvsweep/runtimes), one
#                                    tree per version, kept across runs
#   scripts/runtime-env.sh start     this run's dockerd (data, socket and pid
#                                    under $KVSWEEP_TEST_BASE/docker)
#   scripts/runtime-env.sh stop      what start started
#   scripts/runtime-env.sh env       PATH with enroot, ENROOT_* paths,
#                                    DOCKER_HOST, KVSWEEP_PYXIS_SO
#
# Sources: $KVSWEEP_THIRD_PARTY, else ../shared/third_party beside the
# checkout (git bundles of the tags), else the public repositories at the
# tags. pyxis must be built against the Slurm it runs in: Debian's
# libslurm-dev is the release of the test clusters. Root only.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

ENROOT_VERSION=v4.1.2
PYXIS_VERSION=v0.24.0
APPTAINER_VERSION=1.5.3
CACHE=${KVSWEEP_RUNTIME_CACHE:-/var/cache/kvsweep/runtimes}
ENROOT=$CACHE/enroot-$ENROOT_VERSION
# pyxis is built against the installed Slurm: its directory names that
# version, read again once install has installed libslurm-dev.
pyxis_dir() { echo "$CACHE/pyxis-$PYXIS_VERSION-slurm-$(dpkg-query -W -f='${Version}' libslurm-dev 2>/dev/null || true)"; }
PYXIS=$(pyxis_dir)
APPTAINER=$CACHE/apptainer-$APPTAINER_VERSION
BASE=$KVSWEEP_TEST_BASE/runtimes
DOCKER=$KVSWEEP_TEST_BASE/docker
PKGS=(gcc make git libbsd-dev makeself libslurm-dev squashfs-tools squashfuse fuse-overlayfs
	jq parallel zstd pigz curl docker.io
	libseccomp-dev pkg-config cryptsetup-bin libfuse3-dev uidmap autoconf automake libtool libglib2.0-dev)

log() { echo "runtime-env: $*" >&2; }

# source NAME TAG DIR: a checkout of NAME at TAG in DIR.
source_tree() {
	local name=$1 tag=$2 dir=$3 tp=${KVSWEEP_THIRD_PARTY:-$KVSWEEP_CHECKOUT/../shared/third_party}
	rm -rf "$dir"
	if [ -f "$tp/$name-$tag.bundle" ]; then
		git clone -q -c advice.detachedHead=false -b "$tag" "$tp/$name-$tag.bundle" "$dir"
	else
		log "no $tp/$name-$tag.bundle: cloning the public repository"
		git clone -q -c advice.detachedHead=false --depth 1 -b "$tag" "https://github.com/NVIDIA/$name.git" "$dir"
	fi
}

build_enroot() {
	local src
	src=$(mktemp -d)
	source_tree enroot "$ENROOT_VERSION" "$src"
	# The bundle has no submodules: Debian's makeself, its kernel headers,
	# and glibc with libbsd (for strlcpy/strlcat) take their place.
	cp /usr/bin/makeself "$src/deps/makeself/makeself.sh"
	cp /usr/share/makeself/makeself-header.sh "$src/deps/makeself/"
	touch "$src/deps/linux-headers/.stamp"
	mkdir -p "$src/deps/dist/linux"
	ln -sfn /usr/include "$src/deps/dist/linux/include"
	# enroot records its prefix inside: it is built where it stays.
	rm -rf "$ENROOT"
	make -C "$src" install prefix="$ENROOT" FORCE_GLIBC=1 \
		LDLIBS="-l:libbsd.a /usr/lib/x86_64-linux-gnu/libbsd.so.0" >"$src.log" 2>&1 ||
		{ tail -20 "$src.log" >&2; rm -rf "$ENROOT"; return 1; }
	# pyxis runs enroot with a configuration of its own, not the job's
	# environment: the test registries speak plain HTTP on loopback, so
	# this tree (built for the tests) allows it in its configuration.
	echo "ENROOT_ALLOW_HTTP yes" >"$ENROOT/etc/enroot/enroot.conf.d/kvsweep-tests.conf"
	rm -rf "$src" "$src.log"
}

build_pyxis() {
	local src
	src=$(mktemp -d)
	source_tree pyxis "$PYXIS_VERSION" "$src"
	make -C "$src" >"$src.log" 2>&1 || { tail -20 "$src.log" >&2; return 1; }
	mkdir -p "$PYXIS.tmp"
	cp "$src/spank_pyxis.so" "$PYXIS.tmp/"
	rm -rf "$PYXIS" && mv "$PYXIS.tmp" "$PYXIS"
	rm -rf "$src" "$src.log"
}

# build_apptainer builds apptainer from the release tarball (about 12
# minutes on 2 cores, most of it Go; its modules come from the Go module
# proxy), without setuid: sites without setuid run it with --userns.
build_apptainer() {
	local src tp=${KVSWEEP_THIRD_PARTY:-$KVSWEEP_CHECKOUT/../shared/third_party}
	src=$(mktemp -d)
	if [ -f "$tp/apptainer-$APPTAINER_VERSION.tar.gz" ]; then
		tar -C "$src" -xzf "$tp/apptainer-$APPTAINER_VERSION.tar.gz"
	else
		log "no $tp/apptainer-$APPTAINER_VERSION.tar.gz: cloning the public repository"
		git clone -q -c advice.detachedHead=false --depth 1 -b "v$APPTAINER_VERSION" \
			https://github.com/apptainer/apptainer.git "$src/apptainer-$APPTAINER_VERSION"
	fi
	src=$src/apptainer-$APPTAINER_VERSION
	echo "$APPTAINER_VERSION" >"$src/VERSION"
	rm -rf "$APPTAINER"
	(cd "$src" && ./mconfig --without-suid --prefix="$APPTAINER" && make -C builddir && make -C builddir install) \
		>"$src.log" 2>&1 || { tail -20 "$src.log" >&2; rm -rf "$APPTAINER"; return 1; }
	rm -rf "$(dirname "$src")" "$src.log"
}

install() {
	apt_need "${PKGS[@]}"
	PYXIS=$(pyxis_dir)
	# One build at a time: runs on one machine share the cache.
	mkdir -p "$CACHE"
	exec 9>"$CACHE/.lock"
	flock 9
	# enroot names its prefix inside: a tree built elsewhere is rebuilt.
	if [ ! -f "$ENROOT/etc/enroot/enroot.conf.d/kvsweep-tests.conf" ] || ! grep -qF "$ENROOT/lib/enroot" "$ENROOT/bin/enroot"; then
		log "building enroot $ENROOT_VERSION"
		build_enroot
	fi
	if [ ! -f "$PYXIS/spank_pyxis.so" ]; then
		log "building pyxis $PYXIS_VERSION"
		build_pyxis
	fi
	if [ ! -x "$APPTAINER/bin/apptainer" ]; then
		log "building apptainer $APPTAINER_VERSION (about 12 minutes; kept in $CACHE)"
		build_apptainer
	fi
}

# argv_wrappers: enroot and apptainer as the clusters' daemons and jobs
# find them first on PATH, recording each call (its arguments, a line, in
# $BASE/argv/TOOL.log) before running the real one, so tests can count
# the imports a sweep makes.
argv_wrappers() {
	mkdir -p "$BASE/argv-bin" "$BASE/argv"
	local tool real
	for tool in enroot apptainer; do
		real=$ENROOT/bin/enroot
		if [ "$tool" = apptainer ]; then real=$APPTAINER/bin/apptainer; fi
		printf '#!/bin/sh\nprintf "%%s\\n" "$*" >>%q\nexec %q "$@"\n' "$BASE/argv/$tool.log" "$real" >"$BASE/argv-bin/$tool"
		chmod 755 "$BASE/argv-bin/$tool"
	done
}

start() {
	[ "$(id -u)" = 0 ] || { log "must run as root"; exit 1; }
	mkdir -p "$BASE"/{run,cache,data,tmp,pyxis} "$DOCKER"
	argv_wrappers
	if ! pid_running "$DOCKER/dockerd.pid"; then
		# The bridge gets a name and subnet of this run's own.
		setsid dockerd --data-root "$DOCKER/data" --exec-root "$DOCKER/exec" -H "unix://$DOCKER/docker.sock" \
			--pidfile "$DOCKER/dockerd.pid" --bridge=none --iptables=false --ip6tables=false \
			--containerd-namespace "kvsweep$KVSWEEP_TEST_SLOT" </dev/null >"$DOCKER/dockerd.log" 2>&1 &
	fi
	for _ in $(seq 150); do
		DOCKER_HOST=unix://$DOCKER/docker.sock docker info >/dev/null 2>&1 && {
			log "dockerd up at unix://$DOCKER/docker.sock; enroot $ENROOT_VERSION, pyxis $PYXIS_VERSION"
			return
		}
		sleep 0.2
	done
	log "dockerd did not answer: $(tail -5 "$DOCKER/dockerd.log")"
	return 1
}

stop() {
	if [ -S "$DOCKER/docker.sock" ]; then
		DOCKER_HOST=unix://$DOCKER/docker.sock docker ps -aq 2>/dev/null |
			xargs -r env DOCKER_HOST="unix://$DOCKER/docker.sock" docker rm -f >/dev/null 2>&1 || true
	fi
	stop_pidfile "$DOCKER/dockerd.pid"
	# dockerd leaves the containerd it started.
	stop_pidfile "$DOCKER/exec/containerd/containerd.pid"
	pkill -f -- "--state $DOCKER/exec" 2>/dev/null || true
	# dockerd also leaves its network namespace mounted (exec/netns/default).
	findmnt -rn -o TARGET | grep -F "$DOCKER/" | sort -r | xargs -r umount 2>/dev/null || true
	log "stopped"
}

env_vars() {
	echo "export PATH=$BASE/argv-bin:$ENROOT/bin:$APPTAINER/bin:\$PATH KVSWEEP_ARGV_LOGS=$BASE/argv"
	# apptainer's cache and temporary files are the run's; plain HTTP to
	# the test registries.
	echo "export APPTAINER_CACHEDIR=$BASE/apptainer-cache APPTAINER_TMPDIR=$BASE/tmp APPTAINER_NOHTTPS=1"
	echo "export ENROOT_RUNTIME_PATH=$BASE/run ENROOT_CACHE_PATH=$BASE/cache ENROOT_DATA_PATH=$BASE/data ENROOT_TEMP_PATH=$BASE/tmp"
	# The test registries speak plain HTTP on loopback.
	echo "export ENROOT_ALLOW_HTTP=yes"
	echo "export DOCKER_HOST=unix://$DOCKER/docker.sock"
	echo "export KVSWEEP_PYXIS_SO=$PYXIS/spank_pyxis.so KVSWEEP_PYXIS_RUNTIME=$BASE/pyxis"
}

case ${1:-} in
install) install ;;
start) start ;;
stop) stop ;;
env) env_vars ;;
*)
	echo "usage: $0 install|start|stop|env" >&2
	exit 2
	;;
esac
