#!/usr/bin/env bash
# The main job, end to end on one machine (grows into the distributed demo).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
target=$(mktemp -d /var/tmp/fiolake-demo.XXXXXX)
trap 'rm -rf "$target"' EXIT
export FIOLAKE_LAKE=${FIOLAKE_LAKE:-./demo-lake}
$BIN/fiolake run --dir "$target" --backend local-disk --runtime 5 --size 64M
$BIN/fiolake sql "SELECT backend, job_name, direction, iops, bw_bytes, clat_p99_ns FROM results ORDER BY job_name, direction"
