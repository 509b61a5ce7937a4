"""Benchmark: a fresh runner's cost against history, and publish throughput, on a real stack.

Prints (goals in brackets), each measured in this run:
  1. discovery: a fresh runner process's time from start to its first commit, with an empty
     lake vs with 3,000 open jobs of another backend plus 10,000 committed jobs of its own
     (published within the last day, unexpired); the ratio                   [<= 1.2x]
  2. S3 requests one scan makes in each case (counted on the wire)          [independent of history]
  3. publish: jobs/s for 1,000 jobs signed by Vault transit                  [>= 200 jobs/s]

Starts its own stack (MinIO over TLS + OpenBao) on free ports and stops it at the end.
    .venv/bin/python -m tests.bench.discovery [--history 10000] [--open-other 3000] [--trials 3]
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as a script
    sys.path[0] = str(Path(__file__).resolve().parents[2])

import argparse  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from datetime import timedelta  # noqa: E402

from fiolake import layout  # noqa: E402
from fiolake.campaigns import plan_campaign, publish_manifests  # noqa: E402
from fiolake.commits import new_commit  # noqa: E402
from fiolake.config import Settings  # noqa: E402
from fiolake.runner.distributed.config import RunnerConfig  # noqa: E402
from fiolake.runner.distributed.service import Runner  # noqa: E402
from fiolake.stack.local import stack_down, stack_up  # noqa: E402
from fiolake.stack.process import free_ports  # noqa: E402
from fiolake.store import S3Store, open_store  # noqa: E402

NULL_JOB = "[n]\nioengine=null\nrw=read\nbs=4k\nsize=1M\n"


def publish(store, signer, campaign: str, backend: str, n: int) -> float:  # noqa: ANN001
    """Publish n jobs; the seconds it took."""
    manifests = plan_campaign(
        [("p", NULL_JOB)], [backend], campaign_id=campaign, repeat=n, runtime_s=None,
        size_bytes=None, bucket=store.bucket, expires_in=timedelta(days=1),
    )  # fmt: skip
    started = time.perf_counter()
    publish_manifests(store, manifests, signer)
    return time.perf_counter() - started


def commit_everything(store, campaign: str, backend: str) -> None:  # noqa: ANN001
    keys = list(store.list(layout.backend_campaign_prefix(backend, campaign)))

    def commit(key: str) -> None:
        _, job_id = layout.parse_job_key(key)
        marker = new_commit(job_id, f"run-{job_id}", campaign, "history", "ok")
        store.put(layout.commit_key(job_id), marker.to_bytes(), if_none_match=True)

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(commit, keys))


def requests_per_scan(store: S3Store, env: dict[str, str], root: Path) -> int:
    """S3 requests a fresh runner's first scan makes (botocore's before-send events)."""
    sent = [0]
    store.client.meta.events.register(
        "before-send.s3", lambda **_: sent.__setitem__(0, sent[0] + 1)
    )
    settings = Settings.from_env(env)
    config = RunnerConfig("mine", root / "scan-target", "scan", root / "scan-spool")
    list(Runner(store, settings.keyring(), config, store.bucket).open_jobs())
    return sent[0]


def time_to_first_commit(env: dict[str, str], root: Path, name: str) -> float:
    target = root / f"target-{name}"
    target.mkdir(exist_ok=True)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "fiolake", "runner", "--backend", "mine", "--create-dir",
         "--dir", str(target),
         "--runner-id", name, "--spool-dir", str(root / f"spool-{name}"), "--max-jobs", "1",
         "--poll", "0.2"],
        env=env, check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, default=10_000)
    parser.add_argument("--open-other", type=int, default=3_000)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--publish-jobs", type=int, default=1_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fiolake-bench-discovery-") as tmp:
        root = Path(tmp)
        ports = dict(zip(("minio_port", "console_port", "bao_port", "bao_cluster_port"),
                         free_ports(4), strict=True))  # fmt: skip
        stack = stack_up(root / "stack", **ports)
        try:
            publisher = {**os.environ, **stack.environ("publisher"), "FIOLAKE_SIGNER": "vault"}
            signer = Settings.from_env(publisher).signer()
            admin = stack.s3_settings("admin")

            def lake_env(prefix: str) -> dict[str, str]:
                env = {**os.environ, **stack.environ("runner")}
                env["FIOLAKE_LAKE"] = f"{stack.lake}/{prefix}"
                env["FIOLAKE_KEYRING"] = str(root / f"keyring-{prefix}.json")
                return env

            results: dict[str, list[float]] = {"empty": [], "history": []}
            requests: dict[str, int] = {}
            history = open_store(f"{stack.lake}/history", admin)
            print(f"building history: {args.history} committed + {args.open_other} open "
                  "jobs of another backend", file=sys.stderr, flush=True)  # fmt: skip
            per_campaign = 1000
            for i in range(0, args.history, per_campaign):
                campaign = f"c-hist-{i // per_campaign:04d}"
                publish(history, signer, campaign, "mine", min(per_campaign, args.history - i))
                commit_everything(history, campaign, "mine")
            publish(history, signer, "c-other", "other", args.open_other)
            # Steady state: some runner has scanned once and marked the finished campaigns.
            requests_per_scan(open_store(f"{stack.lake}/history", admin), lake_env("history"), root)
            for trial in range(args.trials):  # alternate, so drift hits both cases alike
                for case in ("empty", "history"):
                    prefix = case if case == "history" else f"empty-{trial}"
                    store = open_store(f"{stack.lake}/{prefix}", admin)
                    publish(store, signer, f"c-{case}-{trial}", "mine", 1)
                    if case not in requests:
                        requests[case] = requests_per_scan(store, lake_env(prefix), root)
                    elapsed = time_to_first_commit(lake_env(prefix), root, f"{case}-{trial}")
                    results[case].append(elapsed)
            empty, hist = (statistics.median(results[c]) for c in ("empty", "history"))
            ratio = hist / empty
            print(f"discovery: first commit {empty:.2f} s empty vs {hist:.2f} s with history "
                  f"-> ratio {ratio:.2f}x (goal <= 1.2x; medians of {args.trials})")  # fmt: skip
            print(f"requests per scan: {requests['empty']} empty vs {requests['history']} with "
                  "history (goal: independent of history)")  # fmt: skip
            pub_store = open_store(f"{stack.lake}/publish", admin)
            seconds = publish(pub_store, signer, "c-publish", "mine", args.publish_jobs)
            rate = args.publish_jobs / seconds
            print(f"publish: {args.publish_jobs} jobs in {seconds:.2f} s -> {rate:.0f} jobs/s "
                  "(goal >= 200; Vault transit batch signing, 16 parallel PUTs)")  # fmt: skip
        finally:
            stack_down(root / "stack", purge=True)


if __name__ == "__main__":
    main()
