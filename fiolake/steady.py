"""Steady state of a per-second series, adapting the SNIA PTS rule (docs/statistics.md).

SNIA's Solid State Storage Performance Test Specification calls a measurement steady
when, over a window of five rounds, the data's range (max − min) is within 20 % of the
window's average and the least-squares line's excursion across the window is within
10 % of it. PTS applies the rule to whole test rounds after preconditioning; fiolake
applies it to fio's per-second series of one run, which is weaker evidence: it says
the run's last five seconds were flat, not that the device reached its long-run state.

Written by hand: a five-point window rule, not a statistical method a library offers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

WINDOW = 5  # intervals (seconds)
MAX_RANGE = 0.20  # (max − min) / average over the window
MAX_SLOPE_EXCURSION = 0.10  # |slope| × (WINDOW − 1) / average over the window


def window_is_steady(values: Sequence[float]) -> bool:
    """The PTS criteria on one window of values."""
    w = np.asarray(values, dtype=float)
    mean = float(w.mean())
    if mean <= 0:
        return False
    slope = float(np.polyfit(np.arange(len(w)), w, 1)[0])
    in_range = float(w.max() - w.min()) <= MAX_RANGE * mean
    return in_range and abs(slope) * (len(w) - 1) <= MAX_SLOPE_EXCURSION * mean


def steady_state(values: Sequence[float]) -> tuple[bool | None, int | None]:
    """(steady_state, warmup_s) of a per-second series.

    steady_state: whether the last WINDOW seconds meet the criteria; None (unknown) for a
    series shorter than the window. warmup_s: seconds before the first window that meets
    them (None when none does).
    """
    if len(values) < WINDOW:
        return None, None
    flags = [window_is_steady(values[i : i + WINDOW]) for i in range(len(values) - WINDOW + 1)]
    first = next((i for i, ok in enumerate(flags) if ok), None)
    return flags[-1], first
