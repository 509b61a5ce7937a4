"""Benchmark: the distributed pipeline on a real local stack (MinIO over TLS + OpenBao).

Prints three figures (goals in brackets):
  1. publish -> claim latency p50 with an idle runner at its default poll   [< 1 s]
  2. per-job overhead beyond fio's own wall time, p50 (claim -> commit)      [< 1 s]
  3. throughput of 4 runners on 200 tiny jobs, duplicates, lost jobs        [>= 10 jobs/s, 0, 0]

Starts its own stack in a temporary state dir on free ports and stops it at the end.
    .venv/bin/python tests/bench/pipeline.py [--jobs 200] [--runners 4]
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as a script: tests/bench/aggregator.py would shadow the package
    sys.path[0] = str(Path(__file__).resolve().parents[2])

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from datetime import datetime  # noqa: E402

from fiolake import layout  # noqa: E402
from fiolake.campaign_progress import campaign_job_keys  # noqa: E402
from fiolake.commits import Commit  # noqa: E402
from fiolake.stack.local import stack_down, stack_up  # noqa: E402
from fiolake.stack.process import free_ports  # noqa: E402
from fiolake.store import open_store  # noqa: E402

NULL_JOB = "[n]\nioengine=null\nrw=randread\nbs=4k\nsize=1M\n"
TIMED_JOB = "[t]\nioengine=null\nrw=read\nbs=4k\nsize=1M\nruntime=2\ntime_based=1\nrate_iops=100\n"
LOG_TIME = re.compile(r"^(\S+ \S+) fiolake\.runner (claimed|committed) (\S+?)[: ]")


class Bench:
    def __init__(self, root: Path, stack) -> None:  # noqa: ANN001
        self.root, self.stack = root, stack
        self.admin = open_store(stack.lake, stack.s3_settings("admin"))
        self.procs: list[subprocess.Popen] = []

    def env(self, role: str, lake: str) -> dict[str, str]:
        env = {**os.environ, **self.stack.environ(role), "FIOLAKE_LAKE": lake}
        env["FIOLAKE_KEYRING"] = str(self.root / f"keyring-{role}.json")
        return env

    def publish(self, lake: str, text: str, repeat: int = 1) -> str:
        job = self.root / "job.fio"
        job.write_text(text)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "fiolake",
                "publish",
                str(job),
                "--backend",
                "b",
                "--repeat",
                str(repeat),
            ],
            env=self.env("publisher", lake),
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    def runner(self, lake: str, name: str, *args: str) -> subprocess.Popen:
        log = open(self.root / f"{name}.log", "w")  # noqa: SIM115 - lives as long as the process
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "fiolake",
                "runner",
                "--backend",
                "b",
                "--create-dir",
                "--dir",
                str(self.root / f"t-{name}"),
                "--runner-id",
                name,
                "--spool-dir",
                str(self.root / f"spool-{name}"),
                *args,
            ],
            env=self.env("runner", lake),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def sub_store(bench: Bench, prefix: str):  # noqa: ANN201
    return open_store(f"{bench.stack.lake}/{prefix}", bench.stack.s3_settings("admin"))


def claim_latency(bench: Bench, trials: int) -> list[float]:
    lake = f"{bench.stack.lake}/latency"
    store = sub_store(bench, "latency")
    bench.runner(lake, "idle")  # default --poll
    time.sleep(3)  # let it reach its idle loop
    latencies = []
    for _ in range(trials):
        campaign = bench.publish(lake, NULL_JOB)
        published = time.monotonic()
        [key] = campaign_job_keys(store, campaign)
        claim = layout.claim_key(layout.parse_job_key(key)[1])
        while store.head(claim) is None:
            time.sleep(0.01)
        latencies.append(time.monotonic() - published)
        time.sleep(0.5)
    return latencies


def job_overhead(bench: Bench, jobs: int) -> list[float]:
    import duckdb  # noqa: F401 - via the aggregator

    from fiolake.aggregator.lake.lake import connect

    lake = f"{bench.stack.lake}/overhead"
    bench.publish(lake, TIMED_JOB, repeat=jobs)
    proc = bench.runner(lake, "timed", "--max-jobs", str(jobs))
    proc.wait(timeout=60 + jobs * 10)
    marks: dict[str, dict[str, datetime]] = {}
    for line in (bench.root / "timed.log").read_text().splitlines():
        m = LOG_TIME.match(line)
        if m:
            stamp = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f")
            marks.setdefault(m.group(3), {})[m.group(2)] = stamp
    with connect(lake, bench.stack.s3_settings("admin")) as db:
        rows = (
            db.cursor()
            .execute("SELECT job_id, epoch_ms(finished_at) - epoch_ms(started_at) FROM runs")
            .fetchall()
        )
    overheads = []
    for job_id, fio_ms in rows:
        m = marks[job_id]
        total = (m["committed"] - m["claimed"]).total_seconds()
        overheads.append(total - fio_ms / 1000)
    return overheads


def throughput(bench: Bench, jobs: int, runners: int) -> dict[str, float]:
    lake = f"{bench.stack.lake}/throughput"
    store = sub_store(bench, "throughput")
    bench.publish(lake, NULL_JOB, repeat=jobs)
    start = time.monotonic()
    procs = [
        bench.runner(lake, f"r{i}", "--idle-exit", "3", "--poll", "0.2") for i in range(runners)
    ]
    marks: list[Commit] = []
    while len(marks) < jobs and time.monotonic() - start < 600:
        marks = [Commit.from_bytes(store.get(k)[0]) for k in store.list(layout.COMMITS_PREFIX)]
        if len(marks) < jobs:
            time.sleep(0.5)
    first = min(datetime.fromisoformat(c.committed_at) for c in marks)
    last = max(datetime.fromisoformat(c.committed_at) for c in marks)
    elapsed = time.monotonic() - start
    for proc in procs:
        proc.wait(timeout=60)
    attempts = len(list(store.list(f"{layout.RESULTS_PREFIX}runs/")))
    return {
        "committed": len(marks),
        "distinct_jobs": len({c.job_id for c in marks}),
        "attempts": attempts,
        "elapsed_s": elapsed,
        "commit_span_s": (last - first).total_seconds(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--runners", type=int, default=4)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--timed-jobs", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fiolake-pipeline-") as tmp:
        root = Path(tmp)
        ports = free_ports(4)
        stack = stack_up(
            root / "stack",
            minio_port=ports[0],
            console_port=ports[1],
            bao_port=ports[2],
            bao_cluster_port=ports[3],
        )
        bench = Bench(root, stack)
        try:
            lat = claim_latency(bench, args.trials)
            bench.stop()
            p50 = statistics.median(lat)
            print(
                f"1. publish->claim latency, idle runner (poll 1 s), {len(lat)} trials: "
                f"p50 {p50:.2f} s, max {max(lat):.2f} s  "
                f"[goal < 1 s: {'met' if p50 < 1 else 'NOT met'}]",
                flush=True,
            )
            over = job_overhead(bench, args.timed_jobs)
            o50 = statistics.median(over)
            print(
                f"2. per-job overhead beyond fio's wall time, {len(over)} jobs of 2 s: "
                f"p50 {o50:.2f} s, max {max(over):.2f} s  "
                f"[goal < 1 s: {'met' if o50 < 1 else 'NOT met'}]",
                flush=True,
            )
            tp = throughput(bench, args.jobs, args.runners)
            rate = tp["committed"] / tp["elapsed_s"]
            dup = tp["committed"] - tp["distinct_jobs"]
            lost = args.jobs - tp["distinct_jobs"]
            print(
                f"3. {args.runners} runners x {args.jobs} tiny jobs: {tp['committed']} "
                f"committed in {tp['elapsed_s']:.1f} s = {rate:.1f} jobs/s (commit span "
                f"{tp['commit_span_s']:.1f} s); duplicates {dup}, lost {lost}, attempts "
                f"uploaded {tp['attempts']}  [goal >= 10 jobs/s: "
                f"{'met' if rate >= 10 else 'NOT met'}]",
                flush=True,
            )
        finally:
            bench.stop()
            stack_down(root / "stack", purge=True)
    print(json.dumps({"claim_latency_s": lat, "overhead_s": over, "throughput": tp}))


if __name__ == "__main__":
    main()
