"""The run series a trend reads instead of a year's result rows.

Compaction keeps each run's headline values per job × direction sorted by case
(`aggregator.lake.series`). A trend of one case reads the rows of the compacted runs it
selects from there — a row group or two of each file — and the runs not compacted yet
from the views, with the same fold. The values are the ones the views' fold gives: the
same aggregate, computed once at compaction.
"""

from __future__ import annotations

from fiolake.aggregator.lake import series
from fiolake.aggregator.lake.lake import Lake, literal
from fiolake.aggregator.rows import derived_view
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.rows.night_rows import LOOSE_LIMIT, loose_run_ids

VIEW = derived_view.name(series.TABLE)
# What a per-run row of a trend holds, in this order.
COLUMNS = ("backend", "profile", "job_name", "direction", "started_at", "run_id", "campaign_id")


def covered(lake: Lake) -> bool:
    """Whether the run series covers exactly the compacted runs (else trends read
    `results`)."""
    return derived_view.covers_compacted(lake, series.TABLE)


def compacted_rows(
    lake: Lake, filt: RunFilter, metric: str, case: tuple[str | None, str | None] | None
) -> tuple[str, list[str]] | None:
    """SQL of the per-run rows (COLUMNS, then `value`) of `metric` of the compacted runs
    `filt` selects, from the run series (alias s), and the runs not compacted yet, for
    the caller to fold from the views; `case` (job name, direction; either may be None)
    keeps that job and/or direction. None when the
    series cannot answer: a metric it does not keep, it does not cover the compacted
    runs, or more than LOOSE_LIMIT runs are not compacted."""
    if metric not in series.METRICS or filt.runs or not covered(lake):
        return None
    loose = loose_run_ids(lake)
    if len(loose) > LOOSE_LIMIT:
        return None
    # One footer binds it: every file holds `series.rows_sql`'s columns (appended or
    # merged), so reading the other footers to line them up bought nothing (0.12 s).
    derived_view.ensure(lake, series.TABLE, one_schema=True)
    job, direction = case or (None, None)
    where = [filt.where("s")]
    where += [f"s.job_name = {literal(job)}"] if job is not None else []
    where += [f"s.direction = {literal(direction)}"] if direction is not None else []
    where += _key_range(filt, job, direction)
    picked = ", ".join(f"s.{c}" for c in COLUMNS)
    sql = f'SELECT {picked}, s."{metric}" AS value FROM {VIEW} s WHERE {" AND ".join(where)}'
    return sql, loose


def _key_range(filt: RunFilter, job: str | None, direction: str | None) -> list[str]:
    """The range of case keys the question's rows have (`series.case_prefix`), as far as
    it names the case parts in order: what row groups' statistics skip by. The other
    conditions imply it; it only tells the reader where not to look."""
    parts: list[str] = []
    for value in (
        filt.backends[0] if len(filt.backends) == 1 else None,
        filt.profile,
        job,
        direction,
    ):
        if value is None:
            break
        parts.append(value)
    if not parts:
        return []
    prefix = series.case_prefix(parts)
    key = f"s.{series.CASE_KEY}"
    return [f"{key} >= {literal(prefix)}", f"{key} < {literal(prefix[:-1] + chr(32))}"]
