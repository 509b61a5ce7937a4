"""Reading a question's files while its statistics are still being imported.

A command that compares runs imports scipy and the statistics modules (~0.35 s of a
2-core machine, one core: imports hold the GIL) after it has connected, and only then
asks DuckDB, which reads the question's row groups from the store: on the
1,000,000-run MinIO lake `gate`'s first summary took 0.6 s where the same query,
its files read, took 0.34 s (issue 44). `read_ahead` runs a query over the same
columns and row groups on the other core meanwhile; its rows are dropped, its bytes
stay in DuckDB's file and metadata caches (`lake.configure_s3`: objects never change
under their keys), where the real question finds them. Since scipy imports on a thread
of its own while the gate's first queries run (`stats.special`), the statistics
modules take less of that wait; without the read-ahead the gate still took 1.07× on
the million-run lake (0.99× on the 100,000-run one; paired, 12 and 8 pairs).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence

import duckdb

from fiolake.aggregator.lake.lake import Lake, literals


def campaigns_sql(campaigns: Sequence[str], metrics: Sequence[str]) -> str:
    """A query that reads the `runs` of `campaigns` and, of their rows in `results`, the
    columns a comparison of `metrics` folds (job, direction, steady state, the metrics)."""
    values = ["max(x.job_name)", "max(x.direction)", "bool_and(x.steady_state)"]
    values += [f'max(x."{m}")' for m in metrics]
    return (
        f"SELECT {', '.join(values)} FROM results x WHERE x.run_id IN (SELECT run_id FROM runs "
        f"WHERE campaign_id IN ({literals(list(campaigns))}))"
    )


@contextlib.contextmanager
def read_ahead(lake: Lake, sql: str) -> Iterator[None]:
    """Run `sql` on a thread of its own while the block runs, its answer dropped. A
    failure is the real question's to report; one still running when the block ends is
    interrupted and waited for, so the lake is never closed under it."""
    cursor = lake.cursor()

    def run() -> None:
        with contextlib.suppress(duckdb.Error):
            cursor.execute(sql).fetchall()

    reader = threading.Thread(target=run, name="fiolake-read-ahead", daemon=True)
    reader.start()
    try:
        yield
    finally:
        # An interrupt that lands before DuckDB has started the query is forgotten when it
        # starts (1 run in 6 of the test): interrupt until the thread has ended.
        while reader.is_alive():
            cursor.interrupt()
            reader.join(0.05)
        cursor.close()
