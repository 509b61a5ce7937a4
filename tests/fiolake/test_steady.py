"""The steady-state rule (SNIA PTS adaptation) on known series."""

from __future__ import annotations

from fiolake.steady import steady_state, window_is_steady


def test_flat_series_is_steady_from_the_start() -> None:
    assert steady_state([100, 101, 99, 100, 102, 100, 101]) == (True, 0)


def test_warm_up_then_flat() -> None:
    series = [10, 40, 70, 95, 100, 101, 99, 100, 100, 102]
    assert steady_state(series) == (True, 3)  # [95, 100, 101, 99, 100] already qualifies


def test_still_climbing_is_not_steady() -> None:
    assert steady_state([10, 20, 30, 40, 50, 60, 70]) == (False, None)


def test_range_and_slope_limits() -> None:
    assert window_is_steady([100, 118, 100, 118, 100])  # range 17 % of the mean, no slope
    assert not window_is_steady([100, 100, 100, 100, 119])  # range in, slope excursion out
    assert not window_is_steady([90, 90, 90, 90, 130])  # range over 20 %
    assert not window_is_steady([95, 97.5, 100, 102.5, 105.5])  # slope excursion over 10 %


def test_too_short_is_unknown_not_false() -> None:
    assert steady_state([100, 100, 100, 100]) == (None, None)
