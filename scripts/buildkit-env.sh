#!/usr/bin/env bash
# buildkit-env.sh: a real BuildKit daemon and OCI registries on loopback for
# the image-builder tests.
#
#   scripts/buildkit-env.sh install   apt packages; buildkitd and buildctl built
#                                     from the Go module proxy (tools/go.mod)
#                                     into .tools/bin (skipped when built);
#                                     the quick-start test's base image
#                                     (debootstrap, kept in /var/cache/kvsweep)
#                                     for amd64 and arm64 (its second stage
#                                     under QEMU), Debian's arm64 packages of
#                                     the quick-start stand-ins' programs,
#                                     and busybox-static for arm64 (the
#                                     multi-platform fixture's base)
#   scripts/buildkit-env.sh start     buildkitd (OCI worker, runc) and two
#                                     registries: read-write and read-only;
#                                     QEMU's aarch64 user emulation registered
#                                     with binfmt_misc (F flag) unless one is
#                                     already, so arm64 RUN steps and arm64
#                                     cells run on this amd64 host
#   scripts/buildkit-env.sh stop      what start started (and registered)
#   scripts/buildkit-env.sh env       the variables the tests read
#
# State lives under $KVSWEEP_TEST_BASE/buildkit and the ports are this
# run's (scripts/lib.sh: KVSWEEP_TEST_SLOT). Root only.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
BASE=$KVSWEEP_TEST_BASE/buildkit
BIN=$ROOT/.tools/bin
REGISTRY=127.0.0.1:$((PORT_BASE + 55))
REGISTRY_RO=127.0.0.1:$((PORT_BASE + 56))
# With the two-node cluster's network up (scripts/slurm-env.sh env exports
# KVSWEEP_TWONODE_NET), the registry is also served on its bridge address.
REGISTRY_NODES=${KVSWEEP_TWONODE_NET:+$KVSWEEP_TWONODE_NET.1:$((PORT_BASE + 57))}
PKGS=(runc qemu-user-static docker-registry squashfs-tools busybox-static git curl debootstrap binutils rustc cargo etcd-server protobuf-compiler nats-server)
# The stand-in for the vLLM base image the quick-start test builds the
# shipped Dockerfile on: Debian with what that image has and the
# Dockerfile uses (Python and pip, git, curl, a C toolchain for cargo's
# linker), where pip may install (no EXTERNALLY-MANAGED), as a rootfs
# tarball named by its package list.
QS_PACKAGES=python3,python3-pip,python3-setuptools,python3-wheel,git,curl,ca-certificates,gcc,libc6-dev
QS_BASE=/var/cache/kvsweep/standins/bookworm-$(printf %s "$QS_PACKAGES" | sha256sum | cut -c1-12).tar
# The same for arm64 (GH200-class nodes): the quick-start test builds the
# shipped Dockerfile for both platforms on an index of the two.
QS_BASE_ARM64=/var/cache/kvsweep/standins/bookworm-arm64-$(printf %s "$QS_PACKAGES" | sha256sum | cut -c1-12).tar
# Debian's arm64 packages of what the quick-start stand-ins serve for
# arm64 (e2e/testdata/quickstart/standins.sh: the Rust toolchain, etcd,
# protoc, NATS), with their libraries, unpacked into one directory.
QS_TOOLS_ARM64_PACKAGES=(rustc cargo etcd-server protobuf-compiler nats-server)
# Named by the packages and this host's versions of them (the stand-ins
# name the arm64 files by these): a host upgrade makes a new one.
qs_tools_arm64_dir() {
	local p
	for p in "${QS_TOOLS_ARM64_PACKAGES[@]}"; do
		printf '%s=%s,' "$p" "$(dpkg-query -W -f '${Version}' "$p" 2>/dev/null)"
	done | sha256sum | cut -c1-12 | sed 's|^|/var/cache/kvsweep/standins/tools-arm64-|'
}

# busybox-static of arm64 (Debian's package, unpacked): the arm64 half of
# the multi-platform fixture's base image.
BUSYBOX_ARM64=/var/cache/kvsweep/standins/busybox-static.arm64
# The binfmt_misc entry start registers (and stop removes) when no
# aarch64 handler is there: QEMU's static emulator, opened once (F), so it
# runs inside containers and mount namespaces too, with the program's own
# argv[0] (P: busybox picks its applet by it; QEMU reads the flag from
# AT_FLAGS, kernels 5.12 and later).
BINFMT=/proc/sys/fs/binfmt_misc
BINFMT_NAME=kvsweep-qemu-aarch64
AARCH64_MAGIC='\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
AARCH64_MASK='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'

log() { echo "buildkit-env: $*" >&2; }

# apt_arm64 DIR ARGS...: apt-get for Debian's arm64 packages, with a
# private state directory under DIR (the host's apt sources, architectures
# and locks are left as they are; nothing counts as installed).
apt_arm64() {
	local dir=$1
	shift
	mkdir -p "$dir/lists/partial" "$dir/archives/partial"
	[ -e "$dir/status" ] || : >"$dir/status"
	apt-get -o APT::Architecture=arm64 -o "APT::Architectures::=arm64" -o "Dir::State::Lists=$dir/lists" \
		-o "Dir::State::Status=$dir/status" -o "Dir::Cache::archives=$dir/archives" "$@" >>"$dir/log" 2>&1 ||
		{ tail -5 "$dir/log" >&2; return 1; }
}

# busybox_arm64 downloads Debian's busybox-static for arm64 and keeps its
# binary.
busybox_arm64() {
	[ -s "$BUSYBOX_ARM64" ] && return
	local dir
	dir=$(mktemp -d)
	mkdir -p "$(dirname "$BUSYBOX_ARM64")"
	if ! { apt_arm64 "$dir" update && (cd "$dir" && apt_arm64 "$dir" download busybox-static:arm64); }; then
		rm -rf "$dir"
		return 1
	fi
	dpkg-deb -x "$dir"/busybox-static_*_arm64.deb "$dir/x"
	local tmp
	tmp=$(mktemp "$BUSYBOX_ARM64.XXXXXX")
	cp "$dir/x/bin/busybox" "$tmp"
	mv "$tmp" "$BUSYBOX_ARM64"
	rm -rf "$dir"
}

# qs_tools_arm64 (after the host's packages are installed) downloads
# QS_TOOLS_ARM64_PACKAGES for arm64, at the
# versions this host has installed (the stand-ins name the arm64 files by
# the host's versions) or, where the mirror no longer has one, at its
# own, with every package they depend on, and unpacks them into
# qs_tools_arm64_dir (no maintainer scripts run: only their files are used).
# Two installs at once each make their own; the first to finish keeps its.
qs_tools_arm64() {
	local dir deb p pinned=() QS_TOOLS_ARM64
	QS_TOOLS_ARM64=$(qs_tools_arm64_dir)
	[ -d "$QS_TOOLS_ARM64" ] && return
	for p in "${QS_TOOLS_ARM64_PACKAGES[@]}"; do
		pinned+=("$p=$(dpkg-query -W -f '${Version}' "$p")")
	done
	mkdir -p "$(dirname "$QS_TOOLS_ARM64")"
	dir=$(mktemp -d "$(dirname "$QS_TOOLS_ARM64")/tools.XXXXXX")
	if ! apt_arm64 "$dir" update; then
		rm -rf "$dir"
		return 1
	fi
	if ! apt_arm64 "$dir" install -y --download-only --no-install-recommends "${pinned[@]}"; then
		log "Debian's arm64 packages at this host's versions (${pinned[*]}) are not all on the mirror: taking the mirror's"
		if ! apt_arm64 "$dir" install -y --download-only --no-install-recommends "${QS_TOOLS_ARM64_PACKAGES[@]}"; then
			rm -rf "$dir"
			return 1
		fi
	fi
	mkdir -p "$dir/root"
	for deb in "$dir"/archives/*.deb; do
		dpkg-deb -x "$deb" "$dir/root"
	done
	mv -T "$dir/root" "$QS_TOOLS_ARM64" 2>/dev/null || [ -d "$QS_TOOLS_ARM64" ]
	rm -rf "$dir"
}

# qs_base TARBALL [DEBOOTSTRAP-ARGS]: the quick-start test's base for one
# architecture, made with debootstrap and kept as a rootfs tarball. Every
# step is checked (a caller may test it with ||, where set -e does not
# hold), and the tarball appears whole or not at all.
qs_base() {
	local out=$1 root
	shift
	[ -s "$out" ] && return
	log "making the quick-start test's base image $(basename "$out") with debootstrap (a minute for amd64, several under QEMU for arm64; kept in $(dirname "$out"))"
	mkdir -p "$(dirname "$out")" || return 1
	root=$(mktemp -d "$(dirname "$out")/root.XXXXXX") || return 1
	if ! debootstrap "$@" --variant=minbase --include="$QS_PACKAGES" bookworm "$root" \
		"$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || echo http://deb.debian.org/debian)" \
		>"$root.log" 2>&1; then
		tail -20 "$root.log" >&2
		rm -rf "$root" "$root.log"
		return 1
	fi
	rm -f "$root"/usr/lib/python3*/EXTERNALLY-MANAGED
	rm -rf "${root:?}"/var/cache/apt/archives/*.deb "${root:?}"/var/lib/apt/lists/* "${root:?}"/dev/*
	if ! tar -C "$root" --numeric-owner -cf "$root.tar" . || ! mv "$root.tar" "$out"; then
		log "writing $out failed"
		rm -rf "$root" "$root.tar" "$root.log"
		return 1
	fi
	rm -rf "$root" "$root.log"
}

# qs_base_arm64: qs_base for arm64, whose second stage runs the arm64
# packages' scripts under QEMU. Unless an aarch64 handler is registered
# already, it registers one of its own for the run (a name of this
# process's, which start does not count and no other install removes)
# and removes it after, also when the install is stopped.
qs_base_arm64() {
	[ -s "$QS_BASE_ARM64" ] && return
	local own="" rc=0
	binfmt_mount
	if ! aarch64_handler; then
		own=$BINFMT_NAME-install-$$
		binfmt_register "$own"
		# shellcheck disable=SC2064 # the name is fixed now
		trap "binfmt_unregister '$own'" EXIT
		# shellcheck disable=SC2064
		trap "binfmt_unregister '$own'; exit 130" INT TERM
	fi
	qs_base "$QS_BASE_ARM64" --arch=arm64 || rc=$?
	if [ -n "$own" ]; then
		binfmt_unregister "$own"
		trap - EXIT INT TERM
	fi
	return "$rc"
}

binfmt_mount() {
	[ -e "$BINFMT/register" ] || mount -t binfmt_misc binfmt_misc "$BINFMT"
}

# aarch64_handler: is an enabled aarch64 handler with the F and P flags
# registered that is not one of ours (a run's or an install's: it goes
# when that run stops or that install ends)?
aarch64_handler() {
	local f
	for f in "$BINFMT"/*; do
		case ${f##*/} in register | status | "$BINFMT_NAME"*) continue ;; esac
		if grep -q '^enabled' "$f" && grep -q '^magic 7f454c460201010000000000000000000200b700' "$f" &&
			grep '^flags:' "$f" | grep -q F && grep '^flags:' "$f" | grep -q P; then
			return 0
		fi
	done
	return 1
}

binfmt_register() {
	printf ':%s:M::%s:%s:%s:FP\n' "$1" "$AARCH64_MAGIC" "$AARCH64_MASK" /usr/bin/qemu-aarch64-static >"$BINFMT/register"
}

binfmt_unregister() {
	[ ! -e "$BINFMT/$1" ] || echo -1 >"$BINFMT/$1"
}

# binfmt_start registers QEMU's aarch64 emulator under this run's own name
# (BINFMT_NAME-SLOT: two runs on one machine each have theirs, and stop
# removes only its own), unless an enabled aarch64 handler with the F and
# P flags that is not ours is registered (then it is left alone, and so
# on stop). One without them (it would not run inside containers, or would
# lose argv[0]) is shadowed: the kernel tries the newest entry first.
binfmt_start() {
	binfmt_mount
	aarch64_handler && return
	[ -e "$BINFMT/$BINFMT_NAME-$KVSWEEP_TEST_SLOT" ] || binfmt_register "$BINFMT_NAME-$KVSWEEP_TEST_SLOT"
	touch "$BASE/binfmt-registered"
}

binfmt_stop() {
	if [ -e "$BASE/binfmt-registered" ]; then
		binfmt_unregister "$BINFMT_NAME-$KVSWEEP_TEST_SLOT"
	fi
	rm -f "$BASE/binfmt-registered"
}

install() {
	apt_need "${PKGS[@]}"
	busybox_arm64
	if [ ! -x "$BIN/buildkitd" ] || [ ! -x "$BIN/buildctl" ] || [ tools/go.mod -nt "$BIN/buildkitd" ]; then
		log "building buildkitd and buildctl (a few minutes on a cold module cache)"
		mkdir -p "$BIN"
		(cd tools && go build -o "$BIN/" github.com/moby/buildkit/cmd/buildkitd github.com/moby/buildkit/cmd/buildctl)
	fi
	qs_base "$QS_BASE"
	qs_base_arm64
	qs_tools_arm64
}

start_registry() { # NAME ADDR READONLY [DATA]
	local dir=$BASE/$1 data=${4:-$BASE/$1/data}
	mkdir -p "$dir" "$data"
	pid_running "$dir/pid" && return
	cat >"$dir/config.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $data
  delete:
    enabled: true
  maintenance:
    readonly:
      enabled: $3
http:
  addr: $2
EOF
	docker-registry serve "$dir/config.yml" >"$dir/log" 2>&1 &
	echo $! >"$dir/pid"
	for _ in $(seq 100); do
		curl -fsS "http://$2/v2/" >/dev/null 2>&1 && return
		sleep 0.1
	done
	log "registry $1 did not answer on $2: $(tail -3 "$dir/log")"
	return 1
}

start() {
	[ "$(id -u)" = 0 ] || { log "must run as root"; exit 1; }
	mkdir -p "$BASE"
	binfmt_start
	start_registry registry "$REGISTRY" false
	start_registry registry-ro "$REGISTRY_RO" true
	if [ -n "$REGISTRY_NODES" ]; then
		# The two-node cluster's nodes live in network namespaces of their
		# own, where 127.0.0.1 is not this host: they pull the same images
		# from a read-only registry on the bridge address.
		start_registry registry-nodes "$REGISTRY_NODES" true "$BASE/registry/data"
	fi
	if ! pid_running "$BASE/buildkitd.pid"; then
		cat >"$BASE/buildkitd.toml" <<EOF
[registry."$REGISTRY"]
  http = true
  insecure = true
[registry."$REGISTRY_RO"]
  http = true
  insecure = true
EOF
		"$BIN/buildkitd" --config "$BASE/buildkitd.toml" --root "$BASE/root" \
			--addr "unix://$BASE/buildkitd.sock" --oci-worker=true --containerd-worker=false \
			>"$BASE/buildkitd.log" 2>&1 &
		echo $! >"$BASE/buildkitd.pid"
	fi
	for _ in $(seq 150); do
		"$BIN/buildctl" --addr "unix://$BASE/buildkitd.sock" debug workers >/dev/null 2>&1 && {
			log "buildkitd up at unix://$BASE/buildkitd.sock; registries $REGISTRY (read-write), $REGISTRY_RO (read-only)"
			return
		}
		sleep 0.2
	done
	log "buildkitd did not answer: $(tail -5 "$BASE/buildkitd.log")"
	return 1
}

stop() {
	stop_pidfile "$BASE/buildkitd.pid"
	stop_pidfile "$BASE/registry/pid"
	stop_pidfile "$BASE/registry-ro/pid"
	stop_pidfile "$BASE/registry-nodes/pid"
	binfmt_stop
	log "stopped"
}

env_vars() {
	echo "export KVSWEEP_BUILDKIT_ADDR=unix://$BASE/buildkitd.sock"
	echo "export KVSWEEP_BUILDKITD=$BIN/buildkitd"
	echo "export KVSWEEP_BUILDCTL=$BIN/buildctl"
	echo "export KVSWEEP_REGISTRY=$REGISTRY"
	echo "export KVSWEEP_REGISTRY_RO=$REGISTRY_RO"
	echo "export KVSWEEP_REGISTRY_NODES=$REGISTRY_NODES"
	echo "export KVSWEEP_QS_BASE=$QS_BASE"
	echo "export KVSWEEP_QS_BASE_ARM64=$QS_BASE_ARM64"
	echo "export KVSWEEP_QS_TOOLS_ARM64=$(qs_tools_arm64_dir)"
	echo "export KVSWEEP_BUSYBOX_ARM64=$BUSYBOX_ARM64"
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
