"""Retention benchmark (a script, not a test): `lake prune` on a big lake, then every engine.

    .venv/bin/python -m tests.bench.prune [--lake DIR | --runs 10000] [--keep 90d] [--no-spark]

DIR is a compacted lake, e.g. the one `python -m tests.bench.aggregator --runs 100000
--keep` leaves (it prints where); without it, the synthetic lake of that benchmark is built
with --runs runs in a temporary directory. Prints: rows per table through DuckDB `delta_scan`
before, the prune's time and rows deleted, rows per table after through `delta_scan`,
`fiolake sql` and Spark (local[2], Delta 4.4; unless --no-spark), the compaction that
vacuums the removed files, and the timeseries table's size before and after.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path[0] = str(Path(__file__).resolve().parents[2])

import duckdb
import duckdb_extension_delta

from fiolake.aggregator.lake import engines
from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.lake import connect, extension_file, quote
from fiolake.aggregator.lake.prune import prune_timeseries
from fiolake.store import LocalStore
from fiolake.units import parse_duration
from tests.bench.aggregator import build_compacted, du


def present(root: Path) -> list[str]:
    """Tables of `root` that have a Delta table."""
    return [t for t in engines.tables() if Path(engines.delta_uri(str(root), t)).is_dir()]


def duckdb_counts(root: Path) -> dict[str, int]:
    con = duckdb.connect()
    try:
        con.execute(f"LOAD {quote(str(extension_file(duckdb_extension_delta, 'delta')))}")
        for sql in (engines.register_delta("duckdb", str(root), t) for t in present(root)):
            con.execute(sql)
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in present(root)}
    finally:
        con.close()


def spark_counts(root: Path) -> dict[str, int]:
    from tests.spark_session import start_spark, stop_spark

    spark = start_spark("fiolake-bench-prune", driver_memory="2g")
    try:
        for t in present(root):
            spark.sql(engines.register_delta("spark", str(root), t))
        return {t: spark.table(t).count() for t in present(root)}
    finally:
        stop_spark(spark)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lake", type=Path)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--keep", default="90d")
    parser.add_argument("--no-spark", action="store_true")
    args = parser.parse_args()
    work = None
    if args.lake is None:
        work = Path(tempfile.mkdtemp(prefix="fiolake-bench-prune-"))
        args.lake = work / "lake"
        build_compacted(args.lake, args.runs, placeholders=False)
    try:
        run(args)
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)


def run(args: argparse.Namespace) -> None:
    """Prune `args.lake` and print what each engine reads before and after."""
    root, store = args.lake, LocalStore(args.lake)
    ts_dir = Path(engines.delta_uri(str(root), "timeseries"))
    size = du(ts_dir)
    print(f"before, DuckDB delta_scan: {duckdb_counts(root)}")
    start = time.perf_counter()
    report = prune_timeseries(store, timedelta(seconds=parse_duration(args.keep)))
    took = time.perf_counter() - start
    print(
        f"prune --keep-timeseries {args.keep}: {took:.1f} s, cutoff {report.cutoff}, "
        f"{report.deleted_rows:,} rows deleted, {report.rows:,} kept"
    )
    print(f"after, DuckDB delta_scan: {duckdb_counts(root)}")
    with connect(str(root)) as lake:
        ours = {
            t: lake.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in present(root)
        }
    print(f"after, fiolake sql:       {ours}")
    start = time.perf_counter()
    compact(store, grace=timedelta(0))
    print(f"compaction that vacuums the removed files: {time.perf_counter() - start:.1f} s")
    print(f"timeseries table: {size / 2**20:.0f} MiB before, {du(ts_dir) / 2**20:.0f} MiB after")
    if not args.no_spark:
        print(f"after, Spark:             {spark_counts(root)}")


if __name__ == "__main__":
    main()
