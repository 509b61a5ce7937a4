"""Aggregator benchmark (a script, not a test): prints sizes and query latencies.

    .venv/bin/python -m tests.bench.aggregator [--runs 10000] [--loose-runs 500]

Builds a synthetic lake of --runs runs (8 jobs × 2 directions each, 60 s of per-second
timeseries per job × direction) with pyarrow in bulk. That big lake is the lake users get
after `fiolake lake compact`: its rows go into the Delta tables in bulk, one commit marker
and commit-log entry per run are written as runners write them, and then compaction
itself (`aggregator.compact`) rewrites the tables into few files and writes the
generation record in the current format. So that listing costs are honest, it also holds
an empty placeholder for every per-run file compaction would have covered (never read:
the generation says so). A smaller --loose-runs lake is written the
way runners write (one Parquet file per table per run) and measured before and after
`compact`. With FIOLAKE_S3_ENDPOINT set (admin credentials in AWS_*), both lakes are
also uploaded to the bucket of FIOLAKE_LAKE (under a fresh prefix) and measured there.

Each lake measured also prints what one connect lists (LIST calls, keys, directory
entries read, the commit log's apart) and fails if it reads more than an hour's worth of
commit-log entries: that cost must not grow with history (issue 44). `--lake A B
--end-to-end N` measures kept lakes only (local, or s3:// URLs of a MinIO copy), then times
issue 44's questions as new processes — `sql "select 1"`, `compare --campaign`, `compare`
pooled, `gate` with the default baseline and against the night before, `trend` of one case
over a year, `regressions` over every case — the lakes alternating, each with its range,
its peak RSS, the ratio of the last lake to the first and the goal it is held to.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path[0] = str(Path(__file__).resolve().parents[2])

from fiolake import layout
from fiolake.aggregator.lake import delta, snapcache
from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.generations import latest_generation
from fiolake.aggregator.lake.lake import connect
from fiolake.aggregator.lake.snapshot import scan
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.rows.series import per_second
from fiolake.aggregator.stats.compare import compare
from fiolake.aggregator.stats.regressions import regressions
from fiolake.aggregator.stats.trend import trend
from fiolake.commits import Commit
from fiolake.schema import SCHEMAS, parquet_bytes
from fiolake.store import LocalStore, S3Store, open_store

BACKENDS = ("nvme", "ceph-rbd", "nfs", "tmpfs")
PROFILES = ("random-reads", "random-writes", "sequential-reads", "sequential-writes", "bs-sweep")
JOBS = tuple(f"job{j}" for j in range(8))
DIRECTIONS = ("read", "write")
SECONDS = 60
PERCENTILES = (1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99)
T0 = datetime(2025, 1, 1, tzinfo=UTC)
SPACING = timedelta(seconds=864)  # 10,000 runs over 100 days (--runs-per-day 100)
FLUSH_RUNS = 20_000  # runs held in memory before their rows go to the Delta tables
# A campaign is a night of the fleet (issue 44: "365 nights × 100 hosts × ~30 runs"), so
# a series has a night per day whatever the fleet's size. Before, a campaign was every
# 200 runs: ~14 a day at a million runs, 5,000 a year (`--campaign-runs 200`).
CAMPAIGN_RUNS = 0
# The night's own spread: each night × backend is off by a lognormal factor (σ 2 %), as a
# real fleet's nights differ beyond their runs' 3 % (load, firmware, the network).
NIGHT_SPREAD = np.random.default_rng(3).lognormal(0.0, 0.02, (20_000, 4))
# Planted changes: (backend, profile or None for all, first night, factor on IOPS, kernel
# from that night or None). A Ceph upgrade with a new kernel a third into the year, a
# slower NFS for random writes later, a faster NVMe near the end.
PLANTED = (
    ("ceph-rbd", None, 0.33, 0.85, "6.8.0-1-amd64"),
    ("nfs", "random-writes", 0.66, 0.7, None),
    ("nvme", "sequential-reads", 0.85, 1.2, None),
)
KERNEL = "6.1.0-18-amd64"


def runs_per_night(spacing: timedelta) -> int:
    """Runs started per day at this spacing (the build's chunks, one night each)."""
    return int(timedelta(days=1) / spacing)


def campaign_of(i: int, spacing: timedelta) -> str:
    """Run i's campaign: its night (`night-0042`), or every CAMPAIGN_RUNS runs."""
    if CAMPAIGN_RUNS:
        return f"camp-{i // CAMPAIGN_RUNS:03d}"
    return f"night-{i // runs_per_night(spacing):04d}"


def planted(idx: np.ndarray, nights: np.ndarray, total_nights: int) -> tuple[np.ndarray, list[str]]:
    """Per run: the factor the planted changes put on its IOPS, and its kernel."""
    factor = np.ones(len(idx))
    kernel = [KERNEL] * len(idx)
    backend = idx % len(BACKENDS)
    profile = idx // len(BACKENDS) % len(PROFILES)
    for name, prof, share, times, new_kernel in PLANTED:
        hit = (backend == BACKENDS.index(name)) & (nights >= int(share * total_nights))
        if prof is not None:
            hit &= profile == PROFILES.index(prof)
        factor[hit] *= times
        if new_kernel:
            for k in np.flatnonzero(hit):
                kernel[k] = new_kernel
    return factor, kernel


def table(name: str, columns: dict[str, object], n: int) -> pa.Table:
    """A lake table with the contract schema; columns not given are null."""
    schema = SCHEMAS[name]
    arrays = [
        pa.array(columns[f.name], type=f.type) if f.name in columns else pa.nulls(n, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def run_ids(first: int, count: int) -> list[str]:
    return [f"run-{i:06d}" for i in range(first, first + count)]


def build_tables(
    first: int,
    count: int,
    rng: np.random.Generator,
    spacing: timedelta = SPACING,
    total_runs: int = 0,
) -> dict[str, pa.Table]:
    """The runs, results, timeseries and percentiles tables for runs first .. first+count-1,
    one run started every `spacing`; the planted changes start at their share of the
    `total_runs` runs' nights (none without it)."""
    idx = np.arange(first, first + count)
    ids = run_ids(first, count)
    started = [T0 + spacing * int(i) for i in idx]
    backend = [BACKENDS[i % len(BACKENDS)] for i in idx]
    nights = idx // runs_per_night(spacing)
    total_nights = -(-total_runs // runs_per_night(spacing)) if total_runs else 1 << 62
    factor, kernel = planted(idx, nights, total_nights)
    factor *= NIGHT_SPREAD[nights % len(NIGHT_SPREAD), idx % len(BACKENDS)]
    runs = table(
        "runs",
        {
            "run_id": ids,
            "job_id": [f"job-{i:06d}" for i in idx],
            "campaign_id": [campaign_of(int(i), spacing) for i in idx],
            "repetition": [int(i // 20 % 10) for i in idx],
            "backend": backend,
            "runner": [f"runner-{i % 7}" for i in idx],
            "host": [f"host-{i % 7}" for i in idx],
            "profile": [PROFILES[i // len(BACKENDS) % len(PROFILES)] for i in idx],
            "fio_version": ["fio-3.33"] * count,
            "kernel": kernel,
            "fs_type": ["ext4"] * count,
            "started_at": started,
            "finished_at": [s + timedelta(seconds=SECONDS * len(JOBS)) for s in started],
            "status": ["ok"] * count,
        },
        count,
    )
    cases = len(JOBS) * len(DIRECTIONS)
    speed = np.array([1.0, 0.6, 0.4, 3.0])[idx % len(BACKENDS)] * factor
    iops = np.repeat(speed * 20000, cases) * rng.normal(1.0, 0.03, count * cases)
    lat = 1e9 / iops
    r_ids = np.repeat(ids, cases)
    results = table(
        "results",
        {
            "run_id": r_ids,
            "backend": np.repeat(backend, cases),
            "job_name": np.tile(np.repeat(JOBS, len(DIRECTIONS)), count),
            "job_index": np.tile(np.repeat(np.arange(len(JOBS)), len(DIRECTIONS)), count),
            "direction": np.tile(DIRECTIONS, count * len(JOBS)),
            "iops": iops,
            "bw_bytes": (iops * 4096).astype(np.int64),
            "io_bytes": (iops * 4096 * SECONDS).astype(np.int64),
            "total_ios": (iops * SECONDS).astype(np.int64),
            "runtime_ms": np.full(count * cases, SECONDS * 1000),
            "lat_mean_ns": lat,
            "clat_mean_ns": lat * 0.9,
            "clat_p99_ns": (lat * 3).astype(np.int64),
        },
        count * cases,
    )
    rows = count * cases * SECONDS
    per_s = np.repeat(iops, SECONDS) * rng.normal(1.0, 0.05, rows)
    timeseries = table(
        "timeseries",
        {
            "run_id": np.repeat(r_ids, SECONDS),
            "job_name": np.repeat(
                results.column("job_name").to_numpy(zero_copy_only=False), SECONDS
            ),
            "job_index": np.repeat(results.column("job_index").to_numpy(), SECONDS),
            "thread": np.repeat(results.column("job_index").to_numpy() + 1, SECONDS),
            "direction": np.repeat(
                results.column("direction").to_numpy(zero_copy_only=False), SECONDS
            ),
            "second": np.tile(np.arange(1, SECONDS + 1), count * cases),
            "iops": per_s.astype(np.int64),
            "bw_bytes": (per_s * 4096).astype(np.int64),
            "lat_mean_ns": (1e9 / per_s).astype(np.int64),
            "zero_filled": np.zeros(rows, dtype=bool),
            "partial": np.tile(np.arange(1, SECONDS + 1) == SECONDS, count * cases),
        },
        rows,
    )
    p_rows = count * cases * len(PERCENTILES)
    pct = np.array(PERCENTILES)
    percentiles = table(
        "percentiles",
        {
            "run_id": np.repeat(r_ids, len(PERCENTILES)),
            "job_name": np.repeat(
                results.column("job_name").to_numpy(zero_copy_only=False), len(PERCENTILES)
            ),
            "job_index": np.repeat(results.column("job_index").to_numpy(), len(PERCENTILES)),
            "direction": np.repeat(
                results.column("direction").to_numpy(zero_copy_only=False), len(PERCENTILES)
            ),
            "lat_type": ["clat"] * p_rows,
            "percentile": np.tile(pct, count * cases),
            "value_ns": (
                np.repeat(lat, len(PERCENTILES)) * np.tile(1 + pct / 50, count * cases)
            ).astype(np.int64),
            "source": ["fio_json"] * p_rows,
        },
        p_rows,
    )
    return {"runs": runs, "results": results, "timeseries": timeseries, "percentiles": percentiles}


def write_file(root: Path, key: str, data: bytes) -> None:
    path = root / key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def commit_bytes(i: int, spacing: timedelta = SPACING) -> bytes:
    started = T0 + spacing * i
    return Commit(
        f"job-{i:06d}",
        f"run-{i:06d}",
        campaign_of(i, spacing),
        f"runner-{i % 7}",
        "ok",
        started.isoformat(),
    ).to_bytes()


def build_compacted(root: Path, runs: int, placeholders: bool, spacing: timedelta = SPACING) -> int:
    """The big lake, as `lake compact` leaves it (see the module docstring); returns the
    generation written. The rows are appended to the Delta tables a month at a time, or
    every FLUSH_RUNS runs when a month holds more (so 96 M timeseries rows of 100,000 runs
    fit in memory), as a compaction interrupted before its record leaves them; the markers
    and their commit-log entries are written as runners write them; then `compact` itself
    finishes the job the way it does for a user's lake: it finds those rows, rewrites a
    table of many files into few, and writes the generation record in the current format."""
    rng = np.random.default_rng(7)
    per_day = int(timedelta(days=1) / spacing)
    store = LocalStore(root)
    month: dict[str, list[pa.Table]] = {}
    current = None

    def flush() -> None:
        for name, parts in month.items():
            delta.append(store, name, pa.concat_tables(parts), 1)
        month.clear()

    for first in range(0, runs, per_day):
        count = min(per_day, runs - first)
        day = (T0 + spacing * first).date()
        pending = sum(t.num_rows for t in month.get("runs", []))
        if current is not None and (f"{day:%Y-%m}" != current or pending >= FLUSH_RUNS):
            flush()
        current = f"{day:%Y-%m}"
        ids = run_ids(first, count)
        for name, data in build_tables(first, count, rng, spacing, runs).items():
            dated = data.append_column("date", pa.array([day] * data.num_rows, pa.date32()))
            month.setdefault(name, []).append(dated)
            if placeholders:
                for run_id in ids:
                    write_file(root, f"results/{name}/date={day}/{run_id}.parquet", b"")
    flush()
    # Marker, then its commit-log entry (`commits.log_commit`'s key and bytes, without its
    # fsync per object), keyed when the run ended, as its runner would have: compaction
    # vouches for the log only when every marker has an entry, and readers list the log
    # from just before the compaction on, which in a real lake holds few entries. Never
    # after now: beyond 30,000 runs the synthetic runs end in the future (2027 at
    # 100,000), and entries keyed after the compaction are listed by every connect (the
    # 30,479 entries issue 44 profiled). Those runs are logged 2 hours ago instead, an
    # hour folder before the compaction's.
    logged_by = datetime.now(UTC) - timedelta(hours=2)
    for i in range(runs):
        job_id = f"job-{i:06d}"
        ended = T0 + spacing * i + timedelta(seconds=SECONDS * len(JOBS))
        marker = commit_bytes(i, spacing)
        write_file(root, layout.commit_key(job_id), marker)
        write_file(root, layout.commit_log_key(min(ended, logged_by), job_id), marker)
    report = compact(store, grace=timedelta(0))
    if report.generation is None or report.unlogged:
        raise RuntimeError(f"compaction of the synthetic lake did not vouch for it: {report}")
    return report.generation


def build_loose(root: Path, runs: int) -> None:
    """A lake as runners write it: one file per table per run, then the marker."""
    rng = np.random.default_rng(11)
    for i in range(runs):
        started = T0 + SPACING * i
        for name, data in build_tables(i, 1, rng).items():
            write_file(root, layout.result_key(name, started, f"run-{i:06d}"), parquet_bytes(data))
        write_file(root, layout.commit_key(f"job-{i:06d}"), commit_bytes(i))


def du(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def timed(fn: Callable[[], object], repeat: int = 5) -> float:
    """Median wall time of `fn` in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# Commit-log entries one connect may read, whatever the lake's history: a compaction's
# hour of commits. Listing every entry ever written (issue 44) reads one per run.
MAX_LOG_ENTRIES_READ = 1_000


@contextlib.contextmanager
def listings() -> Iterator[Counter[str]]:
    """Count what the lake stores' listings cost while the block runs: LIST calls, the keys
    they return, and (local lakes) the directory entries read, those of the commit log
    apart: its hour folders, and the entries read in them or without one. Patched into
    the store classes, so it counts inside `connect` too."""
    counts: Counter[str] = Counter()
    real_local, real_s3, real_folder = LocalStore.list, S3Store.list, LocalStore._folder

    def counted(real):  # noqa: ANN001, ANN202
        def listing(self, prefix: str, *, start_after: str | None = None) -> Iterator[str]:  # noqa: ANN001
            counts["LIST calls"] += 1
            for key in real(self, prefix, start_after=start_after):
                counts["keys listed"] += 1
                yield key

        return listing

    def folder(self, path: str) -> Sequence[str]:  # noqa: ANN001
        names = real_folder(self, path)
        counts["directory entries read"] += len(names)
        rel = Path(path).relative_to(self.root).as_posix() + "/"
        if rel.startswith(layout.COMMIT_LOG_PREFIX):
            hours = sum(n.endswith("/") for n in names)
            counts["commit-log hour folders read"] += hours
            counts["commit-log entries read"] += len(names) - hours
        return names

    LocalStore.list, S3Store.list = counted(real_local), counted(real_s3)  # type: ignore[method-assign]
    LocalStore._folder = folder  # type: ignore[method-assign]
    try:
        yield counts
    finally:
        LocalStore.list, S3Store.list, LocalStore._folder = real_local, real_s3, real_folder  # type: ignore[method-assign]


def connect_listings(url: str, s3=None) -> Counter[str]:  # noqa: ANN001
    """What one connect without a snapshot cache lists; fails when it reads more of the
    commit log than `MAX_LOG_ENTRIES_READ` (the cost must not grow with history)."""
    snapcache.clear_memory()
    with listings() as counts:
        connect(url, s3).close()
    read = counts["commit-log entries read"]
    if read > MAX_LOG_ENTRIES_READ:
        raise AssertionError(f"a connect read {read:,} commit-log entries: the whole log?")
    return counts


def measure(label: str, url: str, s3=None, repeat: int = 5) -> dict[str, float]:  # noqa: ANN001
    """Connect, compare, trend and timeseries latencies on one lake."""

    def cold() -> None:
        snapcache.clear_memory()  # as a new process without a snapshot cache directory
        connect(url, s3).close()

    figures = {
        "connect (no snapshot cache)": timed(cold, repeat=3),
        "connect (snapshot cached)": timed(lambda: connect(url, s3).close(), repeat=3),
    }
    listed = connect_listings(url, s3)
    with connect(url, s3) as lake:
        some = [
            r[0] for r in lake.con.sql("SELECT run_id FROM runs ORDER BY run_id LIMIT 2").fetchall()
        ]
        campaign = lake.con.sql("SELECT min(campaign_id) FROM runs").fetchone()[0]
        runs = lake.snapshot.commits.num_rows
        figures["compare (all runs, 4 metrics)"] = timed(lambda: compare(lake), repeat)
        figures["compare (one campaign)"] = timed(
            lambda: compare(lake, filt=RunFilter(campaign=campaign)), repeat
        )
        figures["trend (iops, one profile, per run)"] = timed(
            lambda: trend(lake, "iops", filt=RunFilter(profile="random-reads")), repeat
        )
        figures["timeseries (2 runs, per second)"] = timed(
            lambda: per_second(lake, some, "iops"), repeat
        )
        newest = lake.con.sql("SELECT max(started_at) FROM runs").fetchone()[0]
        figures["regressions (last 30 days, 4 metrics)"] = timed(
            lambda: regressions(lake, now=newest), min(repeat, 3)
        )
    print(f"\n{label}: {url} ({runs} committed runs)")
    for name, seconds in figures.items():
        print(f"  {name:<38} {seconds * 1000:9.1f} ms")
    print(
        "  one connect (no snapshot cache) listed: "
        + ", ".join(f"{n} {c:,}" for n, c in sorted(listed.items()))
    )
    return figures


def cli_seconds(words: list[str], cache: Path) -> float:
    """Wall time of `fiolake WORDS` as a new process, snapshot cache in `cache`."""
    return cli_run(words, cache)[0]


def cli_run(words: list[str], cache: Path) -> tuple[float, int]:
    """Wall time and peak RSS (bytes) of `fiolake WORDS` as a new process, snapshot cache
    in `cache`; CalledProcessError when it fails (exit 1 is `gate`'s "worse": an answer)."""
    env = {**os.environ, "FIOLAKE_SNAPSHOT_CACHE": str(cache)}
    command = [sys.executable, "-m", "fiolake", *words]
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)  # the rusage of this child alone
    seconds = time.perf_counter() - start
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    proc.stderr.close()
    if code not in (0, 1) or (code == 1 and words[0] != "gate"):
        raise subprocess.CalledProcessError(code, command, stderr=err)
    return seconds, usage.ru_maxrss * 1024


def cli_rows(words: list[str], url: str) -> list[list[str]]:
    """The CSV rows (header dropped) of `fiolake WORDS --lake URL --format csv`."""
    out = subprocess.run(
        [sys.executable, "-m", "fiolake", *words, "--lake", url, "--format", "csv"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return [line.split(",") for line in out.stdout.splitlines()[1:]]


# Issue 44's questions: name -> (goal in seconds at a million runs, or None).
GOALS = {
    'sql "select 1"': None,
    "compare --campaign": 1.0,
    "compare (pooled)": 1.0,
    "gate (default baseline)": 1.0,
    "gate (the night before)": 1.0,
    "trend (one case, a year)": 1.0,
    "regressions (every case)": 3.0,
}


def questions(url: str) -> dict[str, list[str]]:
    """The fiolake commands of `GOALS` on the lake at `url`: `compare --campaign` of the
    first campaign (as before 2026-12-07), `gate` of the newest campaign against the one
    before it, `trend` of the first case of the newest campaign over 365 days."""
    (first,), (newest,) = cli_rows(
        ["sql", "SELECT min(campaign_id) FROM runs UNION ALL "
         "SELECT campaign_id FROM (SELECT campaign_id, min(started_at) AS t FROM runs "
         "GROUP BY 1 ORDER BY t DESC LIMIT 1)"], url,
    )  # fmt: skip
    ((before,),) = cli_rows(
        ["sql", "SELECT campaign_id FROM (SELECT campaign_id, min(started_at) AS t FROM runs "
         f"WHERE campaign_id <> '{newest}' GROUP BY 1 ORDER BY t DESC LIMIT 1)"], url,
    )  # fmt: skip
    ((case,),) = cli_rows(
        ["sql", "SELECT r.backend || '/' || r.profile || '/' || x.job_name || '/' || x.direction "
         f"FROM results x JOIN runs r USING (run_id) WHERE r.campaign_id = '{newest}' "
         "ORDER BY 1 LIMIT 1"], url,
    )  # fmt: skip
    backend, profile, job, direction = case.split("/")
    return {
        'sql "select 1"': ["sql", "select 1"],
        "compare --campaign": ["compare", "--campaign", first],
        "compare (pooled)": ["compare"],
        "gate (default baseline)": ["gate", "--campaign", newest],
        "gate (the night before)": ["gate", "--campaign", newest, "--baseline-campaign", before],
        "trend (one case, a year)": [
            "trend", "--backend", backend, "--profile", profile, "--job", job,
            "--direction", direction, "--metric", "iops", "--since", "365d",
        ],
        "regressions (every case)": ["regressions", "--since", "all"],
    }  # fmt: skip


def bytecode_state() -> str:
    """How many of fiolake's modules have current bytecode beside them, and whether new
    processes may write it: each process compiles the stale ones it imports where
    PYTHONDONTWRITEBYTECODE is set (~0.1 s of the gate; `make venv` compiles them)."""
    import importlib.util

    import fiolake

    sources = list(Path(fiolake.__file__).parent.rglob("*.py"))
    current = 0
    for source in sources:
        cached = Path(importlib.util.cache_from_source(str(source)))
        current += cached.exists() and cached.stat().st_mtime >= source.stat().st_mtime
    writes = "not written" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "written"
    return f"fiolake bytecode: {current} of {len(sources)} modules current ({writes} by the runs)"


def end_to_end(urls: list[str], repeat: int) -> None:
    """Issue 44's questions (`GOALS`) as new processes, the lakes alternating run by run
    (so their ratio is of the same moments): with an empty snapshot cache each time, and
    with a warm one. The last lake's medians are judged against the goals, its ratio to
    the first lake's against ≤ 1.5×; peak RSS against < 2 GiB."""
    asks = {url: questions(url) for url in urls}
    times: dict[tuple[str, str, str], list[float]] = {}
    peaks: dict[tuple[str, str], int] = {}
    with tempfile.TemporaryDirectory(prefix="fiolake-snapcache-") as caches:
        warm = {url: Path(caches, f"warm-{i}") for i, url in enumerate(urls)}
        for url in urls:
            cli_seconds(["sql", "select 1", "--lake", url], warm[url])  # fills the warm cache
        for _ in range(repeat):
            for name in GOALS:
                for url in urls:
                    cold = Path(tempfile.mkdtemp(dir=caches))
                    for kind, cache in (("cold", cold), ("warm", warm[url])):
                        seconds, rss = cli_run([*asks[url][name], "--lake", url], cache)
                        times.setdefault((name, kind, url), []).append(seconds)
                        peaks[name, url] = max(peaks.get((name, url), 0), rss)
    print(f"\nend to end, new processes, median [range] of {repeat} (cold: empty snapshot cache);")
    print(f"  {bytecode_state()}:")
    for name, goal in GOALS.items():
        for kind in ("cold", "warm"):
            runs = [times[name, kind, url] for url in urls]
            medians = [statistics.median(r) for r in runs]
            cells = " | ".join(
                f"{m:5.2f} s [{min(r):.2f}–{max(r):.2f}]"
                for m, r in zip(medians, runs, strict=True)
            )
            ratio = medians[-1] / medians[0]
            judged = f"  ({ratio:.2f}× last / first{', ≤ 1.5×' if ratio <= 1.5 else ', > 1.5×'})"
            judged = judged if len(urls) > 1 else ""
            if goal is not None and kind == "warm":
                under = sum(t < goal for t in runs[-1])
                verdict = "met" if medians[-1] < goal else "NOT MET"
                judged += f"  < {goal:g} s: {verdict}, {under} of {len(runs[-1])} runs"
            print(f"  fiolake {name:<26} {kind}: {cells}{judged}")
        peak = max(peaks[name, url] for url in urls)
        held = "(< 2 GiB)" if peak < 2**31 else "— over 2 GiB"
        print(f"  {'':34} peak RSS {peak / 2**30:.2f} GiB {held}")


def startup(url: str, s3) -> None:  # noqa: ANN001
    """Snapshot cost with every marker listed (before the commit log) vs through the log,
    and `fiolake compare` end to end (process start to output)."""
    store = open_store(url, s3)
    full = timed(lambda: scan(store, full_listing=True), repeat=3)
    logged = timed(lambda: scan(store), repeat=3)
    print(f"\nsnapshot of {url}:")
    print(f"  every marker listed (before)              {full * 1000:9.1f} ms")
    print(f"  commit log since the compaction           {logged * 1000:9.1f} ms")
    print(f"  ratio log / full listing                  {logged / full:9.2f}×")
    fiolake = [sys.executable, "-m", "fiolake"]
    subprocess.run([*fiolake, "--help"], check=True, capture_output=True)  # warm the page cache
    seconds = timed(
        lambda: subprocess.run(
            [*fiolake, "compare", "--lake", url], check=True, capture_output=True
        ),
        repeat=5,
    )
    bare = timed(
        lambda: subprocess.run(
            [sys.executable, "-c", "import duckdb, pyarrow, pandas, botocore.session"], check=True
        ),
        repeat=5,
    )
    verdict = "met" if seconds < 1.5 else "MISSED"
    print(
        f"  fiolake compare, end to end               {seconds * 1000:9.1f} ms "
        f"(goal < 1.5 s: {verdict})"
    )
    print(f"  of which python + duckdb/pyarrow/pandas/botocore imports alone {bare * 1000:.0f} ms")


def upload(root: Path, bucket: str, prefix: str) -> int:
    """Copy a local lake (minus empty placeholders) into the bucket under `prefix`."""
    from fiolake.config import Settings
    from fiolake.s3client import s3_client

    client = s3_client(Settings.from_env().s3)  # type: ignore[arg-type]
    # Nor the commit log: readers list it from just before the generation's
    # commits_listed_at on (a keyed range), so older entries would cost only upload time.
    log = root / layout.COMMIT_LOG_PREFIX
    files = [
        p
        for p in root.rglob("*")
        if p.is_file()
        and not p.name.startswith(".")
        and p.stat().st_size > 0
        and not p.is_relative_to(log)
    ]

    def put(path: Path) -> None:
        key = f"{prefix}/{path.relative_to(root).as_posix()}"
        client.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(put, files))
    return len(files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--loose-runs", type=int, default=500)
    parser.add_argument("--keep", action="store_true", help="keep the lakes (prints where)")
    parser.add_argument(
        "--runs-per-day",
        type=int,
        default=100,
        help="history density: 100 spreads 10,000 runs over 100 days; a year of a 100-host "
        "fleet (issue 44) is about 3,000",
    )
    parser.add_argument(
        "--campaign-runs",
        type=int,
        default=0,
        help="a campaign every N runs (the benches before 2026-12-07: 200); default one a "
        "night, as a fleet runs them",
    )
    parser.add_argument(
        "--build-only", action="store_true", help="build and keep the big lake, measure nothing"
    )
    parser.add_argument(
        "--lake",
        nargs="+",
        help="only measure these kept compacted lakes (s3://BUCKET/PREFIX too: those are "
        "timed end to end only, with FIOLAKE_S3_* set as `fiolake stack env` prints)",
    )
    parser.add_argument(
        "--end-to-end",
        type=int,
        default=0,
        metavar="N",
        help="with --lake: also time fiolake commands as new processes, N times each",
    )
    args = parser.parse_args()
    global CAMPAIGN_RUNS
    CAMPAIGN_RUNS = args.campaign_runs
    if args.lake is not None:
        print(f"load average before: {os.getloadavg()}")
        for lake in args.lake:
            if "://" not in lake:  # the library figures read a local lake
                measure("local, compacted (kept)", lake)
        if args.end_to_end:
            end_to_end(args.lake, args.end_to_end)
        print(f"load average after: {os.getloadavg()}")
        return
    work = Path(tempfile.mkdtemp(prefix="fiolake-bench-"))
    try:
        big, small = work / "compacted-lake", work / "loose-lake"
        start = time.perf_counter()
        spacing = timedelta(days=1) / args.runs_per_day
        generation = build_compacted(big, args.runs, placeholders=True, spacing=spacing)
        built = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        data = du(big / "compacted")
        shape = f"{args.runs} runs × {len(JOBS)} jobs × {len(DIRECTIONS)} directions"
        days = args.runs / args.runs_per_day
        print(f"synthetic lake: {shape}, {SECONDS} s timeseries, {days:,.0f} days of history; "
              f"built in {built:.1f} s, peak RSS {peak:.2f} GiB")  # fmt: skip
        rows = args.runs * len(JOBS) * len(DIRECTIONS)
        print(
            f"  rows: runs {args.runs:,}, results {rows:,}, timeseries {rows * SECONDS:,}, "
            f"percentiles {rows * len(PERCENTILES):,}"
        )
        print(
            f"  size on disk (compacted Parquet, zstd): {data / 2**20:.1f} MiB "
            f"({data / args.runs / 1024:.1f} KiB per run)"
        )
        record = latest_generation(LocalStore(big))
        print(f"  compacted by `compact`: generation {generation}, record format {record.format}")
        if args.build_only:
            print(f"lake: {big}")
            return
        local_big = measure("local, compacted", str(big))

        build_loose(small, args.loose_runs)
        loose_size = du(small / "results")
        per_run = loose_size / args.loose_runs / 1024
        print(
            f"\nloose lake: {args.loose_runs} runs as {4 * args.loose_runs} per-run files, "
            f"{loose_size / 2**20:.1f} MiB ({per_run:.1f} KiB per run)"
        )
        s3_url = None
        if os.environ.get("FIOLAKE_S3_ENDPOINT"):
            from fiolake.config import Settings

            bucket = Settings.from_env().lake.removeprefix("s3://").split("/")[0]
            prefix = f"bench-{secrets.token_hex(4)}"
            s3_url = f"s3://{bucket}/{prefix}"
            start = time.perf_counter()
            count = upload(small, bucket, f"{prefix}/loose")
            print(
                f"uploaded {count} objects to {s3_url}/loose in {time.perf_counter() - start:.1f} s"
            )
        before = measure("local, loose per-run files", str(small))
        start = time.perf_counter()
        report = compact(LocalStore(small), grace=timedelta(0))
        took = time.perf_counter() - start
        print(
            f"\ncompaction of the loose lake: {took:.2f} s, generation {report.generation}, "
            f"{len(report.merged)} Delta tables appended to"
        )
        after = measure("local, same lake after compaction", str(small))
        print("\nspeed-up from compaction (loose / compacted):")
        for name in before:
            print(f"  {name:<38} {before[name] / after[name]:9.1f}×")
        goal = local_big["compare (all runs, 4 metrics)"]
        verdict = "met" if goal < 1.0 else "MISSED"
        print(f"\ngoal compare < 1 s on {args.runs} runs locally: {goal * 1000:.0f} ms ({verdict})")

        if s3_url is None:
            print('\n(to measure MinIO too: eval "$(fiolake stack env)" and run again)')
            return
        from fiolake.config import Settings

        settings = Settings.from_env().s3
        s3_before = measure("MinIO, loose per-run files", f"{s3_url}/loose", settings, 3)
        start = time.perf_counter()
        compact(open_store(f"{s3_url}/loose", settings), grace=timedelta(0))
        print(f"\ncompaction on MinIO: {time.perf_counter() - start:.2f} s")
        s3_after = measure("MinIO, same lake after compaction", f"{s3_url}/loose", settings, 3)
        print("\nspeed-up from compaction on MinIO (loose / compacted):")
        for name in s3_before:
            print(f"  {name:<38} {s3_before[name] / s3_after[name]:9.1f}×")
        bucket = s3_url.removeprefix("s3://").split("/")[0]
        start = time.perf_counter()
        count = upload(big, bucket, f"{s3_url.split('/', 3)[3]}/compacted")
        took = time.perf_counter() - start
        print(f"\nuploaded {count} objects to {s3_url}/compacted in {took:.1f} s")
        print("  (not the empty per-run placeholders: a compacted lake never lists covered ones)")
        measure("MinIO, compacted", f"{s3_url}/compacted", settings, 3)
        startup(f"{s3_url}/compacted", settings)
    finally:
        if args.keep:
            print(f"lakes kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
