#!/bin/bash
# standins.sh OUT [ARM64_ROOT]: what the quick-start Dockerfile fetches
# from the Internet, made here from Debian's packages and served from OUT
# by the test on loopback, in the same layout as the real servers:
#   OUT/rustup/archive/standin/TRIPLE/rustup-init
#       (RUST_DIST_SERVER) a stand-in rustup-init that installs
#   OUT/dist/rust-VERSION-TRIPLE.tar.gz
#       a Rust toolchain: Debian's rustc and cargo with their libraries
#   OUT/simple/NAME/index.html, OUT/files/*.whl  (PIP_INDEX_URL) a package
#       index with the maturin stand-in and an nvidia-nccl-cu12 stand-in
#   OUT/etcd/VERSION/etcd-VERSION-linux-ARCH.tar.gz  (ETCD_RELEASES)
#       Debian's etcd
#   OUT/protoc/vVERSION/protoc-VERSION-linux-ARCH.zip  (PROTOC_RELEASES)
#   OUT/nats/vVERSION/nats-server-vVERSION-linux-ARCH.tar.gz  (NATS_RELEASES)
#   OUT/requirements.lock  the Python inputs by version and hash
#   OUT/build-args.yaml    the pins' build_args for linux/amd64 (checksums)
# The amd64 files are this machine's programs (it needs rustc, cargo, etcd,
# protoc, nats-server, python3 and readelf). With ARM64_ROOT, a directory
# holding Debian's arm64 packages of them unpacked (scripts/buildkit-env.sh
# makes it, at this machine's versions where the mirror still has them),
# the arm64 files are made from it too, named by this machine's versions
# (the Dockerfile takes one version for every platform), and
# OUT/build-args-multi.yaml gives each SHA-256 per platform for a build of
# linux/amd64 and linux/arm64.
set -euo pipefail
out=$1
arm64_root=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out"
mkdir -p "$out"/{dist,simple,files,etcd,protoc,nats}
sha() { sha256sum "$1" | cut -d' ' -f1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Release tarballs: fixed times and owners, so the same input gives the
# same bytes.
tgz() { tar -C "$1" --sort=name --mtime=@1767225600 --owner=0 --group=0 -czf "$2" "$3"; }

# in_root ROOT PATH: PATH with its symbolic links followed inside ROOT (an
# absolute link is ROOT's path, not this machine's).
in_root() {
	local root=${1%/} p=$2 t
	for _ in $(seq 40); do
		[ -L "$p" ] || break
		t=$(readlink "$p")
		case $t in
		/*) p=$root$t ;;
		*) p=$(dirname "$p")/$t ;;
		esac
	done
	[ -L "$p" ] && { echo "standins.sh: $2: too many links" >&2; return 1; }
	echo "$p"
}

# libs ROOT TRIPLE DEST FILE...: copies into DEST every shared library the
# FILEs need, and those need, found in ROOT's library directories for
# TRIPLE (Debian's multiarch directory), but the C library's own (the
# image has them, and the toolchain's directory comes first in ld.so's
# search). RUNPATH is not read: Debian's builds of these programs have
# none.
libs() {
	local root=$1 triple=$2 dest=$3 f n d found dyn
	shift 3
	local -a queue=("$@")
	local -A seen=()
	while [ "${#queue[@]}" -gt 0 ]; do
		f=${queue[0]}
		queue=("${queue[@]:1}")
		dyn=$(readelf -d "$f") || { echo "standins.sh: readelf cannot read $f" >&2; return 1; }
		for n in $(printf '%s\n' "$dyn" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
			case $n in
			libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.* | libutil.so.* | libanl.so.* | libnsl.so.* | ld-linux*) continue ;;
			esac
			[ -n "${seen[$n]:-}" ] && continue
			seen[$n]=1
			found=
			for d in "$root/lib/$triple" "$root/usr/lib/$triple" "$root/lib" "$root/usr/lib"; do
				if [ -e "$d/$n" ] || [ -L "$d/$n" ]; then found=$(in_root "$root" "$d/$n") && break; fi
			done
			if [ -z "$found" ] || [ ! -f "$found" ]; then
				echo "standins.sh: $f needs $n, not found under $root" >&2
				return 1
			fi
			cp "$found" "$dest/$n"
			queue+=("$dest/$n")
		done
	done
}

rust_version=$(/usr/bin/rustc --version | cut -d' ' -f2)
etcd_version=v$(/usr/bin/etcd --version | awk '/^etcd Version:/ {print $3}')
protoc_version=$(/usr/bin/protoc --version | awk '{print $2}')
nats_version=$(nats-server --version | sed -n 's/^nats-server: v//p')

# A stand-in for rustup-init: the same script for every platform, which
# installs the toolchain of the machine it runs on (uname -m), as the
# real one installs its own host's.
init_dir=$out/rustup/archive/standin
mkdir -p "$init_dir"
cat >"$work/rustup-init" <<'INIT'
#!/bin/sh
# A stand-in for rustup-init: installs the toolchain --default-toolchain
# names, for this machine, from $RUSTUP_DIST_SERVER/dist into $CARGO_HOME.
set -eu
toolchain=
while [ $# -gt 0 ]; do
	case $1 in
	--default-toolchain) toolchain=$2; shift 2 ;;
	*) shift ;;
	esac
done
: "${CARGO_HOME:?}" "${RUSTUP_DIST_SERVER:?}" "${toolchain:?--default-toolchain is required}"
name=rust-$toolchain-$(uname -m)-unknown-linux-gnu
mkdir -p "$CARGO_HOME" /tmp/rustup-standin
curl -fsSL -o /tmp/rustup-standin/t.tar.gz "$RUSTUP_DIST_SERVER/dist/$name.tar.gz"
tar -xzf /tmp/rustup-standin/t.tar.gz -C /tmp/rustup-standin
cp -a "/tmp/rustup-standin/$name/." "$CARGO_HOME/"
echo "$CARGO_HOME/lib" >/etc/ld.so.conf.d/rust-standin.conf
ldconfig
rm -rf /tmp/rustup-standin
INIT
chmod 755 "$work/rustup-init"

declare -A rustup_sha etcd_sha protoc_sha nats_sha

# platform ARCH ROOT: the downloads of one platform (Docker's ARCH name)
# from the programs under ROOT.
platform() {
	local arch=$1 root=$2 machine triple rel protoc_arch d
	case $arch in
	amd64) machine=x86_64 protoc_arch=x86_64 ;;
	arm64) machine=aarch64 protoc_arch=aarch_64 ;;
	esac
	triple=$machine-linux-gnu
	rel=$machine-unknown-linux-gnu

	# rustup-init at its platform's path.
	mkdir -p "$init_dir/$rel"
	cp "$work/rustup-init" "$init_dir/$rel/rustup-init"
	rustup_sha[$arch]=$(sha "$init_dir/$rel/rustup-init")

	# The toolchain: the binaries, the standard library's sysroot beside
	# them (rustc finds it from its own path) and every library they link
	# but libc.
	d=$work/toolchain/rust-$rust_version-$rel
	mkdir -p "$d/bin" "$d/lib"
	cp "$root/usr/bin/rustc" "$root/usr/bin/cargo" "$d/bin/"
	cp -a "$root/usr/lib/rustlib" "$d/lib/"
	libs "$root" "$triple" "$d/lib" "$d/bin/rustc" "$d/bin/cargo"
	tgz "$work/toolchain" "$out/dist/rust-$rust_version-$rel.tar.gz" "rust-$rust_version-$rel"
	rm -rf "$work/toolchain"

	# etcd, as its release tarball is laid out.
	d=etcd-$etcd_version-linux-$arch
	mkdir -p "$work/$d" "$out/etcd/$etcd_version"
	cp "$root/usr/bin/etcd" "$work/$d/"
	tgz "$work" "$out/etcd/$etcd_version/$d.tar.gz" "$d"
	etcd_sha[$arch]=$(sha "$out/etcd/$etcd_version/$d.tar.gz")

	# protoc, laid out as a protobuf release's zip (bin/protoc): Debian's
	# protoc with the libraries it needs beside it, behind a wrapper (a zip
	# keeps no modes: the Dockerfile makes bin/* executable).
	d=$work/protoc-$arch
	mkdir -p "$d/bin" "$d/lib" "$out/protoc/v$protoc_version"
	cp "$root/usr/bin/protoc" "$d/bin/protoc.real"
	libs "$root" "$triple" "$d/lib" "$d/bin/protoc.real"
	# shellcheck disable=SC2016 # the wrapper's own variables
	printf '%s\n' '#!/bin/sh' 'd=$(dirname "$0")' 'LD_LIBRARY_PATH=$d/../lib exec "$d/protoc.real" "$@"' >"$d/bin/protoc"
	local zip=$out/protoc/v$protoc_version/protoc-$protoc_version-linux-$protoc_arch.zip
	(cd "$d" && python3 -c '
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for d in ("bin", "lib"):
        for f in sorted(os.listdir(d)):
            i = zipfile.ZipInfo(d + "/" + f, (2026, 1, 1, 0, 0, 0))
            with open(d + "/" + f, "rb") as fh:
                z.writestr(i, fh.read(), zipfile.ZIP_DEFLATED)
' "$zip")
	protoc_sha[$arch]=$(sha "$zip")

	# nats-server, laid out as its release tarball.
	d=nats-server-v$nats_version-linux-$arch
	mkdir -p "$work/$d" "$out/nats/v$nats_version"
	if [ "$root" = / ]; then cp "$(command -v nats-server)" "$work/$d/"; else cp "$root/usr/sbin/nats-server" "$work/$d/"; fi
	tgz "$work" "$out/nats/v$nats_version/$d.tar.gz" "$d"
	nats_sha[$arch]=$(sha "$out/nats/v$nats_version/$d.tar.gz")
}

platform amd64 /
if [ -n "$arm64_root" ]; then
	platform arm64 "$arm64_root"
fi

# The package index: PEP 503 pages linking each wheel with its hash.
mkdir -p "$work/maturin/maturin_standin" "$work/nccl/nvidia/nccl"
cp "$here/maturin_standin.py" "$work/maturin/maturin_standin/__init__.py"
cp "$here/mkwheel.py" "$work/maturin/maturin_standin_wheel.py"
echo '__version__ = "2.27.3"' >"$work/nccl/nvidia/nccl/__init__.py"
touch "$work/nccl/nvidia/__init__.py"
python3 "$here/mkwheel.py" maturin 1.9.6 "$work/maturin" "$out/files" py3-none-any maturin=maturin_standin:main >/dev/null
python3 "$here/mkwheel.py" nvidia-nccl-cu12 2.27.3 "$work/nccl" "$out/files" >/dev/null
: >"$out/requirements.lock"
for whl in "$out"/files/*.whl; do
	base=$(basename "$whl")
	dist=${base%%-*}
	name=$(echo "$dist" | tr '_' '-')
	version=$(echo "$base" | cut -d- -f2)
	mkdir -p "$out/simple/$name"
	printf '<!DOCTYPE html><html><body><a href="../../files/%s#sha256=%s">%s</a></body></html>\n' "$base" "$(sha "$whl")" "$base" >"$out/simple/$name/index.html"
	printf '%s==%s \\\n    --hash=sha256:%s\n' "$name" "$version" "$(sha "$whl")" >>"$out/requirements.lock"
done

cat >"$out/build-args.yaml" <<ARGS
  RUSTUP_VERSION: standin
  RUSTUP_SHA256: "${rustup_sha[amd64]}"
  RUST_VERSION: "$rust_version"
  ETCD_VERSION: $etcd_version
  ETCD_SHA256: "${etcd_sha[amd64]}"
  PROTOC_VERSION: "$protoc_version"
  PROTOC_SHA256: "${protoc_sha[amd64]}"
  NATS_VERSION: "$nats_version"
  NATS_SHA256: "${nats_sha[amd64]}"
ARGS
if [ -n "$arm64_root" ]; then
	# per NAME ARRAY: a build argument given per platform.
	per() {
		local -n v=$2
		printf '  %s:\n    linux/amd64: "%s"\n    linux/arm64: "%s"\n' "$1" "${v[amd64]}" "${v[arm64]}"
	}
	{
		printf '  RUSTUP_VERSION: standin\n  RUST_VERSION: "%s"\n  ETCD_VERSION: %s\n  PROTOC_VERSION: "%s"\n  NATS_VERSION: "%s"\n' \
			"$rust_version" "$etcd_version" "$protoc_version" "$nats_version"
		per RUSTUP_SHA256 rustup_sha
		per ETCD_SHA256 etcd_sha
		per PROTOC_SHA256 protoc_sha
		per NATS_SHA256 nats_sha
	} >"$out/build-args-multi.yaml"
fi
