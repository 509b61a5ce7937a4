"""The distributed protocol with real runner processes, real fio, on both lakes.

Faults are real: kill -9, SIGSTOP past the lease, MinIO stopped mid-upload.
"""

from __future__ import annotations

import base64
import json
import signal
import time
from collections import Counter
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from fiolake import layout
from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.generations import latest_generation
from fiolake.aggregator.lake.lake import connect
from fiolake.aggregator.lake.query import run_query
from fiolake.aggregator.lake.snapshot import scan
from fiolake.campaign_progress import campaign_job_keys, campaign_status
from fiolake.cli import cli
from fiolake.commits import Commit, logged_job_ids
from fiolake.config import Settings
from fiolake.store import ObjectStore
from tests.runner.conftest import NULL_JOB, SLOW_JOB, LakeEnv, wait_for

# Whole runner fleets as real processes: the slow tier (make test), not make test-fast.
pytestmark = pytest.mark.slow


def job_file(tmp: Path, text: str, name: str = "tiny") -> Path:
    path = tmp / f"{name}.fio"
    path.write_text(text)
    return path


def statuses(env: LakeEnv, campaign: str) -> list[dict]:
    """Where each job stands, read through the library (the CLI has its own tests)."""
    return [asdict(j) for j in campaign_status(admin_store(env), campaign)]


def all_settled(env: LakeEnv, campaign: str) -> list[dict] | None:
    rows = statuses(env, campaign)
    return rows if all(r["state"] in ("ok", "failed", "rejected") for r in rows) else None


def sql(env: LakeEnv, query: str) -> list[dict]:
    with connect(env.admin["FIOLAKE_LAKE"], Settings.from_env(env.admin).lake_s3) as lake:
        result = run_query(lake, query)
    return [dict(zip(result.columns, row, strict=True)) for row in result.rows]


def admin_store(env: LakeEnv) -> ObjectStore:
    return Settings.from_env(env.admin).store()


def commits(env: LakeEnv) -> list[Commit]:
    store = admin_store(env)
    return [Commit.from_bytes(store.get(k)[0]) for k in store.list(layout.COMMITS_PREFIX)]


def test_published_jobs_are_run_and_committed_once(lake_env: LakeEnv) -> None:
    campaign = lake_env.publish(
        job_file(lake_env.tmp, NULL_JOB), "--backend", "b1", "--backend", "b2", "--repeat", "2"
    )
    assert campaign.startswith("c-")
    assert [r["state"] for r in statuses(lake_env, campaign)] == ["pending"] * 4
    runner = lake_env.start_runner("r1", "b1", "--once")
    assert lake_env.exit_code(runner, 60) == 0, lake_env.runner_log("r1")
    states = Counter(r["state"] for r in statuses(lake_env, campaign))
    assert states == {"ok": 2, "pending": 2}  # b2's jobs wait for a b2 runner
    # The store probe: once per runner start on an S3 lake (not per job), never on a local one.
    probes = lake_env.runner_log("r1").count("store probe of s3://")
    assert probes == (0 if lake_env.kind == "local" else 1), lake_env.runner_log("r1")
    runs = sql(lake_env, "SELECT backend, status, runner, campaign_id FROM runs")
    assert runs == [{"backend": "b1", "status": "ok", "runner": "r1", "campaign_id": campaign}] * 2
    # The runner role may write the commit log, one entry per commit.
    store = admin_store(lake_env)
    assert logged_job_ids(store, None) == {c.job_id for c in commits(lake_env)}
    assert "commit-log entry is not" not in lake_env.runner_log("r1")
    # After a compaction, the next commits are found through the log, not by listing.
    report = compact(store, grace=timedelta(0))
    assert report.unlogged == 0 and latest_generation(store).commits_listed_at is not None
    runner = lake_env.start_runner("r2", "b2", "--once")
    assert lake_env.exit_code(runner, 60) == 0, lake_env.runner_log("r2")
    assert len(scan(store).unindexed) == 2
    backends = sql(lake_env, "SELECT backend, count(*) AS n FROM runs GROUP BY 1 ORDER BY 1")
    assert backends == [{"backend": "b1", "n": 2}, {"backend": "b2", "n": 2}]
    # ... and compares them, the quick start's last step, on whichever server (issue 42).
    compared = CliRunner().invoke(
        cli, ["compare", "--campaign", campaign, "--metric", "iops", "--format", "json"],
        env=lake_env.admin,
    )  # fmt: skip
    assert compared.exit_code == 0, compared.output
    rows = json.loads(compared.stdout)
    assert {(r["backend"], r["n"]) for r in rows} == {("b1", 2), ("b2", 2)}


def test_three_runners_thirty_jobs_exactly_once(lake_env: LakeEnv) -> None:
    campaign = lake_env.publish(
        job_file(lake_env.tmp, NULL_JOB), "--backend", "b", "--repeat", "30"
    )
    procs = [
        lake_env.start_runner(f"r{i}", "b", "--idle-exit", "3", "--poll", "0.2") for i in range(3)
    ]
    for i, proc in enumerate(procs):
        assert lake_env.exit_code(proc, 240) == 0, lake_env.runner_log(f"r{i}")
    rows = statuses(lake_env, campaign)
    assert len(rows) == 30 and all(r["state"] == "ok" for r in rows)
    marks = commits(lake_env)
    assert len(marks) == 30 and len({c.job_id for c in marks}) == 30
    per_job = sql(lake_env, "SELECT job_id, count(*) AS n FROM runs GROUP BY 1")
    assert len(per_job) == 30 and all(r["n"] == 1 for r in per_job)
    # every committed run id is the one the view shows
    assert {r["run_id"] for r in sql(lake_env, "SELECT run_id FROM runs")} == {
        c.run_id for c in marks
    }


def test_killed_runner_job_is_rerun_after_lease_expiry(lake_env: LakeEnv) -> None:
    campaign = lake_env.publish(
        job_file(lake_env.tmp, SLOW_JOB.format(runtime=8)), "--backend", "b"
    )
    victim = lake_env.start_runner("victim", "b", "--lease-ttl", "3", "--poll", "0.2")
    wait_for(lambda: statuses(lake_env, campaign)[0]["state"] == "running", 30, "a claim")
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    # the survivor may only take over once the lease has expired by the store's clock
    rescuer = lake_env.start_runner(
        "rescuer", "b", "--lease-ttl", "3", "--poll", "0.2", "--max-jobs", "1"
    )
    assert lake_env.exit_code(rescuer, 90) == 0, lake_env.runner_log("rescuer")
    [row] = statuses(lake_env, campaign)
    assert row["state"] == "ok" and row["runner"] == "rescuer"
    assert len(commits(lake_env)) == 1


def test_stopped_runner_loses_lease_kills_fio_and_cannot_commit(lake_env: LakeEnv) -> None:
    campaign = lake_env.publish(
        job_file(lake_env.tmp, SLOW_JOB.format(runtime=12)), "--backend", "b"
    )
    sleeper = lake_env.start_runner(
        "sleeper", "b", "--lease-ttl", "2", "--poll", "0.2", "--max-jobs", "1", "--idle-exit", "20"
    )
    wait_for(lambda: statuses(lake_env, campaign)[0]["state"] == "running", 30, "a claim")
    sleeper.send_signal(signal.SIGSTOP)
    # The sleeper's fio holds the host lock until it ends: a rescuer waiting for that lock
    # would let it run out before the loss is noticed. This test is about the lease.
    other = lake_env.start_runner(
        "other", "b", "--lease-ttl", "2", "--poll", "0.2", "--max-jobs", "1", "--share-host"
    )
    wait_for(lambda: statuses(lake_env, campaign)[0]["runner"] == "other", 30, "the takeover")
    sleeper.send_signal(signal.SIGCONT)
    wait_for(lambda: "was lost" in lake_env.runner_log("sleeper"), 15, "the loss to be noticed")
    assert "lease-lost" in lake_env.runner_log("sleeper")  # its fio was interrupted
    assert lake_env.exit_code(other, 60) == 0, lake_env.runner_log("other")
    [row] = statuses(lake_env, campaign)
    assert row["state"] == "ok" and row["runner"] == "other" and row["epoch"] is None
    assert [c.runner for c in commits(lake_env)] == ["other"]


def _tamper(env: LakeEnv, campaign: str) -> dict[str, str]:
    """Damage published manifests in four ways; returns job id -> expected reason."""
    store = admin_store(env)
    keys = campaign_job_keys(store, campaign)
    assert len(keys) == 4
    envelopes = [json.loads(store.get(k)[0]) for k in keys]
    expected = {}
    # 1: payload changed after signing
    env0 = envelopes[0]
    payload = json.loads(base64.b64decode(env0["payload"]))
    payload["runtime_s"] = 9999
    env0["payload"] = base64.b64encode(json.dumps(payload).encode()).decode()
    store.put(keys[0], json.dumps(env0).encode())
    expected[layout.parse_job_key(keys[0])[1]] = "bad signature"
    # 2: signatures stripped
    envelopes[1]["signatures"] = []
    store.put(keys[1], json.dumps(envelopes[1]).encode())
    expected[layout.parse_job_key(keys[1])[1]] = "unsigned manifest"
    # 3: a valid envelope copied to another job's place
    copy_key = layout.job_key(campaign, "copied-job", "b")
    store.put(copy_key, json.dumps(envelopes[2]).encode())
    expected["copied-job"] = "bound to another place"
    return expected


def test_refused_manifests_are_recorded_as_rejected(lake_env: LakeEnv) -> None:
    campaign = lake_env.publish(job_file(lake_env.tmp, NULL_JOB), "--backend", "b", "--repeat", "4")
    expected = _tamper(lake_env, campaign)
    expired = lake_env.publish(
        job_file(lake_env.tmp, NULL_JOB), "--backend", "b", "--expires", "1s"
    )
    time.sleep(1.5)
    runner = lake_env.start_runner("r", "b", "--once")
    assert lake_env.exit_code(runner, 60) == 0, lake_env.runner_log("r")
    rejected = {
        r["job_id"]: r["error"]
        for r in sql(lake_env, "SELECT job_id, error FROM runs WHERE status = 'rejected'")
    }
    for job_id, reason in expected.items():
        assert reason in rejected[job_id], rejected[job_id]
    [expired_row] = statuses(lake_env, expired)
    assert expired_row["state"] == "rejected"
    assert "expired at" in rejected[expired_row["job_id"]]
    ok = sql(lake_env, "SELECT count(*) AS n FROM runs WHERE status = 'ok'")[0]["n"]
    assert ok == 2  # the untouched manifests of the first campaign


def test_signed_but_dangerous_job_file_is_rejected_by_the_runner(local_lake: LakeEnv) -> None:
    from datetime import timedelta

    from fiolake.campaigns import plan_campaign, publish_manifests
    from fiolake.signing import LocalSigner

    pwned = local_lake.tmp / "pwned"
    evil = f"[e]\nioengine=null\nrw=read\nsize=1M\nexec_prerun=touch {pwned}\n"
    store = admin_store(local_lake)
    # a compromised publisher skips `fiolake publish`'s checks and signs it anyway
    manifests = plan_campaign(
        [("evil", evil)],
        ["b"],
        campaign_id="c-evil",
        repeat=1,
        runtime_s=None,
        size_bytes=None,
        bucket="",
        expires_in=timedelta(hours=1),
    )
    publish_manifests(
        store, manifests, LocalSigner.load(Path(local_lake.publisher["FIOLAKE_SIGNING_KEY"]))
    )
    runner = local_lake.start_runner("r", "b", "--once")
    assert local_lake.exit_code(runner, 60) == 0, local_lake.runner_log("r")
    [row] = sql(local_lake, "SELECT status, error FROM runs")
    assert row["status"] == "rejected" and "exec_prerun" in row["error"]
    assert not pwned.exists()


@pytest.mark.stack
def test_minio_restart_during_uploads_loses_and_doubles_nothing(minio_lake: LakeEnv, stack) -> None:  # noqa: ANN001
    from fiolake.stack.local import start_minio, stop_minio

    campaign = minio_lake.publish(
        job_file(minio_lake.tmp, NULL_JOB), "--backend", "b", "--repeat", "12"
    )
    procs = [
        minio_lake.start_runner(f"r{i}", "b", "--idle-exit", "6", "--poll", "0.2") for i in range(2)
    ]
    wait_for(
        lambda: any(r["state"] == "ok" for r in statuses(minio_lake, campaign)),
        60,
        "a first commit",
    )
    stop_minio(stack.state_dir)
    time.sleep(3)
    start_minio(stack.state_dir)
    for i, proc in enumerate(procs):
        assert minio_lake.exit_code(proc, 180) == 0, minio_lake.runner_log(f"r{i}")
    logs = "".join(minio_lake.runner_log(f"r{i}") for i in range(2))
    assert "retrying" in logs  # the outage was felt, and ridden out
    rows = wait_for(lambda: all_settled(minio_lake, campaign), 30, "every job to settle")
    assert Counter(r["state"] for r in rows) == {"ok": 12}
    per_job = sql(minio_lake, "SELECT job_id, count(*) AS n FROM runs GROUP BY 1")
    assert len(per_job) == 12 and all(r["n"] == 1 for r in per_job)
    results = sql(minio_lake, "SELECT count(DISTINCT run_id) AS n FROM results")
    assert results[0]["n"] == 12


def test_sigterm_finishes_the_current_job_then_exits(local_lake: LakeEnv) -> None:
    campaign = local_lake.publish(
        job_file(local_lake.tmp, SLOW_JOB.format(runtime=3)), "--backend", "b", "--repeat", "2"
    )
    runner = local_lake.start_runner("r", "b", "--poll", "0.2")
    wait_for(
        lambda: any(r["state"] == "running" for r in statuses(local_lake, campaign)), 30, "a claim"
    )
    runner.send_signal(signal.SIGTERM)
    assert local_lake.exit_code(runner, 60) == 0, local_lake.runner_log("r")
    states = Counter(r["state"] for r in statuses(local_lake, campaign))
    assert states == {"ok": 1, "pending": 1}  # the running job committed, the next not started
