"""What a comparison's p-values were adjusted across, in words (`Comparison.family`).

`compare` adjusts over a family of tests — the whole question, or within each metric or
profile, or the shown table only — and says which in one line, e.g.
`campaign C vs disk, 18 tests, Holm`, shown under every comparison table.
"""

from __future__ import annotations

from fiolake.aggregator.rows.filters import RunFilter
from fiolake.timetext import iso_utc


def family_words(filt: RunFilter, baseline: str, tests: int, adjustment: str, family: str) -> str:
    """`campaign C vs disk, 18 tests, Holm`: what the p-values were adjusted across."""
    method = "Benjamini–Hochberg" if adjustment == "fdr" else "Holm"
    where = filt.describe() if family == "table" else _question_words(filt)
    within = {"metric": ", within each metric", "profile": ", within each profile"}
    return f"{where} vs {baseline}, {tests} tests, {method}{within.get(family, '')}" + (
        " (the shown table only)" if family == "table" else ""
    )


def _question_words(filt: RunFilter) -> str:
    """The question's runs in words: campaigns, backends, run count, since; else all runs."""
    parts = []
    if filt.campaign:
        parts.append(f"campaign {filt.campaign}")
    parts += [f"campaign {c}" for c in filt.campaigns]
    parts += [f"backend {b}" for b in filt.backends]
    if filt.runs:
        parts.append(f"{len(filt.runs)} runs")
    if filt.since:
        parts.append(f"since {iso_utc(filt.since, 'minutes')}")
    return ", ".join(parts) or "all runs"
