"""IOPS at an SLO in words: the answer sentence the CLI, the app page and the report share."""

from __future__ import annotations

from fiolake.aggregator.lake.columns import ratio_text
from fiolake.aggregator.stats.compare import CompareRow
from fiolake.aggregator.stats.saturation import (
    Case,
    Saturation,
    SaturationReport,
    bounds_note,
    sweep_job,
)
from fiolake.aggregator.stats.slo import ABOVE, BELOW, Slo
from fiolake.aggregator.stats.verdict_text import label
from fiolake.units import MISSING, human_count


def slo_words(slo: Slo) -> str:
    """`p99 ≤ 1ms`."""
    return slo.text().replace("<=", " ≤ ")


def iops_text(s: Saturation) -> str:
    """`180k IOPS [170k, 190k]`, `< 250 IOPS (first tested)`, `≥ 90k IOPS (last tested)`;
    an interval end beyond the loads tested reads `<` or `≥` its bound."""
    if s.status == BELOW:
        return f"< {human_count(s.iops_at_slo)} IOPS (first tested)"
    value = f"{human_count(s.iops_at_slo)} IOPS"
    if s.status == ABOVE:
        return f"≥ {value} (last tested)"
    if s.runs < 2:
        return f"{value} (one run: no interval)"
    low = human_count(s.ci_low) if s.ci_low is not None else "< first tested"
    high = human_count(s.ci_high) if s.ci_high is not None else "≥ last tested"
    return f"{value} [{low}, {high}]"


def knee_text(s: Saturation) -> str:
    """`64k → 60.0k IOPS` (the load at the knee and what it gave), or `—`."""
    if s.knee is None:
        return MISSING
    return f"{human_count(s.knee.load)} → {human_count(s.knee.iops)} IOPS"


def row_for(report: SaturationReport, s: Saturation) -> CompareRow | None:
    """The comparison of `s` against the baseline (None for the baseline itself)."""
    for row in report.comparisons:
        case = (row.profile, row.job_name, row.direction, row.workload_sha256)
        if row.group == s.group and case == s.row_key:
            return row
    return None


def verdict(row: CompareRow, min_effect: float) -> str:
    """A comparison's verdict cell: `label`, or for two bounds `inconclusive: cannot be
    compared at the loads tested: … — try rate_iops 6.4k` (`saturation.bounds_only`)."""
    return label(row, min_effect, bounds_note(row))


def sentences(report: SaturationReport, min_effect: float) -> list[str]:
    """One sentence per sweep × direction: every backend's IOPS at the SLO, then each
    against the baseline, e.g. `read, latency-at-load (rate_iops sweep) at p99 ≤ 1ms:
    tmpfs 180k IOPS [170k, 190k]; disk 9k IOPS [8k, 10k] — tmpfs 20× [18×, 22×] disk,
    better`; for two bounds, `— tmpfs vs disk: cannot be compared at the loads tested: …`."""
    cases: dict[Case, list[Saturation]] = {}
    for s in report.results:
        cases.setdefault(s.case, []).append(s)
    out = []
    for (profile, knob, direction, _), found in cases.items():
        ordered = sorted(found, key=lambda s: s.group != report.baseline)
        text = f"{direction}, {profile} ({sweep_job(knob)}) at {slo_words(report.slo)}: "
        text += "; ".join(f"{s.group} {iops_text(s)}" for s in ordered)
        verdicts = [
            f"{s.group} vs {report.baseline}: {bounds_note(r)}"
            if bounds_note(r)
            else f"{s.group} {ratio_text('iops', r.ratio, r.ratio_ci_low, r.ratio_ci_high)} "
            f"{report.baseline}, {label(r, min_effect)}"
            for s in ordered
            if (r := row_for(report, s)) is not None and (r.ratio is not None or bounds_note(r))
        ]
        out.append(text + (" — " + "; ".join(verdicts) if verdicts else ""))
    return out
