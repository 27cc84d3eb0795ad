#!/usr/bin/env bash
# bench/image.sh: image build timings on the real buildkitd of the tests.
#
# Makes a busybox base image and two git repositories (served by git daemon
# on loopback), then times: a cold kvsweep image build (a fresh buildkitd
# root), a warm no-op rebuild (target: under 3 s end to end), and, for the
# overhead of kvsweep, kvsweep image build against buildctl build of the
# same Dockerfile, contexts and build arguments, both warm, 5 runs each
# (target: under 10% more).
#
# Needs: scripts/buildkit-env.sh start; eval "$(scripts/buildkit-env.sh env)".
set -euo pipefail
cd "$(dirname "$0")/.."
: "${KVSWEEP_BUILDKITD:?start the test services: scripts/buildkit-env.sh start; eval \"\$(scripts/buildkit-env.sh env)\"}"
work=$(mktemp -d)
git_pid=
bk_pid=
cleanup() {
	[ -n "$bk_pid" ] && kill "$bk_pid" 2>/dev/null
	[ -n "$git_pid" ] && kill "$git_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/kvsweep" ./cmd/kvsweep

# Fixtures, as the image builder's tests make them.
export GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@b GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@b
export GIT_AUTHOR_DATE=2026-11-01T12:00:00Z GIT_COMMITTER_DATE=2026-11-01T12:00:00Z
mkdir -p "$work/git" "$work/kvcr"
for r in dynamo adapter; do
	git init -q -b main "$work/git/$r.git"
	echo "$r" >"$work/git/$r.git/$r.txt"
	git -C "$work/git/$r.git" add -A
	git -C "$work/git/$r.git" commit -qm "$r"
	git -C "$work/git/$r.git" tag v0
done
echo kvcr >"$work/kvcr/kvcr.txt"
git -C "$work/kvcr" init -q -b main
git -C "$work/kvcr" add -A
git -C "$work/kvcr" commit -qm kvcr
port=$((20000 + RANDOM % 10000))
git daemon --base-path="$work/git" --export-all --reuseaddr --listen=127.0.0.1 --port=$port "$work/git" &
git_pid=$!
sleep 0.5

# The base image: busybox, pushed with buildctl from a scratch Dockerfile.
mkdir -p "$work/base"
cp /bin/busybox "$work/base/"
printf 'FROM scratch\nCOPY busybox /bin/busybox\nRUN ["/bin/busybox", "--install", "-s", "/bin"]\n' >"$work/base/Dockerfile"
"$KVSWEEP_BUILDCTL" --addr "$KVSWEEP_BUILDKIT_ADDR" build --frontend dockerfile.v0 --local context="$work/base" \
	--local dockerfile="$work/base" --output "type=image,name=$KVSWEEP_REGISTRY/bench/busybox:1,push=true,registry.insecure=true" \
	--metadata-file "$work/base.json" >/dev/null 2>&1
base_digest=$(sed -n 's/.*"containerimage.digest": *"\([^"]*\)".*/\1/p' "$work/base.json")
cat >"$work/pins.yaml" <<PINS
version: 1
base: $KVSWEEP_REGISTRY/bench/busybox:1@$base_digest
dynamo: {repo: git://127.0.0.1:$port/dynamo.git, ref: v0}
vllm_adapter: {repo: git://127.0.0.1:$port/adapter.git, ref: v0}
kvcr: {path: $work/kvcr}
dockerfile: $(pwd)/imagebuild/testdata/Dockerfile.fixture
PINS
# The same revisions pinned so that nothing can move: full commits and a
# base by digest alone. Nothing of these needs the network once seen.
cat >"$work/pins-fixed.yaml" <<PINS
version: 1
base: $KVSWEEP_REGISTRY/bench/busybox@$base_digest
dynamo: {repo: git://127.0.0.1:$port/dynamo.git, ref: $(git -C "$work/git/dynamo.git" rev-parse HEAD)}
vllm_adapter: {repo: git://127.0.0.1:$port/adapter.git, ref: $(git -C "$work/git/adapter.git" rev-parse HEAD)}
kvcr: {path: $work/kvcr}
dockerfile: $(pwd)/imagebuild/testdata/Dockerfile.fixture
PINS

ms() { date +%s%N | cut -c1-13; }
# A fresh buildkitd root for the cold build.
printf '[registry."%s"]\n  http = true\n  insecure = true\n' "$KVSWEEP_REGISTRY" >"$work/bk.toml"
"$KVSWEEP_BUILDKITD" --config "$work/bk.toml" --root "$work/bkroot" --addr "unix://$work/bk.sock" \
	--oci-worker=true --containerd-worker=false >"$work/bk.log" 2>&1 &
bk_pid=$!
for _ in $(seq 100); do "$KVSWEEP_BUILDCTL" --addr "unix://$work/bk.sock" debug workers >/dev/null 2>&1 && break; sleep 0.1; done
addr=unix://$work/bk.sock
pins=$work/pins.yaml
kv() { "$work/kvsweep" image build --pins "$pins" --buildkit-addr "$addr" --insecure-registry --progress quiet --output "oci:$work/out.tar" >/dev/null; }
t0=$(ms); kv; t1=$(ms)
cold=$((t1 - t0))
warm=()
for _ in 1 2 3 4 5; do t0=$(ms); kv; t1=$(ms); warm+=($((t1 - t0))); done
pins=$work/pins-fixed.yaml
kv # once: what was seen is remembered
fixed=()
for _ in 1 2 3 4 5; do t0=$(ms); kv; t1=$(ms); fixed+=($((t1 - t0))); done

# The same solve through buildctl: the frontend attributes kvsweep computes.
"$work/kvsweep" image build --pins "$work/pins.yaml" --insecure-registry --dry-run >"$work/plan.txt"
mkdir -p "$work/prov"
sed -n '/^source-revisions.json:/,/^}/p' "$work/plan.txt" | sed 1d >"$work/prov/source-revisions.json"
opts=()
while read -r kvline; do
	case $kvline in
	context:provenance=*) ;;
	*) opts+=(--opt "$kvline") ;;
	esac
done < <(sed -n '/^frontend attributes:/,$p' "$work/plan.txt" | sed 1d | sed 's/^  //')
bc() {
	"$KVSWEEP_BUILDCTL" --addr "$addr" build --frontend dockerfile.v0 --local context="$work/kvcr" \
		--local dockerfile="$(pwd)/imagebuild/testdata" --opt filename=Dockerfile.fixture \
		--local provenance="$work/prov" --opt context:provenance=local:provenance "${opts[@]}" \
		--output "type=oci,dest=$work/bc.tar,rewrite-timestamp=true" >/dev/null 2>&1
}
# buildctl cold, on a fresh root of its own.
kill "$bk_pid"
wait "$bk_pid" 2>/dev/null || true
"$KVSWEEP_BUILDKITD" --config "$work/bk.toml" --root "$work/bkroot2" --addr "unix://$work/bk2.sock" \
	--oci-worker=true --containerd-worker=false >"$work/bk2.log" 2>&1 &
bk_pid=$!
for _ in $(seq 100); do "$KVSWEEP_BUILDCTL" --addr "unix://$work/bk2.sock" debug workers >/dev/null 2>&1 && break; sleep 0.1; done
addr=unix://$work/bk2.sock
t0=$(ms); bc; t1=$(ms)
bccold=$((t1 - t0))
bcw=()
for _ in 1 2 3 4 5; do t0=$(ms); bc; t1=$(ms); bcw+=($((t1 - t0))); done
med() { printf '%s\n' "$@" | sort -n | sed -n 3p; }
kw=$(med "${warm[@]}")
kf=$(med "${fixed[@]}")
bw=$(med "${bcw[@]}")
echo "cold build (fresh buildkitd root): kvsweep ${cold} ms, buildctl ${bccold} ms: $(awk -v a="$cold" -v b="$bccold" 'BEGIN {printf "%+.0f%%", (a / b - 1) * 100}')"
echo "warm no-op rebuild, kvsweep:  median ${kw} ms of 5 (${warm[*]})  (target: under 3000 ms)"
echo "warm no-op rebuild, buildctl: median ${bw} ms of 5 (${bcw[*]})"
echo "kvsweep overhead over buildctl: $(awk -v a="$kw" -v b="$bw" 'BEGIN {printf "%+.0f%%", (a / b - 1) * 100}') (tag pins: git ls-remote per repository and the registry check of the base's tag, every time, as tags can move)"
echo "warm no-op rebuild, kvsweep, commit and digest pins: median ${kf} ms of 5 (${fixed[*]})"
echo "ratio no-op rebuild, fixed pins: $(awk -v a="$kf" -v b="$bw" 'BEGIN {printf "%.2fx", a / b}') buildctl (target: at most 1.10x)"
