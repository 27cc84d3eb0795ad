#!/usr/bin/env bash
# test.sh: install what the tests need, start the services they use, run
# every test, and stop what it started: two Slurm clusters (with and
# without accounting), buildkitd built from the Go module proxy, and OCI
# registries. This is the README's test command and what CI runs
# (.ci/run). Root on Debian 12; idempotent.
#
#   scripts/test.sh            everything (about 10 minutes)
#   scripts/test.sh -run X     extra arguments go to go test
set -euo pipefail
cd "$(dirname "$0")/.."

APT=(shellcheck python3 bash coreutils libxml2-utils etcd-server etcd-client)

# shellcheck source=scripts/lib.sh
. scripts/lib.sh
apt_need "${APT[@]}"
scripts/slurm-env.sh install
scripts/buildkit-env.sh install

started=()
cleanup() {
	for s in "${started[@]}"; do "$s" stop || true; done
}
trap cleanup EXIT
scripts/slurm-env.sh start
started+=(scripts/slurm-env.sh)
eval "$(scripts/slurm-env.sh env)"
scripts/buildkit-env.sh start
started+=(scripts/buildkit-env.sh)
eval "$(scripts/buildkit-env.sh env)"

echo "test.sh: go vet" >&2
go vet ./...
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "gofmt would change: $unformatted" >&2
	exit 1
fi
echo "test.sh: go test" >&2
go test -count=1 -timeout 60m "$@" ./...
