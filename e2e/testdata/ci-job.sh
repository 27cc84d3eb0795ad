#!/usr/bin/env bash
# ci-job.sh WORKDIR SPEC: what a workflow step of .github/workflows/sweep.yml
# does, on a runner where GitHub has set GITHUB_STEP_SUMMARY and
# GITHUB_REF_NAME: run the sweep with kvsweep ci and leave its exit status
# to the job. KVSWEEP is the binary; extra arguments go to kvsweep ci.
set -euo pipefail
work=$1 spec=$2
shift 2
export GITHUB_STEP_SUMMARY=$work/step-summary.md GITHUB_REF_NAME=${GITHUB_REF_NAME:-main} GITHUB_ACTIONS=true
exec "$KVSWEEP" ci "$spec" --out "$work/sweep" --scheduler slurm --interval 2s \
	--store "$work/../history.db" --junit "$work/junit.xml" "$@"
