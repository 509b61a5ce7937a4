"""Runs per side that would decide a comparison: power of the t-test and of TOST on logs.

`compare` and `gate` say of each row how many runs per side would confirm its ratio
(`reps_to_confirm`) and how many would show it equivalent within ±min-effect
(`reps_for_equivalence`). Each is the smallest n whose power under the noncentral t
distribution reaches 80 %, a search over n of scipy.special's ufuncs. A table asks it
for every row: 2,560 searches and 33,000 scalar calls of `nctdtr`, 0.13 s of a 0.5 s
gate. So the searches run over all rows at once (`runs_needed`), one ufunc call per step
for every row still searching; the one-row functions are that search on one row. Written
here because statsmodels' `solve_power` is a root finder per row (and a 0.5 s import);
the tests check the counts against it and against a simulation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fiolake.aggregator.stats.special import special

DEFAULT_POWER = 0.8
ALPHA = 0.05
MAX_REPS = 10_000  # beyond this "would decide" means "would not, in practice"


def bounds(min_effect: float) -> float:
    """The ±min_effect bounds on the log scale: ratios within [1/(1+δ), 1+δ] are
    "within ±δ" (symmetric in logs)."""
    return math.log1p(min_effect)


def _nct_cdf(df: np.ndarray, nc: np.ndarray, x: np.ndarray) -> np.ndarray:
    """P(T′ ≤ x), T′ ~ noncentral t(df, nc); scipy.special's nctdtr returns NaN at some
    points far in a tail (df 2, nc 7.7, x −23: found by the issue-23 demo, where it made
    the power NaN and `~2 runs per side` came out of the starting guess). There the
    probability is ~0 left of the mode and ~1 right of it: those values err towards less
    power, i.e. more runs."""
    p = special.nctdtr(df, nc, x)
    return np.where(np.isnan(p), np.where(x < nc, 0.0, 1.0), p)


def _power(n: np.ndarray, effect_sd: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Power of a two-sided two-sample t-test with n per group at a standardised effect."""
    df = 2 * n - 2
    nc = effect_sd * np.sqrt(n / 2)
    crit = special.stdtrit(df, 1 - alpha / 2)
    return 1.0 - _nct_cdf(df, nc, crit) + _nct_cdf(df, nc, -crit)


def _tost_power(n: np.ndarray, diff_sd: np.ndarray, bound_sd: np.ndarray, alpha: np.ndarray
                ) -> np.ndarray:  # fmt: skip
    """Power of TOST (two one-sided t-tests, n per group) when the true log difference is
    `diff_sd` and the bounds ±`bound_sd`, both in per-run standard deviations: the chance
    both one-sided tests reject, 1 − P(miss low) − P(miss high) under noncentral t."""
    df = 2 * n - 2
    scale = np.sqrt(n / 2)
    crit = special.stdtrit(df, 1 - alpha)
    miss_low = _nct_cdf(df, (bound_sd + diff_sd) * scale, crit)
    miss_high = _nct_cdf(df, (bound_sd - diff_sd) * scale, crit)
    return np.maximum(0.0, 1.0 - miss_low - miss_high)


def _grid(start: int, stop: int) -> tuple[int, ...]:
    """The runs per side `reps_for_equivalence` can answer: every n up to 64, then steps
    of 10 % (coarse only far out), up to MAX_REPS."""
    found, n = [], start
    while n <= stop:
        found.append(n)
        n = n + 1 if n < 64 else math.ceil(n * 1.1)
    return tuple(found)


EQUIVALENCE_GRID = np.asarray(_grid(2, MAX_REPS), dtype=np.int64)


def _reps_for_power(effect_sd: np.ndarray, alpha: np.ndarray, power: float) -> np.ndarray:
    """Per row, the smallest n whose t-test power at `effect_sd` reaches `power`: from
    the normal approximation up, every row still short one n further per step."""
    z_sum = special.ndtri(1 - alpha / 2) + special.ndtri(power)
    n = np.maximum(2, np.ceil(2 * (z_sum / effect_sd) ** 2)).astype(np.int64)
    short = np.arange(len(n))
    while len(short):
        reached = _power(n[short], effect_sd[short], alpha[short]) >= power
        short = short[~reached]
        n[short] += 1
    return n


def _reps_for_equivalence(
    diff_sd: np.ndarray, bound_sd: np.ndarray, alpha: np.ndarray, power: float
) -> np.ndarray:
    """Per row, the index in EQUIVALENCE_GRID of the first n whose TOST power reaches
    `power` (len(grid) where none does): TOST power grows with n, so the rows bisect the
    grid together, ~12 steps where walking n up took ~60."""
    low = np.zeros(len(diff_sd), dtype=np.int64)
    high = np.full(len(diff_sd), len(EQUIVALENCE_GRID), dtype=np.int64)
    open_ = np.flatnonzero(low < high)
    while len(open_):
        mid = (low[open_] + high[open_]) // 2
        reached = _tost_power(EQUIVALENCE_GRID[mid], diff_sd[open_], bound_sd[open_],
                              alpha[open_]) >= power  # fmt: skip
        high[open_] = np.where(reached, mid, high[open_])
        low[open_] = np.where(reached, low[open_], mid + 1)
        open_ = open_[low[open_] < high[open_]]
    return low


def runs_needed(
    sd_logs: Sequence[float],
    ratios: Sequence[float],
    min_effect: float,
    alphas: Sequence[float],
    power: float = DEFAULT_POWER,
) -> tuple[list[int | None], list[int | None]]:
    """For rows of (per-run SD of logs, observed ratio, α): the runs per side that would
    confirm the ratio (`reps_to_confirm`) and that would show it within ±min_effect
    (`reps_for_equivalence`), each None where no count can (see those)."""
    rows = range(len(sd_logs))
    # Standardised effects in Python's math, as the one-row answers always were.
    confirm = [i for i in rows if ratios[i] != 1.0 and sd_logs[i] > 0]
    effect = [bounds(math.expm1(abs(math.log(ratios[i])))) / sd_logs[i] for i in confirm]
    bound = bounds(min_effect)
    equivalent = [i for i in rows if abs(math.log(ratios[i])) < bound and sd_logs[i] > 0]
    diff = [abs(math.log(ratios[i])) / sd_logs[i] for i in equivalent]
    alpha = np.asarray(alphas, dtype=float)
    to_confirm: list[int | None] = [None] * len(sd_logs)
    for i in rows:  # no spread: two runs decide (a ratio of 1 confirms nothing)
        if sd_logs[i] <= 0 and ratios[i] != 1.0:
            to_confirm[i] = 2
    if confirm:
        found = _reps_for_power(np.asarray(effect), alpha[confirm], power)
        for i, n in zip(confirm, found.tolist(), strict=True):
            to_confirm[i] = n if n <= MAX_REPS else None
    for_equivalence: list[int | None] = [
        2 if sd_logs[i] <= 0 and abs(math.log(ratios[i])) < bound else None for i in rows
    ]
    if equivalent:
        bound_sd = np.asarray([bound / sd_logs[i] for i in equivalent])
        at = _reps_for_equivalence(np.asarray(diff), bound_sd, alpha[equivalent], power)
        for i, k in zip(equivalent, at.tolist(), strict=True):
            for_equivalence[i] = int(EQUIVALENCE_GRID[k]) if k < len(EQUIVALENCE_GRID) else None
    return to_confirm, for_equivalence


def reps_for_power_many(
    sd_logs: Sequence[float], min_effect: float, alpha: float = ALPHA,
    power: float = DEFAULT_POWER,
) -> list[int]:  # fmt: skip
    """Repetitions per group for a two-sided t-test on logs to detect a `min_effect` ratio
    with `power`, given each row's per-run standard deviation of log values: the smallest
    n whose power under the noncentral t distribution reaches `power` (as statsmodels'
    TTestIndPower.solve_power, rounded up; checked in the tests); 2 without spread."""
    spread = [i for i, sd in enumerate(sd_logs) if sd > 0]
    found = [2] * len(sd_logs)
    if spread:
        effect_sd = np.asarray([bounds(min_effect) / sd_logs[i] for i in spread])
        alphas = np.full(len(spread), alpha)
        for i, n in zip(spread, _reps_for_power(effect_sd, alphas, power).tolist(), strict=True):
            found[i] = n
    return found


def reps_for_power(
    sd_log: float, min_effect: float, alpha: float = ALPHA, power: float = DEFAULT_POWER
) -> int:
    """`reps_for_power_many` of one row."""
    return reps_for_power_many([sd_log], min_effect, alpha, power)[0]


def reps_needed(var_a: float | None, var_b: float | None, min_effect: float) -> int | None:
    """Runs per group to detect `min_effect` at 80 % power given two groups' variances of
    logs (their mean as the per-run variance); None without both variances."""
    if var_a is None or var_b is None:
        return None
    return reps_for_power(math.sqrt((var_a + var_b) / 2), min_effect)


def reps_to_confirm(
    sd_log: float, ratio: float, alpha: float = ALPHA, power: float = DEFAULT_POWER
) -> int | None:
    """Repetitions per side for the two-sided test on logs to detect a difference of the
    observed size (`ratio`) with `power`; None for a ratio of exactly 1 or beyond MAX_REPS."""
    return runs_needed([sd_log], [ratio], 0.0, [alpha], power)[0][0]


def reps_for_equivalence(
    sd_log: float,
    ratio: float,
    min_effect: float,
    alpha: float = ALPHA,
    power: float = DEFAULT_POWER,
) -> int | None:
    """Repetitions per side for TOST to show equivalence within ±min_effect with `power`
    if the true ratio is the observed one; None when the observed ratio is at or beyond
    the bounds (equivalence cannot be shown there) or beyond MAX_REPS."""
    return runs_needed([sd_log], [ratio], min_effect, [alpha], power)[1][0]
