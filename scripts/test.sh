#!/usr/bin/env bash
# test.sh: install what the tests need, start the services they use, run
# every test, and stop what it started: two Slurm clusters (with and
# without accounting) and a two-node one, with pyxis loaded; enroot and
# pyxis built from source; dockerd; buildkitd built from the Go module
# proxy; OCI registries; a Kubernetes cluster (API server, controller
# manager, scheduler and kubelets built from the Go module proxy, with
# containerd). The tests start PostgreSQL servers of their own (Debian's
# postgresql, internal/testing/pgtest) and stop them. This is the README's test
# command and what CI runs (.ci/run). Root on Debian 12; idempotent.
#
#   scripts/test.sh            everything (about 40 minutes on 2 cores)
#   scripts/test.sh -run X     extra arguments go to go test
#
# Every service is this run's own (scripts/lib.sh: KVSWEEP_TEST_SLOT), so
# two checkouts can run it on one machine at once. At the end it fails if
# a process it started is still running.
set -euo pipefail
cd "$(dirname "$0")/.."

APT=(shellcheck python3 bash coreutils libxml2-utils etcd-server etcd-client postgresql procps chromium fonts-dejavu-core tmux)

# shellcheck source=scripts/lib.sh
. scripts/lib.sh
apt_need "${APT[@]}"
# The followers' shared poll answers (kvsweep status --watch), this run's own.
export KVSWEEP_POLL_CACHE=$KVSWEEP_TEST_BASE/polls
scripts/slurm-env.sh install
scripts/buildkit-env.sh install
scripts/runtime-env.sh install
scripts/k8s-env.sh install

# ours lists the processes of this run that are not test.sh's own
# descendants: they carry its slot in their environment, or its state
# directory on their command line.
ours() {
	local p pid anc
	for p in /proc/[0-9]*; do
		pid=${p#/proc/}
		grep -qzx "KVSWEEP_TEST_SLOT=$KVSWEEP_TEST_SLOT" "$p/environ" 2>/dev/null ||
			{ tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -qF "$KVSWEEP_TEST_BASE/" || continue
		anc=$pid
		while [ "$anc" -gt 1 ] && [ "$anc" != $$ ]; do
			anc=$(awk '{print $4}' "/proc/$anc/stat" 2>/dev/null || echo 1)
		done
		[ "$anc" = $$ ] || echo "$pid"
	done
}
before=" $(ours | tr '\n' ' ') "

started=()
cleanup() {
	local rc=$? pid left=()
	for s in "${started[@]}"; do "$s" stop || true; done
	sleep 1
	for pid in $(ours); do
		case $before in *" $pid "*) continue ;; esac
		left+=("$pid: $({ tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null)")
		kill -9 "$pid" 2>/dev/null || true
	done
	if [ "${#left[@]}" -gt 0 ]; then
		echo "test.sh: these processes the run started were still running at its end (now killed):" >&2
		printf '  %s\n' "${left[@]}" >&2
		rc=1
	fi
	exit "$rc"
}
trap cleanup EXIT
# The runtimes first: the clusters load pyxis, and their daemons find
# enroot on the PATH this exports.
# Each is registered for stopping before it starts: a start that fails
# half-way is stopped too.
started+=(scripts/runtime-env.sh)
scripts/runtime-env.sh start
eval "$(scripts/runtime-env.sh env)"
started+=(scripts/slurm-env.sh)
scripts/slurm-env.sh start
eval "$(scripts/slurm-env.sh env)"
# After the clusters: the registry is also served on the two-node bridge.
started+=(scripts/buildkit-env.sh)
scripts/buildkit-env.sh start
eval "$(scripts/buildkit-env.sh env)"
# Its pods pull the test image from the registry above.
started+=(scripts/k8s-env.sh)
scripts/k8s-env.sh start
eval "$(scripts/k8s-env.sh env)"

echo "test.sh: go vet, staticcheck, shellcheck, actionlint" >&2
go vet ./...
go vet -tags lite ./cmd/kvsweep
# staticcheck (its default checks, unused and simple among them), pinned
# here and built once into .tools/bin like the other tools.
STATICCHECK_VERSION=v0.8.2
if ! .tools/bin/staticcheck -version 2>/dev/null | grep -qF "(${STATICCHECK_VERSION#v})"; then
	GOBIN=$PWD/.tools/bin go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
fi
.tools/bin/staticcheck ./...
.tools/bin/staticcheck -tags lite ./cmd/kvsweep
# Every shell script of the project's own (rendered job scripts are
# checked by render's tests).
shellcheck -x .ci/run scripts/*.sh bench/*.sh examples/harness/*.sh e2e/testdata/*.sh e2e/testdata/quickstart/*.sh testrun/testdata/generate.sh
# The workflows, with actionlint (it runs shellcheck over their run:
# blocks too); .github/actionlint.yaml names the self-hosted runners'
# labels.
ACTIONLINT_VERSION=v1.7.12
if ! .tools/bin/actionlint -version 2>/dev/null | grep -qxF "$ACTIONLINT_VERSION"; then
	GOBIN=$PWD/.tools/bin go install "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION"
fi
.tools/bin/actionlint
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "gofmt would change: $unformatted" >&2
	exit 1
fi
echo "test.sh: go test" >&2
go test -count=1 -timeout 60m "$@" ./...
if [ $# -eq 0 ]; then
	# Once more under the race detector, for the packages with concurrency:
	# collect's workers, the store, the local executor, the pin resolver
	# and the parts large JSON documents are stepped over in, the live
	# view's polls and reads.
	echo "test.sh: go test -race" >&2
	go test -race -count=1 -timeout 30m ./result ./testrun ./history/... ./reports ./scheduler ./scheduler/local ./scheduler/slurm ./sweep ./imagebuild ./internal/jsonsplit ./live
fi
