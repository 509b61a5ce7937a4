"""The night summaries a question reads instead of folding every run again.

Compaction writes one summary row per night × case × run attributes
(`aggregator.lake.summaries`). A question over many nights reads those rows for the
compacted runs it selects, and folds only the rest from the views with the same SQL:
runs not compacted yet, and the nights a time window cuts through (a row's runs are
wholly inside the window, wholly outside, or its night is folded from its runs). The
rows it gives are partial summaries that the caller merges (`nightly`); their cost
follows the nights, not the runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from fiolake.aggregator.lake import summaries
from fiolake.aggregator.lake.lake import Lake, literal, literals
from fiolake.aggregator.rows import derived_view
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.rows.series import fetch_rows

VIEW = derived_view.name(summaries.TABLE)
# Runs not compacted are named in the query: past this many (weeks without `lake
# compact`) folding every run is no slower than a query that long.
LOOSE_LIMIT = 20_000


def summarised(lake: Lake) -> bool:
    """Whether the lake's summaries cover exactly the compacted runs and results (else
    every run is folded from the views)."""
    return derived_view.covers_compacted(lake, summaries.TABLE)


def loose_run_ids(lake: Lake) -> list[str]:
    """Committed runs whose runs or results rows the compacted tables do not hold."""
    loose = lake.snapshot.loose.items()
    return sorted({r for (table, _), runs in loose if table in ("runs", "results") for r in runs})


def answers(lake: Lake, metrics: Sequence[str]) -> bool:
    """Whether the summaries can answer questions of `metrics` (`partial_rows` gives
    SQL, not None, for any filter not by run)."""
    return _loose_if_answering(lake, metrics) is not None


def _loose_if_answering(lake: Lake, metrics: Sequence[str]) -> list[str] | None:
    """The runs not compacted (`loose_run_ids`), folded beside the summaries, when the
    summaries can answer questions of `metrics`; None when they cannot (no summaries,
    metrics they lack, more than LOOSE_LIMIT runs not compacted)."""
    if not set(metrics) <= set(summaries.METRICS) or not summarised(lake):
        return None
    loose = loose_run_ids(lake)
    return loose if len(loose) <= LOOSE_LIMIT else None


def partial_rows(lake: Lake, filt: RunFilter, metrics: Sequence[str]) -> str | None:
    """SQL of partial summary rows (the columns of `summaries.partial_sql`, without
    `run_ids`) that together fold exactly the runs `filt` selects; None when the
    summaries cannot answer (no summaries, metrics they lack, a filter by run, more than
    LOOSE_LIMIT runs not compacted)."""
    loose = None if filt.runs else _loose_if_answering(lake, metrics)
    if loose is None:
        return None
    derived_view.ensure(lake, summaries.TABLE)
    where = replace(filt, since=None, until=None).where("s")
    inside, cut = "true", []
    if filt.since is not None or filt.until is not None:
        lo = literal(filt.since) if filt.since else "'-infinity'::TIMESTAMPTZ"
        hi = literal(filt.until) if filt.until else "'infinity'::TIMESTAMPTZ"
        inside = f"(s.undated = 0 AND s.min_at >= {lo} AND s.max_at < {hi})"
        outside = f"(s.undated = s.runs OR s.max_at < {lo} OR s.min_at >= {hi})"
        cut = [
            str(row[0])
            for row in fetch_rows(
                lake,
                f"SELECT DISTINCT coalesce(s.campaign_id, '') FROM {VIEW} s WHERE {where} "
                f"AND NOT coalesce({inside}, false) AND NOT coalesce({outside}, false)",
            )
        ]
    names = summaries.column_names(with_ids=False)
    kept = f"{inside} AND coalesce(s.campaign_id, '') NOT IN ({literals(cut)})" if cut else inside
    parts = [f"SELECT {', '.join(names)} FROM {VIEW} s WHERE {where} AND {kept}"]
    if cut or loose:
        rest = [f"coalesce(r.campaign_id, '') IN ({literals(cut)})"] if cut else []
        rest += [f"r.run_id IN ({literals(loose)})"] if loose else []
        picked = f"{filt.where('r')} AND ({' OR '.join(rest)})"
        folded = summaries.partial_sql("runs", "results", picked, with_ids=False)
        parts.append(f"SELECT {', '.join(names)} FROM ({folded})")
    return " UNION ALL ".join(parts)
