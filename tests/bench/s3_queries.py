"""MinIO benchmark of a kept compacted lake (a script, not a test): `fiolake compare` end to
end and S3 requests per query.

    eval "$(fiolake stack env)"
    .venv/bin/python -m tests.bench.s3_queries --lake <kept>/compacted-lake [--prefix P] [--night N]

Uploads the lake written by `tests.bench.aggregator --keep` (minus its empty per-run
placeholders) to the bucket of FIOLAKE_LAKE under a fresh prefix, or reuses `--prefix`
when an earlier run uploaded it. Then, in this process: connect with no snapshot cache,
from the disk cache, and the queries; S3 requests counted on the wire for each (botocore's
before-send events for fiolake's own reads, DuckDB's HTTP log for the views' reads). Then
`fiolake compare` as a new process, end to end, cold (empty snapshot cache) and warm.
With `--night N`, then N runs of a new campaign are written on top as runners leave them
before the next compaction (per-run files, markers, commit-log entries), and `compare
--campaign` of that night is timed the same way: the question a CI job asks after a
nightly campaign.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path[0] = str(Path(__file__).resolve().parents[2])

from fiolake import layout
from fiolake import store as store_module
from fiolake.aggregator.lake import snapcache
from fiolake.aggregator.lake.lake import Lake, connect
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.stats.compare import compare
from fiolake.commits import Commit
from fiolake.config import Settings
from fiolake.store import open_store
from tests.bench.aggregator import (
    SPACING,
    T0,
    build_tables,
    campaign_of,
    parquet_bytes,
    timed,
    upload,
)


def _count_boto(counter: Counter[str]) -> None:
    """Count every request fiolake's S3 clients send (patched into new clients)."""
    real = store_module.s3_client

    def counting(settings, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        client = real(settings, *args, **kwargs)
        client.meta.events.register(
            "before-send.s3.*", lambda request, **_: counter.update([request.method])
        )
        return client

    store_module.s3_client = counting  # type: ignore[assignment]


def _duckdb_requests(lake: Lake, fn: Callable[[], object]) -> Counter[str]:
    """HTTP requests DuckDB sends while `fn` runs (its HTTP log)."""
    con = lake.con
    con.execute("CALL truncate_duckdb_logs()")
    fn()
    rows = con.execute("SELECT request.type FROM duckdb_logs_parsed('HTTP')").fetchall()
    return Counter(r[0] for r in rows)


def cli(url: str, cache: str, *extra: str) -> float:
    env = {**os.environ, "FIOLAKE_SNAPSHOT_CACHE": cache}
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "fiolake", "compare", "--lake", url, *extra],
        check=True,
        capture_output=True,
        env=env,
    )
    return time.perf_counter() - start


def write_night(url: str, settings: Settings, runs: int) -> str:
    """`runs` runs of a new campaign on top of the lake, as runners leave them before the
    next compaction: per-run files, markers and commit-log entries. Its campaign id."""
    store = open_store(url, settings.s3)
    first = sum(1 for _ in store.list(layout.COMMITS_PREFIX))  # run ids go on from there
    campaign = campaign_of(first, SPACING)
    rng = np.random.default_rng(first)
    now = store.server_time()

    def one(i: int) -> None:
        for name, data in build_tables(i, 1, rng).items():
            key = layout.result_key(name, T0 + SPACING * i, f"run-{i:06d}")
            store.put(key, parquet_bytes(data))
        body = Commit(
            f"job-{i:06d}", f"run-{i:06d}", campaign, f"runner-{i % 7}", "ok", now.isoformat()
        ).to_bytes()
        store.put(layout.commit_key(f"job-{i:06d}"), body, if_none_match=True)
        store.put(layout.commit_log_key(now, f"job-{i:06d}"), body)

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(one, range(first, first + runs)))
    return campaign


def end_to_end(url: str, label: str, extra: tuple[str, ...], cache: Path, repeat: int) -> None:
    """`fiolake compare` as a new process: with an empty snapshot cache, and a warm one."""
    empty = tempfile.mkdtemp(prefix="fiolake-snapcache-empty-")
    cold_cli = statistics.median(cli(url, tempfile.mkdtemp(dir=empty), *extra) for _ in range(3))
    cli(url, str(cache), *extra)
    warm_cli = timed(lambda: cli(url, str(cache), *extra), repeat)
    print(
        f"  fiolake compare {label}, end to end: cold {cold_cli * 1000:.0f} ms, "
        f"snapshot cached {warm_cli * 1000:.0f} ms (goal < 1 s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lake", type=Path, required=True, help="a kept compacted lake")
    parser.add_argument("--prefix", help="reuse this prefix (uploaded by an earlier run)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--night",
        type=int,
        default=0,
        help="then add this many runs of a new campaign, not compacted, and compare it",
    )
    args = parser.parse_args()
    settings = Settings.from_env()
    if settings.s3 is None:
        sys.exit('no FIOLAKE_S3_ENDPOINT: eval "$(fiolake stack env)" first')
    bucket = settings.lake.removeprefix("s3://").split("/")[0]
    prefix = args.prefix or f"bench-{secrets.token_hex(4)}"
    url = f"s3://{bucket}/{prefix}"
    if not args.prefix:
        start = time.perf_counter()
        count = upload(args.lake, bucket, prefix)
        print(f"uploaded {count} objects to {url} in {time.perf_counter() - start:.1f} s")
    print(f"load average before: {os.getloadavg()}")
    boto: Counter[str] = Counter()
    _count_boto(boto)
    cache = Path(tempfile.mkdtemp(prefix="fiolake-snapcache-"))

    def fresh_connect(directory: Path | None) -> Lake:
        snapcache.clear_memory()
        return connect(url, settings.s3, sandbox=False, snapshot_cache=directory)

    cold = timed(lambda: fresh_connect(None).close(), 3)
    boto.clear()
    fresh_connect(None).close()
    cold_requests = sum(boto.values())
    fresh_connect(cache).close()  # fills the disk cache
    warm = timed(lambda: fresh_connect(cache).close(), 3)
    boto.clear()
    lake = fresh_connect(cache)
    warm_requests = sum(boto.values())
    print(f"\n{url}: {lake.snapshot.commits.num_rows} committed runs")
    print(f"  connect, no snapshot cache        {cold * 1000:8.0f} ms  {cold_requests} S3 requests")
    print(f"  connect, from the disk cache      {warm * 1000:8.0f} ms  {warm_requests} S3 requests")
    lake.con.execute("CALL enable_logging('HTTP')")
    campaign = lake.con.sql("SELECT max(campaign_id) FROM runs").fetchone()[0]
    queries = {
        "compare, all runs, 4 metrics": lambda: compare(lake),
        "compare, one campaign": lambda: compare(lake, filt=RunFilter(campaign=campaign)),
    }
    for name, fn in queries.items():
        first = _duckdb_requests(lake, fn)  # a new process's view: nothing cached yet
        seconds = timed(fn, args.repeat)
        again = _duckdb_requests(lake, fn)
        print(
            f"  {name:<32} {seconds * 1000:8.0f} ms  S3 requests first {dict(first)}, "
            f"repeated {dict(again)}"
        )
    lake.close()
    for label, extra in (("all runs", ()), (f"--campaign {campaign}", ("--campaign", campaign))):
        end_to_end(url, label, extra, cache, args.repeat)
    if args.night:
        night = write_night(url, settings, args.night)
        print(f"\n{args.night} runs of {night} added, not compacted (as after a nightly campaign)")
        end_to_end(url, f"--campaign {night}", ("--campaign", night), cache, args.repeat)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
