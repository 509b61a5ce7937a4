#!/usr/bin/env bash
# The main job, end to end on one machine: local stack (MinIO over TLS + OpenBao),
# two runners on two backends (a disk directory and tmpfs), a signed campaign of the
# default suite scaled down, a wait for every commit, a comparison of the backends, then
# the same campaign again as a second night and `fiolake gate`'s answer on it.
# Everything it starts it stops again, also on failure or Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
FIOLAKE=${FIOLAKE:-.venv/bin/fiolake}
RUNTIME=${DEMO_RUNTIME:-2}
SIZE=${DEMO_SIZE:-32M}
# 4 a side: with 3, two of seven fresh-clone demos left 4 and 6 of 18 rows undecided at
# adjusted p 0.05-0.08, each row saying "~4-5 runs per side would confirm".
REPEAT=${DEMO_REPEAT:-4}
work=$(mktemp -d /var/tmp/fiolake-demo.XXXXXX)
# A private stack per demo, on free ports: a second demo (or any other fiolake stack on
# this machine) never collides with this one, and `stack down --purge` leaves nothing.
export FIOLAKE_STATE_DIR="$work/stack"
disk_dir="$work/disk"
tmpfs_dir=$(mktemp -d /dev/shm/fiolake-demo.XXXXXX)
pids=()

cleanup() {
  status=$?
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  $FIOLAKE stack down --purge >&2 || true
  rm -rf "$work" "$tmpfs_dir"
  exit $status
}
trap cleanup EXIT INT TERM

echo "== starting a local stack on free ports (first run builds MinIO from source, ~3 min)" >&2
$FIOLAKE stack up >&2

role_env() { $FIOLAKE stack env --role "$1"; }

echo "== starting two runners: disk ($disk_dir) and tmpfs ($tmpfs_dir)" >&2
for backend in disk tmpfs; do
  dir=$disk_dir; [ "$backend" = tmpfs ] && dir=$tmpfs_dir
  (
    eval "$(role_env runner)"
    export FIOLAKE_KEYRING="$work/keyring-$backend.json"
    exec $FIOLAKE runner --backend "$backend" --create-dir --dir "$dir" --spool-dir "$work/spool-$backend" \
      --label demo=1 --poll 0.5 2> "$work/runner-$backend.log"
  ) &
  pids+=($!)
done

publish() {  # publish the suite as campaign $1 and wait in-process for every commit
  (
    eval "$(role_env publisher)"
    export FIOLAKE_SIGNER=vault
    # The default suite, plus synchronous writes (where disk and tmpfs differ most).
    # --wait polls the store from this one process every few seconds: a wait loop that
    # started a `fiolake status` process every 3 s cost more CPU than the idle stack
    # and landed in every run's busy-CPU figure.
    exec $FIOLAKE publish random-reads random-writes sequential-reads sequential-writes \
      web-server-assets media-streaming sync-write-latency \
      --backend disk --backend tmpfs --repeat "$REPEAT" --runtime "$RUNTIME" --size "$SIZE" \
      --campaign "$1" --wait --timeout 15m > "$work/publish-$1.out" 2> "$work/publish-$1.log"
  ) &
  local publisher=$! pid
  # Watch the runners with shell builtins only (no process per check): a runner that
  # dies ends the demo with its log instead of a 15-minute wait.
  while kill -0 "$publisher" 2>/dev/null; do
    for pid in "${pids[@]}"; do
      kill -0 "$pid" 2>/dev/null || { echo "a runner died; its log:" >&2; cat "$work"/runner-*.log >&2; exit 1; }
    done
    sleep 2
  done
  local status=0
  wait "$publisher" || status=$?
  if grep -q "not finished after" "$work/publish-$1.log"; then
    echo "timed out waiting for runners; publish's log:" >&2; cat "$work/publish-$1.log" >&2; exit 1
  fi
  tail -n 1 "$work/publish-$1.log" >&2
  [ "$status" -eq 0 ] || echo "   (some jobs did not end ok: \`fiolake status --campaign $1\` says why)" >&2
}

campaign=demo-$(date -u +%Y%m%d-%H%M%S)-night1
night2=${campaign%night1}night2
echo "== publishing the default suite + sync-write-latency as $campaign (runtime ${RUNTIME}s, size $SIZE, $REPEAT repetitions) and waiting for every commit" >&2
publish "$campaign"

# A second night: the same suite again, so `fiolake gate` and the app's Gate page have a
# new campaign and a baseline (the first) to set it against.
echo "== the second night: the same campaign again as $night2 (a repeat, for the gate)" >&2
publish "$night2"
eval "$(role_env analyst)"

echo "== disk vs tmpfs (baseline: disk)" >&2
$FIOLAKE compare --campaign "$campaign" --metric iops --metric clat_p99_ns
echo "== how alone the runs were (runs.flags; host_lock_wait_ms: the turns the two runners took)" >&2
$FIOLAKE sql "SELECT backend, count(*) AS runs,
    count(*) FILTER (WHERE list_contains(flags, 'other-fio')) AS other_fio,
    count(*) FILTER (WHERE list_contains(flags, 'cpu-busy')) AS cpu_busy,
    round(avg(outside_cpu_pct)) AS outside_cpu_pct_avg,
    round(sum(host_lock_wait_ms) / 1000) AS lock_wait_s,
    min(started_at) AS first_start, max(finished_at) AS last_end
  FROM runs WHERE campaign_id IN ('$campaign', '$night2') GROUP BY campaign_id, backend
  ORDER BY campaign_id, backend" >&2
# One line, not a flag on every row, when this machine could not give the runs a quiet
# host: on two cores the demo's own stack (MinIO, OpenBao, the other runner) is the
# other work, and the gate then leaves those rows inconclusive instead of judging them.
busy=$($FIOLAKE sql --format csv "SELECT count(*) FILTER (WHERE list_contains(flags, 'cpu-busy')),
    count(*), round(median(outside_cpu_pct)) FROM runs
  WHERE campaign_id IN ('$campaign', '$night2') AND role = 'measure'" | tail -n 1)
IFS=, read -r busy_runs all_runs median_outside <<< "$busy"
if [ "${busy_runs:-0}" -gt $((all_runs / 10)) ]; then
  echo "   note: $busy_runs of $all_runs runs were flagged cpu-busy (median outside CPU ${median_outside} % of a core, threshold 25 %): other work on this $(nproc)-core machine competed with fio — the gate leaves such rows inconclusive; run the demo on a quiet machine, or read docs/statistics.md on host noise" >&2
fi

echo "== fiolake gate: the second night against the first (the same suite: no row should be worse)" >&2
gate_status=0
$FIOLAKE gate --campaign "$night2" --baseline-campaign "$campaign" --metric iops --metric clat_p99_ns \
  || gate_status=$?
echo "   gate exit $gate_status (0: nothing worse; 1: some row worse — on a shared machine a busy night can be)" >&2

echo "== the app on this lake: every page in headless Chromium (screenshots in build/demo-app/)" >&2
${PYTHON:-.venv/bin/python} -m tests.app.demo_pages --lake "$FIOLAKE_LAKE" --out build/demo-app
