"""Student-t quantiles and Welch's test against published values (R / scipy)."""

from __future__ import annotations

import math

import pytest

from fiolake.aggregator.stats import ci_half_width, t_cdf, t_ppf, welch_test


@pytest.mark.parametrize(
    "p, df, expected",
    [
        (0.975, 1, 12.706204736),
        (0.975, 2, 4.302652730),
        (0.975, 4, 2.776445105),
        (0.975, 10, 2.228138852),
        (0.975, 30, 2.042272456),
        (0.975, 1000, 1.962339081),
        (0.995, 5, 4.032142984),
        (0.95, 3, 2.353363435),
        (0.05, 3, -2.353363435),
        (0.9, 7.5, 1.4052118),  # fractional df (checked by integrating the pdf)
    ],
)
def test_t_quantiles(p: float, df: float, expected: float) -> None:
    assert t_ppf(p, df) == pytest.approx(expected, rel=1e-5)
    assert t_cdf(t_ppf(p, df), df) == pytest.approx(p, abs=1e-10)


def test_ci_half_width() -> None:
    assert ci_half_width(2.0, 4) == pytest.approx(2.0 * 3.182446305 / 2.0)
    assert ci_half_width(2.0, 1) is None


def test_welch_known_value() -> None:
    # scipy.stats.ttest_ind_from_stats(20, 1, 10, 22, 2, 12, equal_var=False)
    w = welch_test(20.0, 1.0, 10, 22.0, 2.0, 12)
    assert w.t == pytest.approx(3.0382181, rel=1e-6)
    assert w.df == pytest.approx(16.747748, rel=1e-6)
    assert w.p_value == pytest.approx(0.0075206, rel=1e-3)


def test_welch_without_spread() -> None:
    assert welch_test(5.0, 0.0, 3, 5.0, 0.0, 3).p_value == 1.0
    w = welch_test(5.0, 0.0, 3, 4.0, 0.0, 3)
    assert (w.p_value, w.t) == (0.0, -math.inf)
