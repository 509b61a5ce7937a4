"""The statistics behind `compare` and `regressions`, on scipy (docs/statistics.md).

Storage results are ratios ("tmpfs is 6.3× disk"), and repetitions of a benchmark vary
multiplicatively, so every test works on log values: the geometric mean summarises the
repetitions, Welch's t on logs gives the ratio's confidence interval (never below zero),
and two one-sided tests (TOST) on logs decide equivalence within ±min-effect. p-values
are adjusted across a whole table (Holm, or Benjamini–Hochberg).

Only `scipy.special`'s ufuncs are used, never `scipy.stats`: importing scipy.stats costs
~0.5 s, a third of the 1.5 s a whole `fiolake compare` may take (issue "scale"), and its
scalar calls cost ~0.3 ms each. So the few things taken from scipy.stats are written here
on those ufuncs — Holm (scipy has none), Benjamini–Hochberg, the pooled two-sample t-test,
the geometric mean — and the tests check each against scipy.stats or statsmodels. The
runs per side that would decide a comparison (noncentral t) are `power`'s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# The power analysis' own; named here too, where every verdict's α is read.
from fiolake.aggregator.stats.power import ALPHA as ALPHA
from fiolake.aggregator.stats.power import DEFAULT_POWER as DEFAULT_POWER
from fiolake.aggregator.stats.power import bounds
from fiolake.aggregator.stats.special import special

DEFAULT_MIN_EFFECT = 0.05  # ±5 %: smaller differences are "equivalent" when shown to be
OUTLIER_Z = 3.5  # robust z (Iglewicz & Hoaglin) above which a repetition is an outlier
# The same in MADs of the logs: |log − median| > OUTLIER_CUT × MAD.
OUTLIER_CUT = OUTLIER_Z / 0.6745
OUTLIER_MIN_N = 5  # below this, the spread is shown instead


@dataclass(frozen=True)
class LogComparison:
    """One group against the baseline for one metric, in ratio terms."""

    n: int
    n_base: int
    geomean: float
    geomean_base: float
    ratio: float  # geomean / geomean_base
    ratio_ci_low: float | None  # 95 % CI of the ratio (Welch on logs; unadjusted)
    ratio_ci_high: float | None
    p_value: float | None  # Welch two-sided, on logs
    p_tost: float | None  # equivalence within ±min_effect (max of the two one-sided p)


def positive(values: Sequence[float]) -> bool:
    """Whether every value can be logged."""
    return all(v is not None and v > 0 and math.isfinite(v) for v in values)


def geomean(values: Sequence[float]) -> float:
    """Geometric mean of positive values."""
    return float(np.exp(np.mean(np.log(np.asarray(values, dtype=float)))))


@dataclass(frozen=True)
class LogSummary:
    """Repetitions of one metric in one group, as log values: n, mean and variance."""

    n: int
    mean: float  # of ln(value)
    var: float | None  # sample variance of ln(value); None below two values

    @classmethod
    def of(cls, values: Sequence[float]) -> LogSummary:
        """The summary of positive values."""
        logs = np.log(np.asarray(values, dtype=float))
        return cls(
            len(logs), float(logs.mean()), float(logs.var(ddof=1)) if len(logs) > 1 else None
        )


def compare_logs(
    base: Sequence[float],
    other: Sequence[float],
    *,
    min_effect: float = DEFAULT_MIN_EFFECT,
    confidence: float = 0.95,
) -> LogComparison:
    """Ratio of geometric means of `other` to `base`, with Welch's t on log values."""
    return compare_summaries(
        LogSummary.of(base), LogSummary.of(other), min_effect=min_effect, confidence=confidence
    )


def compare_summaries(
    base: LogSummary,
    other: LogSummary,
    *,
    min_effect: float = DEFAULT_MIN_EFFECT,
    confidence: float = 0.95,
) -> LogComparison:
    """`compare_logs` from log summaries (what SQL computes per group): Welch's t via
    `scipy.stats.ttest_ind_from_stats`, its CI from the same degrees of freedom, TOST.

    With fewer than two values on a side there is no test (p-values and CI None).
    """
    diff = other.mean - base.mean
    ratio, gm, gm_base = math.exp(diff), math.exp(other.mean), math.exp(base.mean)
    if other.var is None or base.var is None:
        return LogComparison(other.n, base.n, gm, gm_base, ratio, None, None, None, None)
    vx, vy = other.var / other.n, base.var / base.n
    se = math.sqrt(vx + vy)
    bound = bounds(min_effect)
    if se == 0.0:  # identical repetitions on both sides: the difference is exact
        p = 1.0 if diff == 0.0 else 0.0
        p_tost = 0.0 if abs(diff) < bound else 1.0
        return LogComparison(other.n, base.n, gm, gm_base, ratio, ratio, ratio, p, p_tost)
    # Welch's t: the statistic, Welch–Satterthwaite degrees of freedom, and Student's t
    # distribution through scipy.special's ufuncs (scipy.stats' scalar calls cost ~0.3 ms
    # each, and a table has thousands; ttest_ind_from_stats gives the same numbers).
    df = (vx + vy) ** 2 / (vx**2 / (other.n - 1) + vy**2 / (base.n - 1))
    p = 2.0 * float(special.stdtr(df, -abs(diff) / se))
    half = float(special.stdtrit(df, 0.5 + confidence / 2)) * se
    p_low = float(special.stdtr(df, -(diff + bound) / se))  # H0: diff <= -bound
    p_high = float(special.stdtr(df, (diff - bound) / se))  # H0: diff >= +bound
    return LogComparison(
        other.n,
        base.n,
        gm,
        gm_base,
        ratio,
        math.exp(diff - half),
        math.exp(diff + half),
        p,
        max(p_low, p_high),
    )


def effect_size(ratio: float) -> float:
    """How far a ratio is from 1 in either direction: 1.25 and 0.8 are both 0.25."""
    return ratio - 1.0 if ratio >= 1.0 else 1.0 / ratio - 1.0


# Sizes of change this close (relative) are one size: a latency mirroring its IOPS differs
# from it in the last bits, and those bits differ between two runs of DuckDB's parallel
# float sums. Rounding to a fixed number of digits split such pairs whenever they
# straddled a rounding boundary (a gate's row order changed in 1 run of 6).
SIZE_TIE = 1e-9


def size_classes(sizes: Sequence[float]) -> list[float]:
    """Each size replaced by the largest of its chain of near-equal sizes (each within
    SIZE_TIE, relative, of the next larger): sorting by it keeps near-equal sizes together
    and leaves their order to the next sort key, the same on every run."""
    out = list(sizes)
    head = previous = None
    for i in sorted(range(len(sizes)), key=lambda k: -sizes[k]):
        size = sizes[i]
        if previous is None or head is None or previous - size > SIZE_TIE * abs(previous):
            head = size
        out[i], previous = head, size
    return out


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values (step-down, monotone, capped at 1)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


def benjamini_hochberg(pvalues: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (step-up, monotone, capped at 1)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i], reverse=True)
    out = [0.0] * m
    running = 1.0
    for from_top, i in enumerate(order):
        running = min(running, pvalues[i] * m / (m - from_top))
        out[i] = running
    return out


def pooled_t_pvalue(
    left: Sequence[float] | np.ndarray, right: Sequence[float] | np.ndarray
) -> float:
    """Two-sided p of Student's two-sample t-test with pooled variance (scipy.stats'
    `ttest_ind` default); each side needs two values and the pooled variance must be > 0."""
    a, b = np.asarray(left, dtype=float), np.asarray(right, dtype=float)
    df = len(a) + len(b) - 2
    pooled = ((len(a) - 1) * a.var(ddof=1) + (len(b) - 1) * b.var(ddof=1)) / df
    t = (a.mean() - b.mean()) / math.sqrt(pooled * (1 / len(a) + 1 / len(b)))
    return float(2.0 * special.stdtr(df, -abs(t)))


def adjust(pvalues: Sequence[float], method: str = "holm") -> list[float]:
    """p-values adjusted across a family: 'holm' (FWER) or 'fdr' (Benjamini–Hochberg)."""
    if not pvalues:
        return []
    if method == "holm":
        return holm(pvalues)
    if method == "fdr":
        return benjamini_hochberg(pvalues)
    raise ValueError(f"unknown adjustment {method!r}")


def robust_z(values: Sequence[float]) -> list[float]:
    """Modified z-scores of log values (0.6745 (x − median) / MAD); 0 when MAD is 0."""
    logs = np.log(np.asarray(values, dtype=float))
    med = float(np.median(logs))
    mad = float(np.median(np.abs(logs - med)))
    if mad == 0.0:
        return [0.0] * len(logs)
    return [float(0.6745 * (v - med) / mad) for v in logs]


def outliers(values: Sequence[float]) -> list[int] | None:
    """Indexes of outlying repetitions (|robust z| > 3.5), or None below five values."""
    if len(values) < OUTLIER_MIN_N or not positive(values):
        return None
    return [i for i, z in enumerate(robust_z(values)) if abs(z) > OUTLIER_Z]
