#!/bin/bash
# standins.sh OUT: what the quick-start Dockerfile fetches from the
# Internet, made here from this machine's packages and served from OUT by
# the test on loopback, in the same layout as the real servers:
#   OUT/rustup/archive/standin/x86_64-unknown-linux-gnu/rustup-init
#       (RUST_DIST_SERVER) a stand-in rustup-init that installs
#   OUT/dist/rust-VERSION-x86_64-unknown-linux-gnu.tar.gz
#       a Rust toolchain: Debian's rustc and cargo with their libraries
#   OUT/simple/NAME/index.html, OUT/files/*.whl  (PIP_INDEX_URL) a package
#       index with the maturin stand-in and an nvidia-nccl-cu12 stand-in
#   OUT/etcd/VERSION/etcd-VERSION-linux-amd64.tar.gz  (ETCD_RELEASES)
#       Debian's etcd
#   OUT/requirements.lock  the Python inputs by version and hash
#   OUT/build-args.yaml    the pins' build_args for all of it (checksums)
# Needs rustc, cargo, etcd and python3.
set -euo pipefail
out=$1
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out"
mkdir -p "$out"/{rustup/archive/standin/x86_64-unknown-linux-gnu,dist,simple,files,etcd}
sha() { sha256sum "$1" | cut -d' ' -f1; }

# The toolchain: the binaries, the standard library's sysroot beside them
# (rustc finds it from its own path) and every library they link but libc.
rust_version=$(/usr/bin/rustc --version | cut -d' ' -f2)
tc=$out/toolchain/rust-$rust_version-x86_64-unknown-linux-gnu
mkdir -p "$tc/bin" "$tc/lib"
cp /usr/bin/rustc /usr/bin/cargo "$tc/bin/"
cp -a /usr/lib/rustlib "$tc/lib/"
ldd /usr/bin/rustc /usr/bin/cargo | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
	grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' | while read -r lib; do
	cp -L "$lib" "$tc/lib/"
done
tar -C "$out/toolchain" --sort=name --mtime=@1767225600 --owner=0 --group=0 -czf \
	"$out/dist/rust-$rust_version-x86_64-unknown-linux-gnu.tar.gz" "rust-$rust_version-x86_64-unknown-linux-gnu"
rm -rf "$out/toolchain"
init=$out/rustup/archive/standin/x86_64-unknown-linux-gnu/rustup-init
cat >"$init" <<'INIT'
#!/bin/sh
# A stand-in for rustup-init: installs the toolchain --default-toolchain
# names from $RUSTUP_DIST_SERVER/dist into $CARGO_HOME.
set -eu
toolchain=
while [ $# -gt 0 ]; do
	case $1 in
	--default-toolchain) toolchain=$2; shift 2 ;;
	*) shift ;;
	esac
done
: "${CARGO_HOME:?}" "${RUSTUP_DIST_SERVER:?}" "${toolchain:?--default-toolchain is required}"
name=rust-$toolchain-x86_64-unknown-linux-gnu
mkdir -p "$CARGO_HOME" /tmp/rustup-standin
curl -fsSL -o /tmp/rustup-standin/t.tar.gz "$RUSTUP_DIST_SERVER/dist/$name.tar.gz"
tar -xzf /tmp/rustup-standin/t.tar.gz -C /tmp/rustup-standin
cp -a "/tmp/rustup-standin/$name/." "$CARGO_HOME/"
echo "$CARGO_HOME/lib" >/etc/ld.so.conf.d/rust-standin.conf
ldconfig
rm -rf /tmp/rustup-standin
INIT
chmod 755 "$init"

# The package index: PEP 503 pages linking each wheel with its hash.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
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

# etcd, as its release tarball is laid out.
etcd_version=v$(/usr/bin/etcd --version | awk '/^etcd Version:/ {print $3}')
mkdir -p "$work/etcd-$etcd_version-linux-amd64" "$out/etcd/$etcd_version"
cp /usr/bin/etcd "$work/etcd-$etcd_version-linux-amd64/"
etcd_tar=$out/etcd/$etcd_version/etcd-$etcd_version-linux-amd64.tar.gz
tar -C "$work" --sort=name --mtime=@1767225600 --owner=0 --group=0 -czf "$etcd_tar" "etcd-$etcd_version-linux-amd64"

# protoc, laid out as a protobuf release's linux-x86_64 zip (bin/protoc):
# Debian's protoc with the libraries it needs beside it, behind a wrapper
# (a zip keeps no modes: the Dockerfile makes bin/* executable).
protoc_version=$(/usr/bin/protoc --version | awk '{print $2}')
mkdir -p "$work/protoc/bin" "$work/protoc/lib" "$out/protoc/v$protoc_version"
cp /usr/bin/protoc "$work/protoc/bin/protoc.real"
ldd /usr/bin/protoc | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
	grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' | while read -r lib; do
	cp -L "$lib" "$work/protoc/lib/"
done
# shellcheck disable=SC2016 # the wrapper's own variables
printf '%s\n' '#!/bin/sh' 'd=$(dirname "$0")' 'LD_LIBRARY_PATH=$d/../lib exec "$d/protoc.real" "$@"' >"$work/protoc/bin/protoc"
protoc_zip=$out/protoc/v$protoc_version/protoc-$protoc_version-linux-x86_64.zip
(cd "$work/protoc" && python3 -c '
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for d in ("bin", "lib"):
        for f in sorted(os.listdir(d)):
            i = zipfile.ZipInfo(d + "/" + f, (2026, 1, 1, 0, 0, 0))
            with open(d + "/" + f, "rb") as fh:
                z.writestr(i, fh.read(), zipfile.ZIP_DEFLATED)
' "$protoc_zip")

# nats-server, laid out as its release tarball.
nats_version=$(nats-server --version | sed -n 's/^nats-server: v//p')
mkdir -p "$work/nats-server-v$nats_version-linux-amd64" "$out/nats/v$nats_version"
cp "$(command -v nats-server)" "$work/nats-server-v$nats_version-linux-amd64/"
nats_tar=$out/nats/v$nats_version/nats-server-v$nats_version-linux-amd64.tar.gz
tar -C "$work" --sort=name --mtime=@1767225600 --owner=0 --group=0 -czf "$nats_tar" "nats-server-v$nats_version-linux-amd64"

cat >"$out/build-args.yaml" <<ARGS
  RUSTUP_VERSION: standin
  RUSTUP_SHA256: "$(sha "$init")"
  RUST_VERSION: "$rust_version"
  ETCD_VERSION: $etcd_version
  ETCD_SHA256: "$(sha "$etcd_tar")"
  PROTOC_VERSION: "$protoc_version"
  PROTOC_SHA256: "$(sha "$protoc_zip")"
  NATS_VERSION: "$nats_version"
  NATS_SHA256: "$(sha "$nats_tar")"
ARGS
