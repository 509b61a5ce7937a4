"""E-Divisive change points on synthetic series with stated noise (fixed seeds).

scipy.stats and statsmodels, the oracles, are imported inside the tests that use them:
~1 s of import in each process that collects this file (four in `make test-fast`).
"""

from __future__ import annotations

import numpy as np
import pytest

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
