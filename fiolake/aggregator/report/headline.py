"""The answer the app opens on: which backend, by how much, in one sentence per profile.

The scope is the newest campaign whose successful runs cover at least two backends; a
lake without one compares its two most-run backends over all runs. The comparison is
`compare.compare` (ratios of geometric means, 95 % CIs, adjusted p-values, verdicts);
this module only picks the scope and puts the rows into words.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from fiolake.aggregator.lake import columns
from fiolake.aggregator.lake.lake import Lake
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.rows.series import fetch_rows as fetch
from fiolake.aggregator.stats.compare import CompareRow, Comparison, compare
from fiolake.aggregator.stats.verdict_text import MIXED, decider, times, word
from fiolake.errors import LakeError

THROUGHPUT, LATENCY = "iops", "clat_p99_ns"
METRIC_WORDS = {"iops": "IOPS", "bw_bytes": "bandwidth", "clat_p99_ns": "p99 latency"}


@dataclass(frozen=True)
class Scope:
    """What the landing page compares: a campaign (or the whole lake) and its backends."""

    campaign: str | None  # None: the two most-run backends over every campaign
    backends: tuple[str, ...]  # baseline first

    @property
    def filter(self) -> RunFilter:
        return RunFilter(campaign=self.campaign, backends=self.backends)

    def describe(self) -> str:
        where = f"campaign {self.campaign}" if self.campaign else "all campaigns"
        return f"{where}: {', '.join(self.backends)} (baseline {self.backends[0]})"


def landing_scope(lake: Lake) -> Scope:
    """The newest campaign with two or more backends, else the lake's two most-run backends.

    The baseline is the backend with the most runs in scope (ties: alphabetical).
    """
    found = fetch(
        lake,
        """SELECT campaign_id FROM runs WHERE status = 'ok'
           GROUP BY campaign_id HAVING count(DISTINCT backend) >= 2
           ORDER BY max(started_at) DESC, campaign_id LIMIT 1""",
    )
    campaign = found[0][0] if found else None
    where = RunFilter(campaign=campaign).where("runs")
    backends = fetch(
        lake,
        f"""SELECT backend FROM runs WHERE {where}
            GROUP BY backend ORDER BY count(*) DESC, backend {"" if campaign else "LIMIT 2"}""",
    )
    if not backends:
        raise LakeError("no successful runs in the lake: nothing to compare")
    return Scope(campaign, tuple(b for (b,) in backends))


@dataclass(frozen=True)
class ProfileRatio:
    """One backend against the baseline on one profile and metric.

    A profile with one job × direction carries that row's ratio, 95 % CI, adjusted p and
    verdict. With several, `ratio` is the geometric mean of the cases' ratios, low/high
    their range (not a CI), p the largest adjusted p, and the verdict the cases' common
    verdict or `mixed`.
    """

    profile: str
    backend: str
    metric: str
    ratio: float
    low: float | None
    high: float | None
    p_adjusted: float | None
    verdict: str
    cases: int
    verdicts: dict[str, int]
    decider: str = ""  # what would decide an inconclusive one-case profile

    def words(self, baseline: str) -> str:
        """`6.3× disk IOPS [5.1×, 7.8×], better` or `p99 latency 96 % lower [0.03×, 0.06×],
        inconclusive — ~4 runs per side would confirm 0.04×`: the verdict always in words."""
        verdict = f", {self.verdict}" + (f" — {self.decider}" if self.decider else "")
        return self._numbers(baseline) + verdict

    def _numbers(self, baseline: str) -> str:
        word = METRIC_WORDS.get(self.metric, self.metric)
        span = ""
        if self.low is not None and self.high is not None:
            span = f" [{times(self.low)}, {times(self.high)}]"
        if self.cases > 1:
            counts = ", ".join(f"{n} {v}" for v, n in sorted(self.verdicts.items()))
            span = f" ({times(self.low or 0)}–{times(self.high or 0)} over {self.cases} cases: "
            span += f"{counts})"
        if columns.higher_is_better(self.metric):
            return f"{times(self.ratio)} {baseline} {word}{span}"
        change = (1 - self.ratio) * 100
        return f"{word} {abs(change):.0f} % {'lower' if change >= 0 else 'higher'}{span}"


def profile_ratios(result: Comparison) -> list[ProfileRatio]:
    """Per profile × backend other than the baseline × metric: the ratio in one number."""
    cells: dict[tuple[str, str, str], list[CompareRow]] = defaultdict(list)
    for row in result.rows:
        if row.group != result.baseline and row.ratio is not None and row.ratio > 0:
            cells[(row.profile, row.group, row.metric)].append(row)
    out = []
    for (profile, group, metric), rows in sorted(cells.items()):
        counts: dict[str, int] = defaultdict(int)
        for r in rows:
            counts[word(r.verdict)] += 1
        ps = [r.p_adjusted for r in rows if r.p_adjusted is not None]
        ratios = [r.ratio for r in rows if r.ratio is not None]  # each has one (see above)
        more = ""
        if len(rows) == 1:
            r = rows[0]
            low, high, ratio = r.ratio_ci_low, r.ratio_ci_high, ratios[0]
            more = decider(r, result.min_effect)
        else:
            ratio = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
            low, high = min(ratios), max(ratios)
        verdict = next(iter(counts)) if len(counts) == 1 else MIXED
        p = max(ps) if ps else None
        out.append(
            ProfileRatio(
                profile, group, metric, ratio, low, high, p, verdict, len(rows), counts, more
            )
        )
    return out


def sentences(result: Comparison) -> dict[str, list[str]]:
    """Per profile, one sentence per backend other than the baseline, each metric with
    its verdict, e.g. `tmpfs 6.3× disk IOPS [5.1×, 7.8×], better; p99 latency 96 % lower
    [0.039×, 0.31×], better`."""
    parts: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for pr in profile_ratios(result):
        parts[(pr.profile, pr.backend)][pr.metric] = pr.words(result.baseline)
    out: dict[str, list[str]] = defaultdict(list)
    for (profile, group), by_metric in parts.items():
        ordered = [by_metric[m] for m in result.metrics if m in by_metric]
        out[profile].append(f"{group} {'; '.join(ordered)}")
    return dict(out)


def landing(lake: Lake, scope: Scope | None = None) -> tuple[Scope, Comparison]:
    """The landing page's comparison: IOPS and p99 latency of the scope's backends, with
    the verdicts of the whole question (the default metric set: `compare.compare`)."""
    scope = scope or landing_scope(lake)
    result = compare(
        lake,
        metrics=[THROUGHPUT, LATENCY],
        filt=scope.filter,
        baseline=scope.backends[0],
    )
    return scope, result
