"""Cross-check: fiolake's change points against Apache Otava's, on the same series.

apache-otava pins numpy 2.2.* and scipy < 1.17 (and pulls BigQuery and Slack clients), so
it is never a dependency: run this in a throwaway venv. aggregator/stats/changepoints.py needs
only numpy and scipy, so it is loaded by path. Prints JSON; docs/statistics.md records it.
Not a test: a script that prints its figures.

    python3 -m venv /tmp/otava-venv && /tmp/otava-venv/bin/pip install apache-otava==0.8.0
    /tmp/otava-venv/bin/python tests/bench/changepoints_vs_otava.py
"""

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

# Loaded by path (this venv has no fiolake); found wherever under fiolake/aggregator/ the
# module lives.
REPO = Path(__file__).resolve().parents[2]
CHANGEPOINTS = sorted(REPO.glob("fiolake/aggregator/**/changepoints.py"))


def load_changepoints():
    """fiolake's change-point module, loaded from its file."""
    if len(CHANGEPOINTS) != 1:
        raise SystemExit(f"expected one changepoints.py under fiolake/aggregator/: {CHANGEPOINTS}")
    # Its own imports (the t-test in fiolake's stats module) resolve from the checkout; they
    # need numpy and scipy only, which Otava's venv has.
    sys.path.insert(0, str(REPO))
    spec = importlib.util.spec_from_file_location("changepoints", CHANGEPOINTS[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    cp = load_changepoints()  # first: --help proves the module is still where it looks
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    from otava.analysis import compute_change_points

    def otava(series, window=50):
        points, _ = compute_change_points(
            list(map(float, series)), window_len=window, max_pvalue=0.001
        )
        return sorted(p.index for p in points)

    def ours(series):
        return sorted(cp.change_points(series))

    print(json.dumps(measure(ours, otava), indent=1))


def measure(ours, otava):
    """The four cases of docs/statistics.md's table, fixed seeds."""
    out = {}
    # 1. one 15 % step at 30 in 60 points, sigma 5 %
    rng = np.random.default_rng(5)
    hit = {"ours": 0, "otava_raw": 0, "otava_log": 0}
    same = within1 = 0
    N = 200
    for _ in range(N):
        s = rng.lognormal(0, 0.05, 60)
        s[30:] *= 1.15
        a, b, c = ours(s), otava(s), otava(np.log(s))
        hit["ours"] += any(abs(p - 30) <= 2 for p in a)
        hit["otava_raw"] += any(abs(p - 30) <= 2 for p in b)
        hit["otava_log"] += any(abs(p - 30) <= 2 for p in c)
        same += a == c
        within1 += len(a) == len(c) and all(abs(x - y) <= 1 for x, y in zip(a, c, strict=False))
    out["step15"] = {
        "series": N,
        "found_within_2": hit,
        "identical_sets_vs_otava_log": same,
        "same_count_within_1": within1,
    }
    # 2. two steps (0.7x at 30, 1.5x at 60), sigma 3 %, 90 points
    rng = np.random.default_rng(6)
    same = 0
    ex = {"ours": 0, "otava_log": 0}
    for _ in range(N):
        s = rng.lognormal(0, 0.03, 90)
        s[30:] *= 0.7
        s[60:] *= 1.5
        a, c = ours(s), otava(np.log(s))
        ex["ours"] += a == [30, 60]
        ex["otava_log"] += c == [30, 60]
        same += a == c
    out["two_steps"] = {"series": N, "exactly_30_60": ex, "identical_sets": same}
    # 3. step sizes: detection power by effect size (60 points, sigma 5 %)
    power = {}
    for step in (1.05, 1.10, 1.15, 1.20, 1.30):
        rng = np.random.default_rng(int(step * 100))
        h = {"ours": 0, "otava_log": 0}
        for _ in range(100):
            s = rng.lognormal(0, 0.05, 60)
            s[30:] *= step
            h["ours"] += any(abs(p - 30) <= 2 for p in ours(s))
            h["otava_log"] += any(abs(p - 30) <= 2 for p in otava(np.log(s)))
        power[f"{step:.2f}"] = h
    out["power_by_step_of_100"] = power
    # 4. flat series: false alarms (any change point) over 1000 series of 60, sigma 5 %
    rng = np.random.default_rng(8)
    fa = {"ours": 0, "otava_log": 0, "otava_raw": 0}
    for _ in range(1000):
        s = rng.lognormal(0, 0.05, 60)
        fa["ours"] += bool(ours(s))
        fa["otava_log"] += bool(otava(np.log(s)))
        fa["otava_raw"] += bool(otava(s))
    out["flat_1000_false_alarm_series"] = fa
    return out


if __name__ == "__main__":
    main()
