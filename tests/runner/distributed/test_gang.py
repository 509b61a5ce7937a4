"""Gang jobs with real runner processes, real fio, the real MinIO (TLS) and OpenBao.

Three runners on one machine (three target dirs) make a gang of 3. Faults are real:
kill -9 of a member mid-run, one member's clock 30 s off under libfaketime.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from fiolake import gangs, layout
from fiolake.commits import Commit
from fiolake.fio_bins import bin_percentiles
from tests.runner.conftest import LakeEnv, wait_for
from tests.runner.distributed.test_protocol import admin_store, commits, job_file, sql, statuses

pytestmark = [pytest.mark.slow, pytest.mark.stack]

# Buffered writes to a small file: real I/O, cheap enough for 3 members on 2 cores.
GANG_JOB = """\
[w]
ioengine=psync
rw=write
bs=64k
size=4M
runtime={runtime}
time_based=1
rate=20m
"""
# Start skew bound of the issue: members start within 100 ms of each other.
SKEW_BOUND_MS = 100.0
RUNNER_ARGS = ("--lease-ttl", "3", "--poll", "0.2")


def _publish_gang(env: LakeEnv, runtime: int, size: int = 3) -> str:
    path = job_file(env.tmp, GANG_JOB.format(runtime=runtime), "gang-write")
    return env.publish(path, "--backend", "shared", "--gang", str(size), "--gang-timeout", "2m")


def _only_commit(env: LakeEnv) -> Commit:
    [commit] = commits(env)
    return commit


def _members(env: LakeEnv) -> list[dict]:
    return sql(env, "SELECT * FROM gang_members ORDER BY gang_slot")


@pytest.mark.alone  # start skew < 100 ms: 819 ms beside 3 busy workers
def test_gang_of_three_starts_together_and_commits_once(minio_lake: LakeEnv) -> None:
    campaign = _publish_gang(minio_lake, runtime=3)
    procs = [
        minio_lake.start_runner(f"m{i}", "shared", *RUNNER_ARGS, "--max-jobs", "1")
        for i in range(3)
    ]
    for i, proc in enumerate(procs):
        assert minio_lake.exit_code(proc, 180) == 0, minio_lake.runner_log(f"m{i}")
    commit = _only_commit(minio_lake)
    assert commit.status == "ok" and commit.campaign_id == campaign
    assert len(commit.members) == 3 and commit.run_id == commit.members[0]
    members = _members(minio_lake)
    assert [m["run_id"] for m in members] == list(commit.members)
    assert {m["runner"] for m in members} == {"m0", "m1", "m2"}  # never two slots each
    skews = [m["start_skew_ms"] for m in members]
    spread = max(skews) - min(skews)
    print(f"\nstart skew (max-min, store clock): {spread:.1f} ms; members {skews}")
    assert spread < SKEW_BOUND_MS
    assert all(abs(m["clock_offset_error_ms"]) < 50 for m in members)

    # Aggregate bandwidth = the members' per-second bytes summed over the common window.
    per_second = sql(
        minio_lake,
        "SELECT run_id, second, sum(io_bytes) AS b, bool_or(partial) AS p FROM timeseries "
        "GROUP BY ALL",
    )
    last_whole = {}
    for row in per_second:
        if not row["p"]:
            last_whole[row["run_id"]] = max(last_whole.get(row["run_id"], 0), row["second"])
    window = min(last_whole.values())
    expected = sum(r["b"] for r in per_second if not r["p"] and r["second"] <= window)
    [agg] = sql(minio_lake, "SELECT * FROM gang_results")
    print(f"gang aggregate: {json.dumps(agg, default=str)}")
    assert agg["members"] == 3 and agg["first_done_s"] == window
    assert agg["first_done_io_bytes"] == expected
    assert agg["first_done_bw_bytes"] == round(expected / window)
    series = sql(minio_lake, "SELECT second, io_bytes FROM gang_seconds ORDER BY second")
    assert [s["second"] for s in series] == list(range(1, window + 1))
    results = sql(minio_lake, "SELECT sum(io_bytes) AS b, max(runtime_ms) AS ms FROM results")
    assert agg["last_done_io_bytes"] == results[0]["b"]
    assert agg["last_done_bw_bytes"] == round(results[0]["b"] * 1000 / results[0]["ms"])

    # Aggregate percentiles = fio's method on the concatenated bins (not a mean of p99s).
    bins: dict[int, int] = {}
    for row in sql(minio_lake, "SELECT value_ns, count FROM latency_bins WHERE lat_type = 'clat'"):
        bins[row["value_ns"]] = bins.get(row["value_ns"], 0) + row["count"]
    assert [agg["clat_p50_ns"], agg["clat_p99_ns"], agg["clat_p999_ns"]] == bin_percentiles(
        bins, [50, 99, 99.9]
    )
    mean_of_p99 = sql(minio_lake, "SELECT avg(clat_p99_ns) AS p FROM results")[0]["p"]
    print(f"aggregate p99 {agg['clat_p99_ns']} ns vs mean of member p99s {mean_of_p99:.0f} ns")

    # `compare --campaign` shows the gang aggregate (not members as repetitions).
    shown = minio_lake.cli("admin", "compare", "--campaign", campaign)
    assert shown.returncode == 0, shown.stderr
    print(shown.stdout)
    [row] = shown.stdout.splitlines()[2:]
    assert row.split()[:5] == ["shared", "3", "gang-write", "w", "write"]
    assert row.split()[-1] == "1.00x"
    members_csv = minio_lake.cli(
        "admin", "compare", "--campaign", campaign, "--gang", "members", "--format", "csv"
    )
    assert members_csv.stdout.count(commit.job_id) == 3, members_csv.stderr


def test_killed_member_fails_the_attempt_and_the_rerun_commits_once(minio_lake: LakeEnv) -> None:
    _publish_gang(minio_lake, runtime=6)
    names = ["m0", "m1", "victim"]
    procs = {n: minio_lake.start_runner(n, "shared", *RUNNER_ARGS) for n in names}
    store = admin_store(minio_lake)
    wait_for(
        lambda: any(k.endswith("a0001/start.json") for k in store.list(layout.GANGS_PREFIX)),
        90,
        "the gang's start",
    )
    job_id = next(iter(store.list_children(layout.GANGS_PREFIX)))
    start = gangs.read_start(store, job_id, 1)
    wait_for(lambda: store.server_time().timestamp() > start.start_at + 1.5, 30, "fio running")
    procs["victim"].send_signal(signal.SIGKILL)
    procs["victim"].wait()
    why = wait_for(lambda: gangs.failure(store, job_id, 1), 60, "the attempt to fail")
    assert "victim" in why and "stopped renewing" in why
    assert store.head(layout.commit_key(job_id)) is None  # nothing half-committed
    minio_lake.start_runner("rescuer", "shared", *RUNNER_ARGS)
    wait_for(lambda: store.head(layout.commit_key(job_id)), 180, "the re-run's commit")
    commit = _only_commit(minio_lake)
    members = _members(minio_lake)
    assert commit.status == "ok" and len(commit.members) == 3
    assert {m["gang_attempt"] for m in members} == {2}
    assert {m["runner"] for m in members} == {"m0", "m1", "rescuer"}
    assert len(sql(minio_lake, "SELECT run_id FROM runs")) == 3  # attempt 1 never counts
    logged = [k for k in store.list(layout.COMMIT_LOG_PREFIX) if job_id in k]
    assert len(logged) >= 1


def _faketime(tmp: Path, offset: str) -> tuple[str, ...]:
    """Run under libfaketime with the wall clock `offset` away.

    libfaketime 0.9.10 faking CLOCK_MONOTONIC makes Python's Event.wait(timeout) hang, and
    with DONT_FAKE_MONOTONIC its clock_nanosleep wrapper fails time.sleep (EINVAL): so
    the monotonic clock stays real and time.sleep waits on an Event instead (the
    runner's intervals are monotonic either way; only its wall clock is off).
    """
    shim = tmp / "faketime-shim"
    shim.mkdir(exist_ok=True)
    (shim / "sitecustomize.py").write_text(
        "import threading, time\n"
        "_pause = threading.Event()\n"
        "time.sleep = lambda seconds: _pause.wait(seconds) and None\n"
    )
    return ("env", "DONT_FAKE_MONOTONIC=1", f"PYTHONPATH={shim}", "faketime", "-f", offset)


def _skewed_gang(env: LakeEnv, round_: int) -> dict[str, dict]:
    """One gang of three on this host, one member's wall clock 30 s ahead: its members."""
    campaign = _publish_gang(env, runtime=3)
    names = [f"m{i}-{round_}" for i in range(2)] + [f"skewed-{round_}"]
    procs = [
        env.start_runner(name, "shared", *RUNNER_ARGS, "--max-jobs", "1",
                         wrapper=_faketime(env.tmp, "+30s") if "skewed" in name else ())
        for name in names
    ]  # fmt: skip
    for proc, name in zip(procs, names, strict=True):
        assert env.exit_code(proc, 180) == 0, env.runner_log(name)
    [commit] = [c for c in commits(env) if c.campaign_id == campaign]
    assert commit.status == "ok"
    found = [m for m in _members(env) if m["campaign_id"] == campaign]
    return {m["runner"].rsplit("-", 1)[0]: m for m in found}


# Its local start 30 ± 1 s after the others' is the barrier's skew plus the fake 30 s:
# 31.25 s beside three busy workers (the store-clock skew outgrew a second).
# The start skew bound gets a second gang if the first misses it: three members share
# this 2-core host, and once in ~30 runs (a fresh clone's `make test`, 2026-12-07) the
# faked member, ready 2,874 ms ahead, woke 103.7 ms after the instant while the other two
# started +0.6 and +0.2 ms from it (its offset measured -30,000.6 ± 8.7 ms). A stall of
# the faked process (its time.sleep is an Event wait under libfaketime), not the clock
# correction, which the 30 s this test fakes would move by seconds: six more runs here
# gave spreads of 0.0-2.1 ms. A correction that is wrong misses on both gangs.
@pytest.mark.alone
def test_member_with_its_clock_30s_off_starts_with_the_others(minio_lake: LakeEnv) -> None:
    for round_ in (1, 2):
        members = _skewed_gang(minio_lake, round_)
        assert len(members) == 3 and {m["status"] for m in members.values()} == {"ok"}
        # The faked member measured its clock 30 s ahead of the store's ...
        assert abs(members["skewed"]["clock_offset_ms"] + 30_000) < 200
        assert abs(members["m0"]["clock_offset_ms"]) < 200
        # ... its own clock says it started 30 s after the others ...
        local = {n: m["started_at"].timestamp() for n, m in members.items()}
        assert 29 < local["skewed"] - local["m0"] < 31
        # ... yet by the store's clock all three started together.
        skews = [m["start_skew_ms"] for m in members.values()]
        spread = max(skews) - min(skews)
        print(f"\nstart skew with one member 30 s off, gang {round_}: {spread:.1f} ms ({skews})")
        if spread < SKEW_BOUND_MS:
            break
    assert spread < SKEW_BOUND_MS
    # fio itself runs on the real clock (faketime stays with the runner): its end stamps
    # agree to well under a second, which a start 30 s late could not give.
    store = admin_store(minio_lake)
    ends = [
        json.loads(store.get(layout.raw_key(m["run_id"], "fio.json"))[0])["timestamp_ms"]
        for m in members.values()
    ]
    assert max(ends) - min(ends) < 1000


def test_gang_that_never_fills_fails_with_only_k_of_n(minio_lake: LakeEnv) -> None:
    path = job_file(minio_lake.tmp, GANG_JOB.format(runtime=1), "gang-write")
    campaign = minio_lake.publish(
        path, "--backend", "shared", "--gang", "3", "--gang-timeout", "15s"
    )
    procs = [
        minio_lake.start_runner(f"m{i}", "shared", *RUNNER_ARGS, "--max-jobs", "1")
        for i in range(2)
    ]
    # While they wait, `status` says for whom.
    waiting = wait_for(
        lambda: [
            r for r in statuses(minio_lake, campaign) if "2 of 3 joined" in (r["reason"] or "")
        ],
        12,
        "status to show 2 of 3 runners",
    )
    assert waiting[0]["state"] == "pending"
    assert waiting[0]["reason"] == "waiting for runners: 2 of 3 joined (attempt 1)"
    assert set(waiting[0]["runner"].split(",")) == {"m0", "m1"}
    for i, proc in enumerate(procs):
        assert minio_lake.exit_code(proc, 120) == 0, minio_lake.runner_log(f"m{i}")
    commit = _only_commit(minio_lake)
    assert commit.status == "failed"
    assert "only 2 of 3 runners of backend shared showed up within 15 s" in commit.reason
    done = minio_lake.cli("publisher", "status", "--campaign", campaign)
    assert "only 2 of 3 runners" in done.stdout, done.stderr
