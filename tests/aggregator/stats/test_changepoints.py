"""E-Divisive change points on synthetic series with stated noise (fixed seeds).

scipy.stats and statsmodels, the oracles, are imported inside the tests that use them:
~1 s of import in each process that collects this file (four in `make test-fast`).
"""

from __future__ import annotations

import numpy as np
import pytest

from fiolake.aggregator.stats import changepoints as cp
from fiolake.aggregator.stats.changepoints import DEFAULT_MAX_PVALUE, change_points


def test_a_fifteen_percent_step_is_found_within_two_points() -> None:
    rng = np.random.default_rng(5)
    found = 0
    for _ in range(50):
        series = rng.lognormal(0, 0.05, 60)
        series[30:] *= 1.15
        points = change_points(series)
        found += any(abs(p - 30) <= 2 for p in points)
    assert found >= 45  # σ = 5 %: a 15 % step is 3σ per point


def test_two_steps_are_two_change_points() -> None:
    rng = np.random.default_rng(6)
    series = rng.lognormal(0, 0.03, 90)
    series[30:] *= 0.7
    series[60:] *= 1.5
    assert sorted(change_points(series)) == [30, 60]


@pytest.mark.slow
def test_flat_series_false_alarms_stay_within_the_binomial_bound() -> None:
    from scipy import stats as scipy_stats

    rng = np.random.default_rng(8)
    trials = 1000
    alarms = sum(bool(change_points(rng.lognormal(0, 0.05, 60))) for _ in range(trials))
    # at most what Binomial(1000, 0.001) exceeds with probability < 1 %
    bound = int(scipy_stats.binom.ppf(0.99, trials, DEFAULT_MAX_PVALUE))
    assert alarms <= bound, (alarms, bound)


def test_short_or_constant_series() -> None:
    assert change_points([1.0, 2.0, 3.0]) == {}
    assert change_points([5.0] * 20) == {}
    assert list(change_points([5.0] * 10 + [9.0] * 10)) == [10]


def _one_window_at_a_time(values: np.ndarray, max_pvalue: float, min_size: int) -> dict:
    """`change_points` as it was before the windows were screened together: every window
    through `_candidates` (the oracle of the screen)."""
    x = np.log(values)
    found: set[int] = set()
    for start in cp.window_starts(len(x)):
        cp._candidates(x[start : start + cp.WINDOW], start, cp.RELAXED * max_pvalue, found,
                       min_size)  # fmt: skip
    merged: list[int] = []
    for p in sorted(found):
        if not merged or p - merged[-1] >= min_size:
            merged.append(p)
    return cp._merge(x, merged, max_pvalue, min_size)


def test_screening_the_windows_together_finds_what_one_at_a_time_found() -> None:
    rng = np.random.default_rng(7)
    shapes = 0
    for trial in range(300):
        n = int(rng.integers(4, 400))
        x = rng.lognormal(7, 0.03, size=n)
        for _ in range(int(rng.integers(0, 4))):  # steps, spikes and flat stretches
            at = int(rng.integers(0, n))
            kind = rng.integers(0, 3)
            if kind == 0:
                x[at:] *= rng.choice([0.7, 0.9, 1.05, 1.3])
            elif kind == 1:
                x[at] *= 2.0
            else:
                x[at : at + 8] = x[at]
        min_size = int(rng.integers(1, 6))
        max_pvalue = float(rng.choice([0.001, 0.01, 0.05]))
        want = _one_window_at_a_time(x, max_pvalue, min_size)
        assert change_points(x, max_pvalue, min_size) == want, (trial, n, min_size)
        shapes += bool(want)
    assert shapes > 100  # most series had a change to find


def _splits_by_2d_prefix_sums(windows: np.ndarray, min_size: int) -> np.ndarray:
    """The E-Divisive splits as `_energy_splits` computed them before (a 2-D prefix sum
    of the distance matrix), kept as its oracle; ties broken alike (`first_max`), since
    sums in another order part them by a rounding."""
    n = windows.shape[1]
    d = np.abs(windows[:, :, None] - windows[:, None, :])
    p = np.zeros((len(windows), n + 1, n + 1))
    p[:, 1:, 1:] = d.cumsum(1).cumsum(2)
    tau = np.arange(min_size, n - min_size + 1)
    left, right = tau.astype(float), (n - tau).astype(float)
    between = p[:, tau, n] - p[:, tau, tau]
    within_l = p[:, tau, tau]
    within_r = p[:, n, n][:, None] - p[:, tau, n] - p[:, n, tau] + p[:, tau, tau]
    q = (
        left * right / n
        * (
            2.0 * between / (left * right)
            - within_l / np.maximum(left * (left - 1), 1.0)
            - within_r / np.maximum(right * (right - 1), 1.0)
        )
    )  # fmt: skip
    return tau[cp.first_max(q, p[:, n, n] / n)]


@pytest.mark.parametrize("width", [6, 7, 30])
def test_energy_splits_are_those_of_the_2d_prefix_sums(width: int) -> None:
    rng = np.random.default_rng(width)
    noise = rng.normal(0, 0.03, size=(400, width))
    steps = np.where(np.arange(width) >= rng.integers(1, width, size=(400, 1)), 0.2, 0.0)
    windows = np.concatenate([noise, noise + steps, np.round(noise, 2), np.zeros((2, width))])
    for min_size in (1, 3):
        if width >= 2 * min_size:
            np.testing.assert_array_equal(
                cp._energy_splits(windows, min_size), _splits_by_2d_prefix_sums(windows, min_size)
            )
