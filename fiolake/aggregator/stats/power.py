"""Runs per side that would decide a comparison: power of the t-test and of TOST on logs.

`compare` and `gate` say of each row how many runs per side would confirm its ratio
(`reps_to_confirm`) and how many would show it equivalent within ±min-effect
(`reps_for_equivalence`). Each is the smallest n whose power under the noncentral t
distribution reaches 80 %, a search over n of scipy.special's ufuncs. A table asks it
for every row: 2,560 searches and 33,000 scalar calls of `nctdtr`, 0.13 s of a 0.5 s
gate. So the searches run over all rows at once (`runs_needed`), one ufunc call per step
for every row still searching; the one-row functions are that search on one row. Each
search starts from a close guess (`_walk`: Guenther's correction of the normal answer;
for TOST, the grid bisected on a normal approximation of the noncentral t) and asks the
exact power only around it: the gate's 1,280 rows at a million runs asked nctdtr 15,800
times where walking and bisecting on it asked 34,500 (with `_t_quantile`, 0.45× the
time of the searches, the same counts).
Written here because statsmodels' `solve_power` is a root finder per row (and a 0.5 s
import); the tests check the counts against it, against a walk from n = 2 and against a
simulation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

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


def _t_quantile(df: np.ndarray, q: np.ndarray) -> np.ndarray:
    """scipy.special's stdtrit(df, q), once per distinct (df, q): a search asks it for
    every row at every step, and the rows share a few α and the n they are at."""
    df, q = np.broadcast_arrays(np.asarray(df, dtype=float), np.asarray(q, dtype=float))
    # One complex number a pair, its parts the two floats unchanged: np.unique of 2,560
    # of them took 44 µs where unique columns of a 2-row array took 0.9 ms.
    pairs, back = np.unique((df + 1j * q).ravel(), return_inverse=True)
    crit = np.asarray(special.stdtrit(pairs.real, pairs.imag))
    return crit[back.ravel()].reshape(df.shape)


def _power(n: np.ndarray, effect_sd: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Power of a two-sided two-sample t-test with n per group at a standardised effect."""
    df = 2 * n - 2
    nc = effect_sd * np.sqrt(n / 2)
    crit = _t_quantile(df, 1 - alpha / 2)
    return 1.0 - _nct_cdf(df, nc, crit) + _nct_cdf(df, nc, -crit)


def _tost_power(
    n: np.ndarray,
    diff_sd: np.ndarray,
    bound_sd: np.ndarray,
    alpha: np.ndarray,
    cdf: Callable[..., np.ndarray] = _nct_cdf,
) -> np.ndarray:
    """Power of TOST (two one-sided t-tests, n per group) when the true log difference is
    `diff_sd` and the bounds ±`bound_sd`, both in per-run standard deviations: the chance
    both one-sided tests reject, 1 − P(miss low) − P(miss high) under noncentral t."""
    df = 2 * n - 2
    scale = np.sqrt(n / 2)
    crit = _t_quantile(df, 1 - alpha)
    miss_low = cdf(df, (bound_sd + diff_sd) * scale, crit)
    miss_high = cdf(df, (bound_sd - diff_sd) * scale, crit)
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


def _approx_cdf(df: np.ndarray, nc: np.ndarray, x: np.ndarray) -> np.ndarray:
    """P(T′ ≤ x) by the normal approximation of the noncentral t (Abramowitz & Stegun
    26.7.10): a few ufunc steps where nctdtr sums a series. Only a search's first guess
    comes from it; every answer is checked against `_nct_cdf`."""
    return special.ndtr((x * (1 - 1 / (4 * df)) - nc) / np.sqrt(1 + x**2 / (2 * df)))


def _walk(
    reached: Callable[[np.ndarray, np.ndarray], np.ndarray],
    guess: np.ndarray,
    floor: int,
    ceiling: int | None = None,
) -> np.ndarray:
    """Per row, the least k in [floor, ceiling] with `reached(rows, k)` (k = ceiling, the
    caller's "none", needs no asking), given that `reached` is monotone in k and each
    row's `guess`: guess − 1 and guess are asked in one call, then the rows whose answer
    lies elsewhere walk to it a step at a time. A good guess leaves that one call; the
    answer never depends on the guess."""
    k = np.maximum(guess.astype(np.int64), floor)
    if ceiling is not None:
        k = np.minimum(k, ceiling)
    every = np.arange(len(k))
    lower = np.flatnonzero(k > floor)
    both = _ask(reached, np.concatenate([every, lower]), np.concatenate([k, k[lower] - 1]),
                ceiling)  # fmt: skip
    at, below = both[: len(k)], np.zeros(len(k), dtype=bool)
    below[lower] = both[len(k) :]
    down = np.flatnonzero(below)  # reached a step lower too: down while the next one is
    k[down] -= 1
    while len(down := down[k[down] > floor]):
        down = down[_ask(reached, down, k[down] - 1, ceiling)]
        k[down] -= 1
    up = np.flatnonzero(~at & ~below)  # not reached at the guess: up until it is
    while len(up):
        k[up] += 1
        up = up[~_ask(reached, up, k[up], ceiling)]
    return k


def _ask(
    reached: Callable[[np.ndarray, np.ndarray], np.ndarray],
    rows: np.ndarray,
    k: np.ndarray,
    ceiling: int | None,
) -> np.ndarray:
    """`reached(rows, k)`, True at the ceiling without asking."""
    if ceiling is None:
        return reached(rows, k)
    found = np.ones(len(rows), dtype=bool)
    inside = k < ceiling
    if inside.any():
        found[inside] = reached(rows[inside], k[inside])
    return found


def _reps_for_power(effect_sd: np.ndarray, alpha: np.ndarray, power: float) -> np.ndarray:
    """Per row, the smallest n whose t-test power at `effect_sd` reaches `power`, walked
    to from the normal approximation plus Guenther's (1981) z²/4 for the t's tails;
    MAX_REPS + 1 where it is beyond MAX_REPS. (An effect of 1e-13, a ratio one float step
    from 1, made the unbounded guess overflow int64: a count of −9.2e18 runs.)"""
    z_alpha = special.ndtri(1 - alpha / 2)
    z_sum = z_alpha + special.ndtri(power)
    guess = np.fmin(np.ceil(2 * (z_sum / effect_sd) ** 2 + z_alpha**2 / 4), MAX_REPS + 1)
    return _walk(
        lambda rows, n: _power(n, effect_sd[rows], alpha[rows]) >= power,
        np.nan_to_num(guess, nan=2),
        floor=2,
        ceiling=MAX_REPS + 1,
    )


def _reps_for_equivalence(
    diff_sd: np.ndarray, bound_sd: np.ndarray, alpha: np.ndarray, power: float
) -> np.ndarray:
    """Per row, the index in EQUIVALENCE_GRID of the first n whose TOST power reaches
    `power` (len(grid) where none does): TOST power grows with n, so the rows bisect the
    grid together on the approximate power (`_approx_cdf`), then walk from there on the
    exact one — ~2 exact steps a row where bisecting on it took ~7."""
    size = len(EQUIVALENCE_GRID)

    def tost(cdf: Callable[..., np.ndarray]) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        def reached(rows: np.ndarray, at: np.ndarray) -> np.ndarray:
            found = _tost_power(EQUIVALENCE_GRID[at], diff_sd[rows], bound_sd[rows],
                                alpha[rows], cdf)  # fmt: skip
            return found >= power

        return reached

    low = np.zeros(len(diff_sd), dtype=np.int64)
    high = np.full(len(diff_sd), size, dtype=np.int64)
    open_ = np.flatnonzero(low < high)
    approx = tost(_approx_cdf)
    while len(open_):
        mid = (low[open_] + high[open_]) // 2
        reached = approx(open_, mid)
        high[open_] = np.where(reached, mid, high[open_])
        low[open_] = np.where(reached, low[open_], mid + 1)
        open_ = open_[low[open_] < high[open_]]
    return _walk(tost(_nct_cdf), low, floor=0, ceiling=size)


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
) -> list[int | None]:  # fmt: skip
    """Repetitions per group for a two-sided t-test on logs to detect a `min_effect` ratio
    with `power`, given each row's per-run standard deviation of log values: the smallest
    n whose power under the noncentral t distribution reaches `power` (as statsmodels'
    TTestIndPower.solve_power, rounded up; checked in the tests); 2 without spread, None
    beyond MAX_REPS."""
    spread = [i for i, sd in enumerate(sd_logs) if sd > 0]
    found: list[int | None] = [2] * len(sd_logs)
    if spread:
        effect_sd = np.asarray([bounds(min_effect) / sd_logs[i] for i in spread])
        alphas = np.full(len(spread), alpha)
        for i, n in zip(spread, _reps_for_power(effect_sd, alphas, power).tolist(), strict=True):
            found[i] = n if n <= MAX_REPS else None
    return found


def reps_for_power(
    sd_log: float, min_effect: float, alpha: float = ALPHA, power: float = DEFAULT_POWER
) -> int | None:
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
