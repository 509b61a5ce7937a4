"""IOPS at a latency SLO, the knee of a load curve, and a bootstrap interval: pure numpy.

A curve is a load sweep's points in the order of the load offered: IOPS and a latency
percentile per point. The largest IOPS whose percentile meets the SLO is found where the
curve crosses the limit, interpolated linearly between the two measured points around it
on log–log scales, and never extrapolated: met at no point is "< first tested", met at
the last point tested is "≥ last tested" (docs/statistics.md §10). Every function takes
arrays whose last axis is the load, so one call answers a curve or thousands of bootstrap
resamples at once.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from fiolake.errors import UsageProblem

# SLO percentile -> results column (fio's clat percentiles the runner stores): the one
# mapping; saturation's LoadPoint and CurvePoint fields follow it.
PERCENTILE_COLUMNS = {"p50": "clat_p50_ns", "p99": "clat_p99_ns", "p99.9": "clat_p999_ns"}
_TIME_NS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
_SLO = re.compile(r"^\s*(p[0-9.]+)\s*<=?\s*([0-9]*\.?[0-9]+)\s*(ns|us|µs|ms|s)\s*$", re.IGNORECASE)
DEFAULT_SLO = "p99<=1ms"

WITHIN = "within"  # the SLO is crossed between two tested loads: interpolated
BELOW = "< first tested"  # met at no tested load: the value is the first point's IOPS, a bound
ABOVE = "≥ last tested"  # met at the last tested load: the value is a lower bound
CODES = {-1: BELOW, 0: WITHIN, 1: ABOVE}
BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95
SEED = 20111  # a fixed seed: the same runs always give the same interval


@dataclass(frozen=True)
class Slo:
    """A latency objective: a clat percentile at or below a limit."""

    percentile: str  # p50 | p99 | p99.9
    limit_ns: float

    def text(self) -> str:
        """As written on the command line, in the unit that reads best (`p99<=1ms`)."""
        for unit in ("s", "ms", "us"):
            if self.limit_ns >= _TIME_NS[unit]:
                return f"{self.percentile}<={self.limit_ns / _TIME_NS[unit]:g}{unit}"
        return f"{self.percentile}<={self.limit_ns:g}ns"


def parse_slo(text: str) -> Slo:
    """`p99<=1ms`, `p50<=200us`, `p99.9<=5ms`; UsageProblem saying what is wrong otherwise."""
    found = _SLO.match(text)
    if not found:
        raise UsageProblem(
            f"{text!r} is not an SLO — write PERCENTILE<=LIMIT with a time unit, e.g. "
            "p99<=1ms, p50<=200us, p99.9<=5ms"
        )
    percentile, number, unit = found.group(1).lower(), float(found.group(2)), found.group(3)
    if percentile not in PERCENTILE_COLUMNS:
        raise UsageProblem(
            f"{text!r}: fiolake keeps the clat percentiles {', '.join(PERCENTILE_COLUMNS)} "
            f"per job, not {percentile} — choose one of them"
        )
    if number <= 0:
        raise UsageProblem(f"{text!r}: the latency limit must be above zero, e.g. p99<=1ms")
    return Slo(percentile, number * _TIME_NS[unit.lower()])


def iops_at_slo(
    iops: np.ndarray, latency: np.ndarray, limit_ns: float
) -> tuple[np.ndarray, np.ndarray]:
    """The largest IOPS whose latency meets `limit_ns`, per curve (last axis: the loads in
    order), and a code per curve: 0 interpolated, -1 met nowhere (value: the first point's
    IOPS, an upper bound), 1 met at the last point (value: the largest IOPS that met it,
    a lower bound). Between the last point k that meets the limit and the next one, the
    crossing is interpolated linearly in (ln latency, ln IOPS); the answer is the larger
    of that and the best IOPS measured at or before k (IOPS may fall past saturation).
    A missing latency (NaN) does not meet the limit."""
    iops = np.asarray(iops, dtype=float)
    lat = np.maximum(np.asarray(latency, dtype=float), 1.0)  # ln of 0 ns: no crossing there
    meets = lat <= limit_ns  # NaN compares False
    loads = iops.shape[-1]
    any_met = meets.any(axis=-1)
    last = loads - 1 - np.argmax(meets[..., ::-1], axis=-1)  # last point that meets
    best = np.where(meets, iops, -np.inf)
    best = np.maximum.accumulate(best, axis=-1)
    best_k = np.take_along_axis(best, last[..., None], axis=-1)[..., 0]
    nxt = np.minimum(last + 1, loads - 1)

    def at(a: np.ndarray, i: np.ndarray) -> np.ndarray:
        return np.take_along_axis(a, i[..., None], axis=-1)[..., 0]

    l0, l1 = np.log(at(lat, last)), np.log(at(lat, nxt))
    i0, i1 = np.log(at(iops, last)), np.log(at(iops, nxt))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(l1 > l0, (math.log(limit_ns) - l0) / (l1 - l0), 0.0)
        crossed = np.exp(i0 + np.clip(t, 0.0, 1.0) * (i1 - i0))
    code = np.where(~any_met, -1, np.where(last == loads - 1, 1, 0))
    value = np.where(code == 0, np.fmax(crossed, best_k), best_k)  # fmax: NaN loses
    value = np.where(code == -1, iops[..., 0], value)
    return value, code


def knee(load: np.ndarray, output: np.ndarray, sensitivity: float = 1.0) -> int | None:
    """Index of the knee of a concave increasing curve by Kneedle (Satopää et al. 2011),
    on log scales: x = ln load and y = ln output are scaled to [0, 1], the difference
    curve d = y − x peaks at the knee, and the peak counts only if d later falls by
    `sensitivity` × the mean x spacing (the paper's threshold). None without such a peak
    (no saturation in the range tested) or with fewer than three points."""
    x, y = np.log(np.asarray(load, dtype=float)), np.log(np.asarray(output, dtype=float))
    if len(x) < 3 or not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        return None
    if x[-1] == x[0] or y.max() == y.min():
        return None
    xn, yn = (x - x[0]) / (x[-1] - x[0]), (y - y.min()) / (y.max() - y.min())
    diff = yn - xn
    peak = int(np.argmax(diff))
    threshold = diff[peak] - sensitivity / (len(x) - 1)
    if peak in (0, len(x) - 1) or not np.any(diff[peak + 1 :] <= threshold + 1e-12):
        return None
    return peak


def resample_medians(
    matrix: np.ndarray, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = SEED
) -> np.ndarray:
    """Bootstrap medians of a runs × loads (× …) matrix: whole runs drawn with
    replacement `resamples` times (a run's curve stays together), NaN-aware medians over
    the drawn runs; shape resamples × loads (× …)."""
    rng = np.random.default_rng(seed)
    runs = matrix.shape[0]
    drawn = rng.integers(0, runs, size=(resamples, runs))
    sample = matrix[drawn]
    # np.median is several times faster than nanmedian: only pay for NaN where there is one
    return np.nanmedian(sample, axis=1) if np.isnan(matrix).any() else np.median(sample, axis=1)


def interval(values: np.ndarray, codes: np.ndarray) -> tuple[float | None, float | None]:
    """The percentile bootstrap interval (Efron & Tibshirani 1993, §13.3) of IOPS at the
    SLO over resamples: a resample met nowhere counts as below every value, one met at the
    last load as above every value; an end that falls on such a resample is None (the
    interval reaches past the loads tested)."""
    ranked = np.where(codes == -1, -np.inf, np.where(codes == 1, np.inf, np.log(values)))
    tail = (1 - CONFIDENCE) / 2
    low, high = np.quantile(ranked, [tail, 1 - tail], method="inverted_cdf")
    return (
        float(math.exp(low)) if math.isfinite(low) else None,
        float(math.exp(high)) if math.isfinite(high) else None,
    )
