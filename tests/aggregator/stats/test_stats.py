"""The statistics module against scipy and statsmodels, on fixed seeds.

scipy.stats and statsmodels, the oracles, are imported inside the tests that use them:
~1 s of import in each process that collects this file (four in `make test-fast`).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fiolake.aggregator.stats import power, stats


def test_ratio_and_ci_are_welch_on_logs() -> None:
    from scipy import stats as scipy_stats

    rng = np.random.default_rng(1)
    base, other = rng.lognormal(0, 0.1, 6) * 100, rng.lognormal(0, 0.1, 4) * 250
    got = stats.compare_logs(base, other)
    test = scipy_stats.ttest_ind(np.log(other), np.log(base), equal_var=False)
    ci = test.confidence_interval(0.95)
    assert got.ratio == pytest.approx(scipy_stats.gmean(other) / scipy_stats.gmean(base))
    assert (got.ratio_ci_low, got.ratio_ci_high) == (
        pytest.approx(math.exp(ci.low)),
        pytest.approx(math.exp(ci.high)),
    )
    assert got.p_value == pytest.approx(test.pvalue)
    assert got.ratio_ci_low > 0  # a ratio CI never crosses zero


def test_tost_is_the_90_percent_ci_inside_the_bounds() -> None:
    rng = np.random.default_rng(2)
    for shift in (0.0, 0.02, 0.04, 0.08):
        base = rng.lognormal(0, 0.02, 8)
        other = rng.lognormal(shift, 0.02, 8)
        got = stats.compare_logs(base, other, min_effect=0.05)
        ci90 = stats.compare_logs(base, other, confidence=0.90)
        inside = 1 / 1.05 < ci90.ratio_ci_low and ci90.ratio_ci_high < 1.05
        assert (got.p_tost < 0.05) == inside, shift


def test_holm_matches_statsmodels_and_fdr_is_scipys_bh() -> None:
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(3)
    for size in (1, 2, 7, 40):
        p = list(rng.uniform(0, 0.2, size))
        assert stats.adjust(p, "holm") == pytest.approx(list(multipletests(p, method="holm")[1]))
        expected = multipletests(p, method="fdr_bh")[1]
        assert stats.adjust(p, "fdr") == pytest.approx(list(expected))
    with pytest.raises(ValueError, match="unknown adjustment"):
        stats.adjust([0.1], "bonferroni")


def test_bh_keeps_ties_and_order_like_statsmodels() -> None:
    from statsmodels.stats.multitest import multipletests

    p = [0.01, 0.04, 0.04, 0.03, 0.5, 0.01, 1.0]
    assert stats.adjust(p, "fdr") == pytest.approx(list(multipletests(p, method="fdr_bh")[1]))


def test_pooled_t_is_scipys_ttest_ind() -> None:
    from scipy import stats as scipy_stats

    rng = np.random.default_rng(4)
    for n_left, n_right in ((2, 2), (3, 9), (15, 15)):
        left, right = rng.normal(0, 1, n_left), rng.normal(0.5, 2, n_right)
        expected = scipy_stats.ttest_ind(left, right).pvalue
        assert stats.pooled_t_pvalue(left, right) == pytest.approx(expected)


def test_the_statistics_never_import_scipy_stats() -> None:
    """scipy.stats costs ~0.5 s of import: a third of compare's start-up budget."""
    import subprocess
    import sys

    code = (
        "import sys, fiolake.aggregator.stats.compare, fiolake.aggregator.stats.changepoints; "
        "print(any(m.startswith('scipy.stats') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_reps_for_power_grows_with_noise_and_shrinks_with_effect() -> None:
    from statsmodels.stats.power import TTestIndPower

    assert power.reps_for_power(0.02, 0.05) < power.reps_for_power(0.1, 0.05)
    assert power.reps_for_power(0.1, 0.2) < power.reps_for_power(0.1, 0.05)
    # the noncentral-t solution, as statsmodels solves it (rounded up to whole runs)
    for sd_log, effect in ((0.02, 0.05), (0.05, 0.05), (0.1, 0.2), (0.3, 0.05)):
        expected = TTestIndPower().solve_power(
            effect_size=math.log1p(effect) / sd_log, alpha=0.05, power=0.8
        )
        assert power.reps_for_power(sd_log, effect) == math.ceil(expected), (sd_log, effect)


def test_reps_to_confirm_the_observed_ratio_is_the_power_solution_at_it() -> None:
    from statsmodels.stats.power import TTestIndPower

    for sd_log, ratio in ((0.1, 0.85), (0.1, 1.3), (0.05, 0.97)):
        expected = TTestIndPower().solve_power(
            effect_size=abs(math.log(ratio)) / sd_log, alpha=0.05, power=0.8
        )
        assert power.reps_to_confirm(sd_log, ratio) == max(2, math.ceil(expected))
    assert power.reps_to_confirm(0.1, 1.0) is None  # no difference to confirm
    assert power.reps_to_confirm(0.5, 1.0001) is None  # beyond any practical count


def test_reps_for_equivalence_reach_80_percent_tost_power_by_simulation() -> None:
    """At the returned n, TOST (Welch's t on logs through stats.compare_logs) declares
    equivalence in ~80 % of simulated campaigns; one run fewer falls short."""
    sd, ratio, delta = 0.05, 1.01, 0.05
    n = power.reps_for_equivalence(sd, ratio, delta)
    assert n is not None and 5 < n < 40
    rng = np.random.default_rng(26)

    def rate(reps: int) -> float:
        hits = 0
        for _ in range(2000):
            base = np.exp(rng.normal(0.0, sd, reps))
            other = np.exp(rng.normal(math.log(ratio), sd, reps))
            hits += stats.compare_logs(base, other, min_effect=delta).p_tost < 0.05
        return hits / 2000

    assert rate(n) >= 0.77
    assert rate(n - 2) < 0.8
    assert power.reps_for_equivalence(sd, 1.06, delta) is None  # beyond ±5 %: out of reach


def test_outliers_need_five_repetitions() -> None:
    assert stats.outliers([100, 101, 99, 500]) is None
    assert stats.outliers([100, 101, 99, 102, 100, 500]) == [5]
    assert stats.outliers([100, 101, 99, 102, 100]) == []


def test_identical_repetitions_give_exact_answers() -> None:
    same = stats.compare_logs([5.0, 5.0, 5.0], [5.0, 5.0, 5.0])
    assert (same.ratio, same.p_value, same.p_tost) == (1.0, 1.0, 0.0)
    apart = stats.compare_logs([5.0, 5.0], [10.0, 10.0])
    assert (apart.ratio, apart.p_value, apart.p_tost) == (pytest.approx(2.0), 0.0, 1.0)


def test_power_far_in_the_tail_is_a_number_not_nan() -> None:
    """scipy.special.nctdtr is NaN at (df 2, nc 7.7, −23.2): the power came out NaN, the
    search stopped at its first guess and the issue-23 demo read `~2 runs per side would
    confirm 5.7×` beside three inconclusive runs."""
    from scipy import stats as sps

    crit = sps.t.ppf(1 - 0.05 / 27 / 2, 2)
    # the lower tail, P(T′ < −23) at nc 7.7, is ~1e-17 (scipy.stats' cdf is NaN there too)
    expected = sps.nct.sf(crit, 2, 7.7)
    assert power._power(2, 7.7, 0.05 / 27) == pytest.approx(expected, rel=1e-6)
    assert power.reps_to_confirm(0.2324, 5.944, 0.05 / 27) == 3


def _walked_reps_for_equivalence(sd: float, ratio: float, delta: float) -> int | None:
    """The runs per side found by walking n up one grid step at a time (the oracle)."""
    bound, diff = math.log1p(delta), abs(math.log(ratio))
    if diff >= bound:
        return None
    n = 2
    while power._tost_power(n, diff / sd, bound / sd, stats.ALPHA) < stats.DEFAULT_POWER:
        n = n + 1 if n < 64 else math.ceil(n * 1.1)
        if n > power.MAX_REPS:
            return None
    return n


def test_reps_for_equivalence_bisects_to_the_n_a_walk_finds() -> None:
    rng = np.random.default_rng(3)
    sds = np.exp(rng.uniform(math.log(0.002), math.log(0.5), 400))
    deltas = rng.choice([0.02, 0.05, 0.1, 0.2], 400)
    # Observed ratios anywhere inside the bounds, many close to them (many runs needed).
    ratios = np.exp(np.log1p(deltas) * rng.uniform(-0.999, 0.999, 400))
    cases = list(zip(sds, ratios, deltas, strict=True))
    found = [power.reps_for_equivalence(s, r, d) for s, r, d in cases]
    walked = [_walked_reps_for_equivalence(s, r, d) for s, r, d in cases]
    assert found == walked
    assert None in found and 2 in found and any(n and n > 64 for n in found)


def test_reps_for_power_is_the_n_a_walk_from_two_finds() -> None:
    """The search starts from a guess that can overshoot (Guenther's correction) or
    undershoot: the answer is still the first n whose power reaches 80 %."""
    rng = np.random.default_rng(7)
    effects = np.exp(rng.uniform(math.log(0.3), math.log(8.0), 80))
    alphas = 0.05 / rng.integers(1, 400, 80)
    found = power._reps_for_power(effects, alphas, stats.DEFAULT_POWER).tolist()
    walked = []
    for effect, alpha in zip(effects, alphas, strict=True):
        n = 2
        while power._power(n, effect, alpha) < stats.DEFAULT_POWER:
            n += 1
        walked.append(n)
    assert found == walked
    assert min(found) <= 4 and max(found) > 64


def test_counts_beyond_max_reps_are_none_not_an_overflow() -> None:
    """A ratio one float step from 1 (identical runs summed in another order) is an
    effect of ~1e-13: its count of runs overflowed int64 and read −9.2e18."""
    assert power.reps_to_confirm(0.0016, 1.0000000000003, 0.05 / 3) is None
    assert power.reps_for_power(1e9, 0.05) is None
    assert power.reps_for_power(2.0, 0.05) is None  # ~26,000 per group: not in practice
    from statsmodels.stats.power import TTestIndPower  # and below it, still the count:

    expected = TTestIndPower().solve_power(abs(math.log(0.99)) / 0.2, alpha=0.05, power=0.8)
    assert power.reps_to_confirm(0.2, 0.99) == math.ceil(expected) > 6_000


@given(
    st.lists(st.tuples(st.integers(-3, 40), st.integers(-5, 45)), min_size=1, max_size=30),
    st.sampled_from([None, 30]),
)
def test_walk_finds_the_first_k_reached_whatever_the_guess(
    rows: list[tuple[int, int]], ceiling: int | None
) -> None:
    first = np.array([f for f, _ in rows])
    asked: list[np.ndarray] = []

    def reached(at: np.ndarray, k: np.ndarray) -> np.ndarray:
        asked.append(k)
        return k >= first[at]

    found = power._walk(reached, np.array([g for _, g in rows]), floor=2, ceiling=ceiling)
    answer = [max(2, f) if ceiling is None else min(max(2, f), ceiling) for f, _ in rows]
    assert found.tolist() == answer
    assert all((k >= 2).all() and (ceiling is None or (k < ceiling).all()) for k in asked)


def test_runs_needed_of_many_rows_at_once_are_each_rows_own() -> None:
    """The table's searches run together (one ufunc call per step for every row still
    searching): each row's counts are those it gets alone, whatever its neighbours."""
    rng = np.random.default_rng(44)
    sds = np.exp(rng.uniform(math.log(0.002), math.log(0.5), 300)).tolist()
    ratios = np.exp(rng.normal(0.0, 0.08, 300)).tolist()
    sds[:3], ratios[3:6] = [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]  # no spread; nothing to confirm
    alphas = (0.05 / rng.integers(1, 60, 300)).tolist()
    confirm, equivalence = power.runs_needed(sds, ratios, 0.05, alphas)
    alone = [
        (power.reps_to_confirm(s, r, a), power.reps_for_equivalence(s, r, 0.05, a))
        for s, r, a in zip(sds, ratios, alphas, strict=True)
    ]
    assert list(zip(confirm, equivalence, strict=True)) == alone
    assert confirm[3:6] == [None] * 3 and confirm[0] == 2
    assert None in equivalence and any(n and n > 64 for n in confirm)
