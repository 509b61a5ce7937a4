"""Nightly compaction benchmark (issue 44): one night's runs compacted into lakes of
different histories must cost the same.

    .venv/bin/python -m tests.bench.nightly_compact --lake LAKE10K LAKE [--night-runs 3000]
        [--nights 2] [--command]

LAKE10K and LAKE are compacted lakes `tests.bench.aggregator --runs N --keep` built (10,000
and 100,000 runs). Into each, night after night and the lakes alternating (drift on a
shared machine reaches both alike), it writes one night of --night-runs runs the way
runners write them (one Parquet file per table per run, then the commit marker and its
commit-log entry) and times `compact` on it, counting what the compaction listed. It
prints each compaction, then the median of each lake and its ratio to the first lake's:
the goal is at most 1.2× from the smaller history to the larger. The goal is about the
nights that read the commit log; the weekly night that lists every marker
(`compact.FULL_LISTING_EVERY`; the first night after an upgrade too) is printed apart
with its own ratio. The lakes keep the nights they were given (each grows by
nights × night-runs runs). With --command each night is compacted by `fiolake lake
compact` as a process of its own, timed from start to exit, and the peak RSS printed is
those processes' (without it, this process's, which also writes the nights).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import resource
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path[0] = str(Path(__file__).resolve().parents[2])

from fiolake import layout
from fiolake.aggregator.lake.compact import compact
from fiolake.commits import Commit
from fiolake.schema import parquet_bytes
from fiolake.store import LocalStore
from tests.bench.aggregator import JOBS, SECONDS, build_tables, listings, write_file

FIRST_NIGHT_RUN = 50_000_000  # run numbers of added nights: beyond any lake the bench builds
GOAL = 1.2


def write_night(root: Path, first: int, count: int, night: datetime) -> None:
    """`count` runs started one after another from `night`, as runners leave them: the
    four tables' files, the marker, and the commit-log entry (keyed now: written since the
    lake's last compaction, as a night's runs are)."""
    rng = np.random.default_rng(first)
    logged = datetime.now(UTC)
    for k in range(count):
        i = first + k
        run_id, job_id = f"run-{i:08d}", f"job-{i:08d}"
        started = night + timedelta(seconds=10 * k)
        tables = build_tables(i, 1, rng)
        runs = tables["runs"]
        times = {"started_at": started, "finished_at": started + timedelta(seconds=SECONDS)}
        for column, value in times.items():
            at = runs.schema.get_field_index(column)
            runs = runs.set_column(
                at, runs.schema.field(at), pa.array([value], runs.schema.field(at).type)
            )
        ids = {"run_id": run_id, "job_id": job_id}
        for name, data in {**tables, "runs": runs}.items():
            for column, value in ids.items():
                at = data.schema.get_field_index(column)
                if at >= 0:
                    field = data.schema.field(at)
                    data = data.set_column(at, field, pa.array([value] * data.num_rows, field.type))
            write_file(root, layout.result_key(name, started, run_id), parquet_bytes(data))
        marker = Commit(job_id, run_id, f"night-{night:%Y%m%d}", "runner-0", "ok",
                        started.isoformat()).to_bytes()  # fmt: skip
        write_file(root, layout.commit_key(job_id), marker)
        write_file(root, layout.commit_log_key(logged, job_id), marker)


def free_block(root: Path, first: int, count: int) -> int:
    """The first run number from `first` on, in steps of 1,000 nights of `count` runs,
    whose night an earlier run of this bench did not add to the lake at `root` (the same
    ids again would add nothing to compact)."""
    while (root / layout.commit_key(f"job-{first:08d}")).exists():
        first += count * 1000
    return first


def compact_night(root: Path, profile: bool = False) -> tuple[float, dict[str, int], bool]:
    """Seconds `compact` took on the lake at `root`, what it listed, and whether it listed
    every marker; with `profile`, also prints where the time went (cProfile, cumulative,
    the top 25)."""
    profiler = cProfile.Profile() if profile else None
    start = time.perf_counter()
    with listings() as counts:
        if profiler:
            profiler.enable()
        report = compact(LocalStore(root), grace=timedelta(0))
        if profiler:
            profiler.disable()
    took = time.perf_counter() - start
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    if report.generation is None:
        raise RuntimeError(f"the night was not compacted into {root}: {report}")
    return took, dict(counts), report.full_listing


def compact_command(root: Path) -> tuple[float, float, bool]:
    """Seconds `fiolake lake compact` took on the lake at `root` as a process of its own
    (start to exit: interpreter and imports included), the peak RSS in GiB of the
    compaction processes so far (the issue's "peak memory of the command": this bench's
    own process also writes the nights), and whether it listed every marker."""
    argv = [sys.executable, "-m", "fiolake", "lake", "compact", "--lake", str(root),
            "--grace", "0s"]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"`fiolake lake compact` on {root} exited {done.returncode}:\n"
                           f"{done.stdout}{done.stderr}")  # fmt: skip
    said = done.stdout + done.stderr
    if "nothing to compact" in said:
        raise RuntimeError(f"the night was not compacted into {root}: {said}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
    return took, peak, "every commit marker listed" in said


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lake", type=Path, nargs="+", required=True,
                        help="kept compacted lakes, the smallest history first")  # fmt: skip
    parser.add_argument("--night-runs", type=int, default=3000)
    parser.add_argument("--nights", type=int, default=2)
    parser.add_argument("--profile", action="store_true",
                        help="profile the last night's compaction of each lake")  # fmt: skip
    parser.add_argument("--command", action="store_true",
                        help="compact with `fiolake lake compact`, a process of its own: "
                        "its time from start to exit and its peak RSS")  # fmt: skip
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}; {args.night_runs} runs a night, "
          f"{len(JOBS)} jobs each")  # fmt: skip
    took: dict[Path, list[float]] = {lake: [] for lake in args.lake}
    full: dict[Path, list[float]] = {lake: [] for lake in args.lake}  # every marker listed
    night0 = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    for n in range(args.nights):
        for j, lake in enumerate(args.lake):
            first = free_block(lake, FIRST_NIGHT_RUN + (n * len(args.lake) + j) * args.night_runs,
                               args.night_runs)  # fmt: skip
            start = time.perf_counter()
            write_night(lake, first, args.night_runs, night0 - timedelta(days=args.nights - n))
            written = time.perf_counter() - start
            if args.command:
                seconds, peak, listed_all = compact_command(lake)
                counts: dict[str, int] = {}
                whose = "of the `lake compact` processes"
            else:
                seconds, counts, listed_all = compact_night(
                    lake, args.profile and n == args.nights - 1
                )
                # The process's peak so far: it rises with the compaction that needed the
                # most (writing a night's files takes little), so the first night of the
                # largest lake that raises it is the figure (issue 44: < 2 GiB).
                peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
                whose = "of this process"
            (full if listed_all else took)[lake].append(seconds)
            how = "every marker listed" if listed_all else "commit log read"
            print(f"night {n + 1} into {lake}: written in {written:.1f} s, compacted in "
                  f"{seconds:.2f} s ({how}); {counts}; peak RSS {whose} so far "
                  f"{peak:.2f} GiB")  # fmt: skip
    if all(full.values()):
        base = statistics.median(full[args.lake[0]])
        for lake, times in full.items():
            median = statistics.median(times)
            print(f"{lake}: every marker listed (weekly), median {median:.2f} s, "
                  f"{median / base:.2f}× the first lake")  # fmt: skip
    if not all(took.values()):
        print("no night read only the commit log in every lake: give more --nights")
        return
    base = statistics.median(took[args.lake[0]])
    for lake, times in took.items():
        median = statistics.median(times)
        print(f"{lake}: compaction median {median:.2f} s, {median / base:.2f}× the first lake")
    worst = max(statistics.median(t) for t in took.values()) / base
    print(f"goal ≤ {GOAL}× from the first lake: {worst:.2f}× "
          f"({'met' if worst <= GOAL else 'NOT met'})")  # fmt: skip
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
