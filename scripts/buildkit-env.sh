#!/usr/bin/env bash
# buildkit-env.sh: a real BuildKit daemon and OCI registries on loopback for
# the image-builder tests.
#
#   scripts/buildkit-env.sh install   apt packages; buildkitd and buildctl built
#                                     from the Go module proxy (tools/go.mod)
#                                     into .tools/bin (skipped when built);
#                                     the quick-start test's base image
#                                     (debootstrap, kept in /var/cache/kvsweep)
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
PKGS=(runc qemu-user-static docker-registry squashfs-tools busybox-static git curl debootstrap rustc cargo etcd-server protobuf-compiler nats-server)
# The stand-in for the vLLM base image the quick-start test builds the
# shipped Dockerfile on: Debian with what that image has and the
# Dockerfile uses (Python and pip, git, curl, a C toolchain for cargo's
# linker), where pip may install (no EXTERNALLY-MANAGED), as a rootfs
# tarball named by its package list.
QS_PACKAGES=python3,python3-pip,python3-setuptools,python3-wheel,git,curl,ca-certificates,gcc,libc6-dev
QS_BASE=/var/cache/kvsweep/standins/bookworm-$(printf %s "$QS_PACKAGES" | sha256sum | cut -c1-12).tar

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

# busybox_arm64 downloads Debian's busybox-static for arm64 with apt's
# own client into a private state directory (the host's apt sources and
# architectures are left as they are) and keeps its binary.
busybox_arm64() {
	[ -s "$BUSYBOX_ARM64" ] && return
	local dir
	dir=$(mktemp -d)
	mkdir -p "$dir/lists/partial" "$(dirname "$BUSYBOX_ARM64")"
	local opts=(-o APT::Architecture=arm64 -o "APT::Architectures::=arm64" -o "Dir::State::Lists=$dir/lists" -o Dir::State::Status=/dev/null)
	apt-get "${opts[@]}" update >"$dir/log" 2>&1 || { tail -5 "$dir/log" >&2; rm -rf "$dir"; return 1; }
	(cd "$dir" && apt-get "${opts[@]}" download busybox-static:arm64 >>"$dir/log" 2>&1) || { tail -5 "$dir/log" >&2; rm -rf "$dir"; return 1; }
	dpkg-deb -x "$dir"/busybox-static_*_arm64.deb "$dir/x"
	cp "$dir/x/bin/busybox" "$BUSYBOX_ARM64.tmp"
	mv "$BUSYBOX_ARM64.tmp" "$BUSYBOX_ARM64"
	rm -rf "$dir"
}

# binfmt_start registers QEMU's aarch64 emulator unless an enabled aarch64
# handler with the F and P flags is registered already (then it is left
# alone, and so on stop). One without them (it would not run inside
# containers, or would lose argv[0]) is shadowed: the kernel tries the
# newest entry first.
binfmt_start() {
	if [ ! -e "$BINFMT/register" ]; then
		mount -t binfmt_misc binfmt_misc "$BINFMT"
	fi
	local f
	for f in "$BINFMT"/*; do
		case ${f##*/} in register | status | "$BINFMT_NAME") continue ;; esac
		if grep -q '^enabled' "$f" && grep -q '^magic 7f454c460201010000000000000000000200b700' "$f" &&
			grep '^flags:' "$f" | grep -q F && grep '^flags:' "$f" | grep -q P; then
			return
		fi
	done
	if [ -e "$BINFMT/$BINFMT_NAME" ]; then
		return
	fi
	printf ':%s:M::%s:%s:%s:FP\n' "$BINFMT_NAME" "$AARCH64_MAGIC" "$AARCH64_MASK" /usr/bin/qemu-aarch64-static >"$BINFMT/register"
	touch "$BASE/binfmt-registered"
}

binfmt_stop() {
	if [ -e "$BASE/binfmt-registered" ] && [ -e "$BINFMT/$BINFMT_NAME" ]; then
		echo -1 >"$BINFMT/$BINFMT_NAME"
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
	if [ ! -s "$QS_BASE" ]; then
		log "making the quick-start test's base image with debootstrap (about a minute; kept in $(dirname "$QS_BASE"))"
		local root
		mkdir -p "$(dirname "$QS_BASE")"
		root=$(mktemp -d "$(dirname "$QS_BASE")/root.XXXXXX")
		debootstrap --variant=minbase --include="$QS_PACKAGES" bookworm "$root" \
			"$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || echo http://deb.debian.org/debian)" \
			>"$root.log" 2>&1 || { tail -20 "$root.log" >&2; rm -rf "$root" "$root.log"; return 1; }
		rm -f "$root"/usr/lib/python3*/EXTERNALLY-MANAGED
		rm -rf "${root:?}"/var/cache/apt/archives/*.deb "${root:?}"/var/lib/apt/lists/* "${root:?}"/dev/*
		tar -C "$root" --numeric-owner -cf "$QS_BASE.tmp" .
		mv "$QS_BASE.tmp" "$QS_BASE"
		rm -rf "$root" "$root.log"
	fi
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
