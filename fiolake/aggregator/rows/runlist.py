"""The runs table the app lists: status, why a run failed or was refused, where it ran."""

from __future__ import annotations

from typing import Any

from fiolake.aggregator.lake.lake import Lake, literals
from fiolake.aggregator.rows.envdiff import ENV_COLUMNS
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.rows.series import fetch_rows

STATUSES = ("ok", "failed", "rejected", "interrupted")
# What a run is, then why it went wrong, then where and how it ran (envdiff's columns).
LIST_COLUMNS = (
    "started_at",
    "backend",
    "profile",
    "repetition",
    "sequence",
    "role",  # measure | precondition (runner.precondition)
    "preconditioned_by",
    "status",
    "error",
    "flags",
    "host_lock_wait_ms",
    "campaign_id",
    "run_id",
    *(c for c in ENV_COLUMNS if c not in ("fio_path", "job_file_sha256")),
)


def list_runs(
    lake: Lake, filt: RunFilter, statuses: tuple[str, ...] = (), limit: int = 1000
) -> tuple[list[str], list[tuple[Any, ...]], int]:
    """(columns, rows newest first, how many match) of the runs `filt` and `statuses`
    select (`filt.status` is ignored: every status is listed unless `statuses` says)."""
    where = RunFilter(
        campaign=filt.campaign,
        backends=filt.backends,
        profile=filt.profile,
        since=filt.since,
        status=None,
    ).where("runs", any_role=True)
    if statuses:
        where += f" AND status IN ({literals(statuses)})"
    present = {r[0] for r in lake.describe("runs")}
    cols = [c for c in LIST_COLUMNS if c in present]
    select = ", ".join(f'"{c}"' for c in cols)
    total = fetch_rows(lake, f"SELECT count(*) FROM runs WHERE {where}")[0][0]
    rows = fetch_rows(
        lake,
        f"SELECT {select} FROM runs WHERE {where} ORDER BY started_at DESC, run_id LIMIT ?",
        [limit],
    )
    return cols, rows, total
