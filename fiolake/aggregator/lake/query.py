"""Guarded SQL against the lake: read-only statements, a row cap and a time limit."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb

from fiolake.aggregator.lake.lake import Lake
from fiolake.errors import LakeError

# Statement types a user query may be; everything else could write or change settings.
READ_ONLY_TYPES = frozenset({duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN})

Params = Sequence[Any] | Mapping[str, Any] | None


@dataclass(frozen=True)
class QueryResult:
    """Columns, rows (raw values) and whether the row cap cut the result short."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool = False


def check_read_only(sql: str) -> None:
    """Raise LakeError unless `sql` is exactly one read-only statement (per DuckDB's parser)."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise LakeError(f"SQL error: {exc}") from exc
    if not statements:
        raise LakeError("SQL error: the query is empty")
    if len(statements) > 1:
        raise LakeError(f"the query has {len(statements)} statements: run one statement at a time")
    kind = statements[0].type
    if kind not in READ_ONLY_TYPES:
        raise LakeError(
            f"refusing a {kind.name} statement: the lake is read-only here "
            "(use SELECT, WITH … SELECT, DESCRIBE, SHOW or EXPLAIN)"
        )


def _seconds(value: float) -> str:
    return f"{value:g} s"


def run_query(
    lake: Lake,
    sql: str,
    params: Params = None,
    *,
    row_limit: int | None = None,
    timeout_s: float | None = None,
    read_only: bool = True,
) -> QueryResult:
    """Run `sql` with bound `params`; at most `row_limit` rows, interrupted after `timeout_s`."""
    if read_only:
        check_read_only(sql)
    cur = lake.cursor()  # its own connection: interrupting it stops no one else's query
    timed_out = threading.Event()

    def interrupt() -> None:
        timed_out.set()
        cur.interrupt()

    timer = threading.Timer(timeout_s, interrupt) if timeout_s else None
    try:
        if timer:
            timer.daemon = True
            timer.start()
        try:
            rel = cur.execute(sql, params) if params is not None else cur.execute(sql)
            columns = [d[0] for d in rel.description or []]
            if row_limit is None:
                rows = rel.fetchall()
                truncated = False
            else:
                rows = rel.fetchmany(row_limit + 1)
                truncated = len(rows) > row_limit
                rows = rows[:row_limit]
        except duckdb.InterruptException as exc:
            if timed_out.is_set():
                raise LakeError(
                    f"query exceeded the {_seconds(timeout_s or 0)} time limit: "
                    "narrow it (WHERE, LIMIT) or raise the limit (--timeout)"
                ) from exc
            raise LakeError("query interrupted") from exc
        except duckdb.Error as exc:
            if timed_out.is_set():
                raise LakeError(
                    f"query exceeded the {_seconds(timeout_s or 0)} time limit: "
                    "narrow it (WHERE, LIMIT) or raise the limit (--timeout)"
                ) from exc
            raise LakeError(f"SQL error: {exc}") from exc
    finally:
        if timer:
            timer.cancel()
        cur.close()
    return QueryResult(columns, [tuple(r) for r in rows], truncated)
