"""How much load each backend takes before its latency breaks: IOPS at a latency SLO.

Per group (backend, or campaign for the gate) × sweep profile × direction × effective
job: the curve (load → median IOPS, bandwidth, p50/p99/p99.9 over the runs), its knee
(Kneedle), and the largest IOPS whose percentile meets the SLO on the median curve with a
percentile-bootstrap interval over the runs (`slo`). Two groups are compared by that
number under the one statistics contract: each run of a sweep is a whole curve, so each
run has its own IOPS at the SLO; their log summaries go through `stats.compare_summaries`
(ratio of geometric means, Welch on logs, TOST), Holm across the question, and the
verdict rule of `compare` (docs/statistics.md §10).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from fiolake.aggregator.lake.lake import Lake
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.rows.sweeps import LoadPoint, load_points
from fiolake.aggregator.stats import power, stats
from fiolake.aggregator.stats import slo as slo_math
from fiolake.aggregator.stats.compare import NO_BASELINE, TOO_FEW, CompareRow, decide
from fiolake.aggregator.stats.verdict_text import EQUIVALENT, INCONCLUSIVE
from fiolake.errors import LakeError, UsageProblem
from fiolake.units import human_count

IOPS_AT_SLO = "iops_at_slo"  # the metric's name in gate, trend and JSON
UNCOMPARABLE = "cannot be compared at the loads tested"  # both sides bounds (issue 40)
Case = tuple[str, str, str, str | None]  # profile, knob, direction, workload
HOLM_NAMES = {"holm": "Holm", "fdr": "Benjamini–Hochberg"}
# SLO percentile -> CurvePoint field, from the one mapping (slo.PERCENTILE_COLUMNS: the
# results column, also LoadPoint's field): clat_p99_ns -> p99_ns.
CURVE_FIELDS = {p: c.removeprefix("clat_") for p, c in slo_math.PERCENTILE_COLUMNS.items()}


def sweep_job(knob: str) -> str:
    """The job name a load sweep's rows carry (`rate_iops sweep`) in compare, gate, trend
    and the report: a sweep is one case, not its sections. Only this module writes it;
    `Saturation.row_key` is what a row of the sweep is matched by."""
    return f"{knob} sweep"


@dataclass(frozen=True)
class CurvePoint:
    """One load of a sweep: medians over the runs, and the bootstrap band of the SLO's
    percentile and of IOPS (95 %, whole runs resampled)."""

    load: float
    job_name: str
    runs: int
    iops: float
    bw_bytes: float
    p50_ns: float | None
    p99_ns: float | None
    p999_ns: float | None
    slo_ns_low: float | None
    slo_ns_high: float | None
    iops_low: float
    iops_high: float

    def latency(self, percentile: str) -> float | None:
        """The median of an SLO percentile (`p50`, `p99`, `p99.9`) at this load."""
        return getattr(self, CURVE_FIELDS[percentile])


@dataclass(frozen=True)
class Saturation:
    """One group's sweep in one direction: the curve, the knee, and IOPS at the SLO."""

    group: str
    profile: str
    knob: str
    direction: str
    workload_sha256: str | None
    curve: list[CurvePoint]
    knee: CurvePoint | None
    iops_at_slo: float  # WITHIN: interpolated; BELOW/ABOVE: the bound (see slo.iops_at_slo)
    status: str  # slo.WITHIN | slo.BELOW | slo.ABOVE
    ci_low: float | None  # None: the interval reaches below the first load tested
    ci_high: float | None  # None: above the last
    runs: int
    per_run: dict[str, tuple[float, str]] = field(default_factory=dict)  # run -> value, status

    @property
    def case(self) -> Case:
        """What a comparison pools on: profile, knob, direction, workload."""
        return self.profile, self.knob, self.direction, self.workload_sha256

    @property
    def row_key(self) -> tuple[str, str, str, str | None]:
        """(profile, job name, direction, workload) of this sweep's CompareRow."""
        return self.profile, sweep_job(self.knob), self.direction, self.workload_sha256


@dataclass(frozen=True)
class SaturationReport:
    """The answer of `saturation`: every group's sweeps and the comparisons to a baseline."""

    slo: slo_math.Slo
    baseline: str | None
    results: list[Saturation]
    comparisons: list[CompareRow]
    family: str


def _medians(matrix: np.ndarray) -> np.ndarray:
    out = np.full(matrix.shape[1:], np.nan)
    seen = ~np.all(np.isnan(matrix), axis=0)
    out[seen] = np.nanmedian(matrix[:, seen], axis=0)
    return out


def _or_none(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def analyse_one(points: Sequence[LoadPoint], slo: slo_math.Slo, group: str) -> Saturation:
    """The curve, knee and IOPS at the SLO of one group's points of one case."""
    loads = sorted({p.load for p in points})
    runs = sorted({p.run_id for p in points})
    # runs × loads × (iops, bw, p50, p99, p99.9), NaN where a run lacks a load
    cube = np.full((len(runs), len(loads), 5), np.nan)
    names: dict[float, str] = {}
    for p in points:
        row = (p.iops, p.bw_bytes, *(getattr(p, c) for c in slo_math.PERCENTILE_COLUMNS.values()))
        cube[runs.index(p.run_id), loads.index(p.load)] = [np.nan if v is None else v for v in row]
        names[p.load] = p.job_name
    at = 2 + list(slo_math.PERCENTILE_COLUMNS).index(slo.percentile)  # the row's order
    med = _medians(cube)
    value, code = slo_math.iops_at_slo(med[:, 0], med[:, at], slo.limit_ns)
    boot = slo_math.resample_medians(cube[:, :, [0, at]])  # resamples × loads × 2
    boot_value, boot_code = slo_math.iops_at_slo(boot[..., 0], boot[..., 1], slo.limit_ns)
    low, high = slo_math.interval(boot_value, boot_code) if len(runs) > 1 else (None, None)
    band = np.nanquantile(boot, [0.025, 0.975], axis=0)  # 2 × loads × 2
    curve = [
        CurvePoint(
            load,
            names[load],
            int(np.sum(~np.isnan(cube[:, i, 0]))),
            float(med[i, 0]),
            float(med[i, 1]),
            _or_none(med[i, 2]),  # p50, p99, p99.9: PERCENTILE_COLUMNS' order, as the cube
            _or_none(med[i, 3]),
            _or_none(med[i, 4]),
            _or_none(band[0, i, 1]),
            _or_none(band[1, i, 1]),
            float(band[0, i, 0]),
            float(band[1, i, 0]),
        )
        for i, load in enumerate(loads)
    ]
    first = points[0]
    output = med[:, 1] if first.knob == "bs" else med[:, 0]  # bigger blocks: fewer IOPS
    bend = slo_math.knee(np.asarray(loads), output)
    complete = ~np.any(np.isnan(cube[:, :, [0, at]]), axis=(1, 2))
    run_value, run_code = slo_math.iops_at_slo(cube[:, :, 0], cube[:, :, at], slo.limit_ns)
    per_run = {
        r: (float(run_value[i]), slo_math.CODES[int(run_code[i])])
        for i, r in enumerate(runs)
        if complete[i]
    }
    return Saturation(group, first.profile, first.knob, first.direction,
                      first.workload_sha256, curve, None if bend is None else curve[bend],
                      float(value), slo_math.CODES[int(code)], low, high, len(runs),
                      per_run)  # fmt: skip


def analyse(
    points: Sequence[LoadPoint],
    slo: slo_math.Slo,
    group_of: Callable[[LoadPoint], str | None] = lambda p: p.backend,
) -> list[Saturation]:
    """Every group × case of `points` (`group_of` names a point's group; None leaves it
    out), ordered by profile, knob, direction, group."""
    cases: dict[tuple[str, Case], list[LoadPoint]] = defaultdict(list)
    for p in points:
        group = group_of(p)
        if group is not None:
            key = (p.profile, p.knob, p.direction, p.workload_sha256)
            cases[(group, key)].append(p)
    ordered = sorted(cases, key=lambda k: (k[1][0], k[1][1], k[1][2], k[1][3] or "", k[0]))
    return [analyse_one(cases[k], slo, k[0]) for k in ordered]


def _values(s: Saturation) -> tuple[list[float], set[str]]:
    return [v for v, _ in s.per_run.values()], {c for _, c in s.per_run.values()} - {
        slo_math.WITHIN
    }


def _compare_row(
    other: Saturation, base: Saturation, min_effect: float
) -> tuple[CompareRow, bool | None]:
    """`other` against `base` by their per-run IOPS at the SLO (Welch on logs), and
    whether bounds stood in for values: None no, True conservatively, False not."""
    values, censored = _values(other)
    base_values, base_censored = _values(base)
    if not (values and base_values and stats.positive(values + base_values)):
        row = CompareRow(other.group, *other.row_key[:3], IOPS_AT_SLO, other.row_key[3],
                         len(values),
                         len(base_values), None, None, None, None, None, None, None, None,
                         TOO_FEW)  # fmt: skip
        return row, None
    base_logs, logs = stats.LogSummary.of(base_values), stats.LogSummary.of(values)
    test = stats.compare_summaries(base_logs, logs, min_effect=min_effect)
    row = CompareRow(other.group, *other.row_key[:3], IOPS_AT_SLO, other.row_key[3],
                     len(values), len(base_values),
                     test.geomean, test.ratio, test.ratio_ci_low, test.ratio_ci_high,
                     test.p_value, None, test.p_tost, None, "",
                     reps_needed=power.reps_needed(base_logs.var, logs.var,
                                                   min_effect))  # fmt: skip
    safe = None
    if censored or base_censored:
        # A bound stands in for a run's value: the ratio errs towards 1 only when the
        # higher side's bounds are lower bounds and the lower side's upper bounds.
        up, down = (censored, base_censored) if test.ratio >= 1 else (base_censored, censored)
        safe = slo_math.BELOW not in up and slo_math.ABOVE not in down
        row.notes.append(
            "runs beyond the loads tested count at their bound ("
            + ", ".join(sorted(censored | base_censored))
            + (
                "): the ratio is conservative"
                if safe
                else "): it may err away from 1, so at most inconclusive"
            )
        )
    if test.p_value is None:
        row.verdict = TOO_FEW
    return row, safe


def bounds_only(other: Saturation, base: Saturation) -> str:
    """'' unless both sides' IOPS at the SLO are the same kind of bound (both met the SLO
    at every load tested, or both at none): then that they cannot be compared and the
    load to try next, e.g. `cannot be compared at the loads tested: both met the SLO up
    to rate_iops 3.2k, the last tested — try rate_iops 6.4k`."""
    if other.status != base.status or other.status == slo_math.WITHIN:
        return ""
    loads = [p.load for s in (other, base) for p in s.curve]
    knob = other.knob
    if other.status == slo_math.ABOVE:
        last = max(loads)
        return (
            f"{UNCOMPARABLE}: both met the SLO up to {knob} {human_count(last)}, the last "
            f"tested — try {knob} {human_count(last * 2)}"
        )
    first = min(loads)
    return (
        f"{UNCOMPARABLE}: both missed the SLO from {knob} {human_count(first)}, the first "
        f"tested — try {knob} {human_count(first / 2)}"
    )


def bounds_note(row: CompareRow) -> str:
    """The `bounds_only` note of a row that was not compared, or ''."""
    return next((n for n in row.notes if UNCOMPARABLE in n), "")


def _verdict(row: CompareRow, min_effect: float, safe: bool | None) -> str:
    verdict = decide(row, "iops", min_effect)  # higher IOPS at the SLO is better
    # bounds can show a difference (when conservative), never an equivalence
    if safe is not None and (verdict == EQUIVALENT or (verdict != INCONCLUSIVE and not safe)):
        return INCONCLUSIVE
    return verdict


def compare_saturations(
    results: Sequence[Saturation],
    baseline: str,
    *,
    min_effect: float = stats.DEFAULT_MIN_EFFECT,
    adjustment: str = "holm",
) -> tuple[list[CompareRow], int]:
    """Every other group against `baseline` per case, p-values adjusted across all of
    them (one family), verdicts by the rule of `compare`; and the number of tests."""
    bases = {s.case: s for s in results if s.group == baseline}
    rows, safety = [], {}
    for s in results:
        if s.group == baseline:
            continue
        base = bases.get(s.case)
        if base is None:
            rows.append(CompareRow(s.group, *s.row_key[:3], IOPS_AT_SLO, s.row_key[3],
                                   s.runs, 0, None, None,
                                   None, None, None, None, None, None, NO_BASELINE))  # fmt: skip
            continue
        why = bounds_only(s, base)
        if why:  # two bounds: no ratio, no interval, no test (its p would read as equal)
            rows.append(CompareRow(s.group, s.profile, f"{s.knob} sweep", s.direction,
                                   IOPS_AT_SLO, s.workload_sha256, s.runs, base.runs,
                                   None, None, None, None, None, None, None, None,
                                   INCONCLUSIVE, notes=[why]))  # fmt: skip
            continue
        row, safety[id(row)] = _compare_row(s, base, min_effect)
        rows.append(row)
    tested = [r for r in rows if r.p_value is not None]
    for attr, out in (("p_value", "p_adjusted"), ("p_equivalence", "p_equivalence_adjusted")):
        adjusted = stats.adjust([getattr(r, attr) for r in tested], adjustment)
        for r, p in zip(tested, adjusted, strict=True):
            setattr(r, out, p)
    for r in tested:
        r.family_tests = len(tested)
        r.verdict = _verdict(r, min_effect, safety[id(r)])
    return rows, len(tested)


def family_text(slo: slo_math.Slo, filt: RunFilter, baseline: str, tests: int, how: str) -> str:
    """What the p-values were adjusted across, in words."""
    scope = filt.describe()
    return (
        f"IOPS at {slo.text()}: {'all runs' if scope == 'no filter' else scope} vs {baseline}, "
        f"{tests} tests, "
        f"{HOLM_NAMES.get(how, how)}"
    )


def saturation(
    lake: Lake,
    slo: slo_math.Slo,
    *,
    filt: RunFilter | None = None,
    knob: str | None = None,
    baseline: str | None = None,
    min_effect: float = stats.DEFAULT_MIN_EFFECT,
    adjustment: str = "holm",
) -> SaturationReport:
    """Per backend, the load sweeps of the selected runs at `slo` (only `knob`'s sweeps
    when given) and every backend against `baseline` (default: the first by name).
    `filt.backends` is part of the question, as the runs compared."""
    filt = filt or RunFilter()
    points = [p for p in load_points(lake, filt) if knob is None or p.knob == knob]
    if not points:
        raise LakeError(
            f"no load sweep in the successful runs selected ({filt.describe()})"
            + (f" that steps {knob}" if knob else "")
            + " — run a sweep profile (latency-at-load, iodepth-sweep) first"
        )
    results = analyse(points, slo)
    groups = sorted({s.group for s in results})
    if baseline is not None and baseline not in groups:
        raise UsageProblem(
            f"baseline {baseline!r} has no load sweep here: choose from {', '.join(groups)}"
        )
    base = baseline or groups[0]
    rows, tests = compare_saturations(results, base, min_effect=min_effect, adjustment=adjustment)
    return SaturationReport(
        slo, base, results, rows, family_text(slo, filt, base, tests, adjustment)
    )


def _by_group(
    lake: Lake, slo: slo_math.Slo, filt: RunFilter, pools: Mapping[str, Sequence[str]] | None
) -> tuple[list[Saturation], RunFilter]:
    """The sweeps of `filt`'s runs grouped by campaign, or with `pools` by the named sets
    of run ids; and the filter they were read with."""
    if pools:
        owner = {run: name for name, ids in pools.items() for run in ids}
        filt = replace(filt, runs=tuple(owner))
        return analyse(load_points(lake, filt), slo, lambda p: owner.get(p.run_id)), filt
    return analyse(load_points(lake, filt), slo, lambda p: p.campaign_id), filt


def gate_rows(
    lake: Lake,
    slo: slo_math.Slo,
    filt: RunFilter,
    pools: Mapping[str, Sequence[str]] | None,
    *,
    baseline: str,
    campaign: str,
    min_effect: float = stats.DEFAULT_MIN_EFFECT,
) -> tuple[list[CompareRow], str]:
    """The gate's rows for `iops_at_slo`: the new campaign's runs against the baseline's
    (a campaign, or with `pools` the named sets of run ids), one family per call (the
    gate asks per backend); no rows when the runs hold no load sweep."""
    results, filt = _by_group(lake, slo, filt, pools)
    rows, tests = compare_saturations(results, baseline, min_effect=min_effect)
    return [r for r in rows if r.group == campaign], family_text(slo, filt, baseline, tests, "holm")


def night_values(
    lake: Lake, slo: slo_math.Slo, filt: RunFilter
) -> dict[tuple[str, tuple[str, str, str, str | None, str]], list[float]]:
    """Per (campaign, gate row key + IOPS_AT_SLO): the IOPS at `slo` of each of the
    campaign's runs of that sweep (the night model's data; a bound where a run's value
    is beyond the loads tested, as in `compare_saturations`)."""
    results, _ = _by_group(lake, slo, filt, None)
    return {
        (s.group, (*s.row_key, IOPS_AT_SLO)): [v for v, _ in s.per_run.values() if v > 0]
        for s in results
    }


def run_values(
    lake: Lake, slo: slo_math.Slo | None, filt: RunFilter
) -> list[tuple[str, tuple[str, str, str, str, datetime, float]]]:
    """Each run's own IOPS at `slo` (default p99 ≤ 1 ms) per load sweep × direction,
    oldest first, as (run id, (backend, profile, "KNOB sweep", direction, started,
    value)); a run beyond the loads tested counts at its bound."""
    points = load_points(lake, filt)
    started = {p.run_id: p.started_at for p in points}
    out = []
    for s in analyse(points, slo or slo_math.parse_slo(slo_math.DEFAULT_SLO)):
        for run, (value, _) in s.per_run.items():
            where = (s.group, *s.row_key[:3], started[run], value)
            out.append((run, where))
    return sorted(out, key=lambda item: (item[1][:4], item[1][4], item[0]))
