"""The night-folded regressions path against the per-run path it replaced (issue 44).

The oracle below is the per-run code `regressions` ran before the nights were folded in
SQL (`runsets.per_run_values` + `night_changes.by_night` + `stats.compare_logs`), kept
here verbatim in substance: every value of every run as a Python object. On a lake small
enough for both, the change points, their runs, nights, counts and verdicts must be the
same, and the ratios, CIs and p-values equal to 9 significant digits.
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fiolake.aggregator.lake import columns
from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.lake import Lake, connect
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.stats import stats
from fiolake.aggregator.stats.night_changes import by_night
from fiolake.aggregator.stats.nightly import nightly, pooled
from fiolake.aggregator.stats.regressions import regressions
from tests.aggregator import lakegen

METRICS = ["iops", "bw_bytes", "clat_mean_ns"]
JOBS = [("job1", "read"), ("job2", "write")]


def _lake(root: Path) -> None:
    """Two backends, 24 nights of 2 runs, 3 % lognormal noise: nvme's jobs drop 20 % from
    night 15, one spike night (ssd night 9), a run with zero IOPS, nights whose runs
    interleave (a late run of night 4 after night 5 began), runs without a campaign; the
    first half compacted, the rest runners' files."""
    rng = np.random.default_rng(44)
    store = lakegen.local_store(root)
    t = lakegen.T0
    for night in range(24):
        for backend in ("nvme", "ssd"):
            for rep in range(2):
                factor = 0.8 if backend == "nvme" and night >= 15 else 1.0
                factor *= 1.6 if backend == "ssd" and night == 9 else 1.0
                metrics = {
                    job: {
                        "iops": 1000.0 * factor * rng.lognormal(0, 0.03),
                        "bw_bytes": 4096e3 * factor * rng.lognormal(0, 0.03),
                        "clat_mean_ns": 5e5 / factor * rng.lognormal(0, 0.03),
                    }
                    for job in JOBS
                }
                if (night, backend, rep) == (7, "nvme", 1):
                    metrics[JOBS[0]]["iops"] = 0.0
                started = t + timedelta(hours=24 * night, minutes=10 * rep)
                if (night, rep) == (4, 1):
                    started += timedelta(hours=25)  # after night 5's first run
                campaign = "" if night == 12 else _label(night)
                run = f"n{night:02d}-{backend}-r{rep}"
                lakegen.write_run(store, run_id=run, job_id=f"j-{run}", campaign=campaign,
                                  backend=backend, metrics=metrics, started_at=started)  # fmt: skip
        if night == 11:
            compact(store, grace=timedelta(0))


def _label(night: int) -> str:
    """Campaign names whose order is not the nights' (7 is prime to 24)."""
    return f"night-{night * 7 % 24:02d}"


def _per_run_values(lake: Lake, filt: RunFilter) -> dict[Any, dict[str, list[Any]]]:
    """The replaced `runsets.per_run_values`: (group, case) -> metric -> runs in order."""
    where = filt.where("r")
    per_run = ", ".join(f'{columns.per_run_aggregate(m)} AS "m{i}"' for i, m in enumerate(METRICS))
    picked = ", ".join(f'p."m{i}"' for i in range(len(METRICS)))
    rows = lake.con.execute(f"""
        WITH per_run AS (
            SELECT x.run_id, x.job_name, x.direction, {per_run}
            FROM results x
            WHERE x.run_id IN (SELECT r.run_id FROM runs r WHERE {where})
            GROUP BY ALL
        )
        SELECT r.backend, r.profile, p.job_name, p.direction, r.workload_sha256, r.run_id,
               epoch_ms(r.started_at), r.campaign_id, {picked}
        FROM per_run p JOIN runs r USING (run_id)
        WHERE {where}
        ORDER BY r.started_at, r.run_id
    """).fetchall()
    data: dict[Any, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for group, profile, job, direction, sha, run_id, at_ms, campaign, *values in rows:
        at = datetime.fromtimestamp(at_ms / 1000, UTC) if at_ms is not None else None
        for metric, value in zip(METRICS, values, strict=True):
            data[(str(group), (profile, job, direction, sha))][metric].append(
                (run_id, None if value is None else float(value), at, campaign)
            )
    return data


def _oracle(lake: Lake) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], int, int]:
    """The replaced loop of `regressions` (change points and outlier nights, unsorted)."""
    points, odd, series, short = [], [], 0, 0
    for key, by_metric in sorted(_per_run_values(lake, RunFilter()).items(), key=str):
        for metric in METRICS:
            values = [v for v in by_metric[metric] if v[1] is not None and v[1] > 0]
            series += 1
            if len({v[3] for v in values}) < 6:
                short += 1
                continue
            nights = by_night([v[1] for v in values], [v[3] or "" for v in values])
            values = [values[i] for i in nights.order]
            numbers = [v[1] for v in values]
            bounds = [0, *sorted(nights.changes), len(values)]
            for i, at in enumerate(sorted(nights.changes), start=1):
                before, after = numbers[bounds[i - 1] : at], numbers[at : bounds[i + 1]]
                test = stats.compare_logs(before, after)
                points.append((key[0], *key[1][:3], metric, values[at][2], len(before),
                               len(after), test.ratio, test.ratio_ci_low, test.ratio_ci_high,
                               nights.changes[at], values[at - 1][0], values[at][0],
                               values[at][3]))  # fmt: skip
            odd += [(key[0], metric, night, values[pos][2], ratio)
                    for night, pos, ratio in nights.outliers]  # fmt: skip
    return points, odd, series, short


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return len(a) == len(b) and all(
        math.isclose(x, y, rel_tol=1e-9) if isinstance(x, float) else x == y
        for x, y in zip(a, b, strict=True)
    )


def test_folded_nights_give_the_per_run_answers(tmp_path: Path) -> None:
    _lake(tmp_path)
    with connect(str(tmp_path)) as lake:
        want, want_odd, series, short = _oracle(lake)
        report = regressions(lake, since=None, metrics=METRICS, include_better=True)
    got = [
        (r.backend, r.profile, r.job_name, r.direction, r.metric, r.at, r.n_before, r.n_after,
         r.ratio, r.ratio_ci_low, r.ratio_ci_high, r.p_value, r.run_before, r.run_after,
         r.campaign_after)
        for r in report.rows
    ]  # fmt: skip
    # What the lake was made to hold: nvme's job1 and job2 change at night 18 (worse
    # throughput, worse latency), the ssd spike night is an outlier, not a change.
    assert {(g[0], g[2], g[4], g[13]) for g in got} == {
        ("nvme", job, metric, "n15-nvme-r0") for job, _ in JOBS for metric in METRICS
    }
    assert len(got) == len(want) == 6
    key = lambda row: (row[0], row[2], row[4])  # noqa: E731 - a sort key
    for mine, theirs in zip(sorted(got, key=key), sorted(want, key=key), strict=True):
        assert _same(mine, theirs), (mine, theirs)
    odd = [(o.backend, o.metric, o.campaign, o.at, o.ratio) for o in report.outliers]
    assert ("ssd", "iops", _label(9)) in {o[:3] for o in odd}
    assert len(odd) == len(want_odd)
    for mine, theirs in zip(sorted(odd, key=str), sorted(want_odd, key=str), strict=True):
        assert _same(mine, theirs), (mine, theirs)
    assert (report.series, report.too_short) == (series, short)


def test_pooled_nights_are_the_runs_summary() -> None:
    rng = np.random.default_rng(3)
    runs = [np.log(rng.lognormal(7, 0.05, size=k)) for k in (1, 3, 4, 2)]
    n = np.array([len(v) for v in runs])
    mean = np.array([v.mean() for v in runs])
    m2 = np.array([((v - v.mean()) ** 2).sum() for v in runs])
    whole = stats.LogSummary.of(np.exp(np.concatenate(runs)).tolist())
    got = pooled(n, mean, m2)
    assert got.n == whole.n == 10
    assert got.mean == pytest.approx(whole.mean, rel=1e-12)
    assert got.var == pytest.approx(whole.var, rel=1e-9)
    assert pooled(n[:1], mean[:1], m2[:1]).var is None


def test_a_series_lists_every_metric_even_one_without_positive_values(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path)
    for i in range(3):
        lakegen.write_run(store, run_id=f"r{i}", job_id=f"j{i}", campaign=f"c{i}",
                          metrics={("job1", "read"): {"iops": 10.0 * (i + 1), "bw_bytes": 0.0}},
                          started_at=lakegen.T0 + timedelta(days=i))  # fmt: skip
    with connect(str(tmp_path)) as lake:
        data = nightly(lake, "r.backend", RunFilter(), ["iops", "bw_bytes"])
    [(key, by_metric)] = data.items()
    assert key == ("nvme", ("random-reads", "job1", "read", key[1][3]))
    iops = by_metric["iops"]
    assert [(x.label, x.n, x.first_run) for x in map(iops.night, range(len(iops)))] == [
        ("c0", 1, "r0"), ("c1", 1, "r1"), ("c2", 1, "r2"),
    ]  # fmt: skip
    assert iops.night(2).mean == pytest.approx(math.log(30.0))
    assert iops.night(2).first_at == lakegen.T0 + timedelta(days=2)
    assert len(by_metric["bw_bytes"]) == 0


def test_a_night_summaries_file_gone_folds_the_runs(tmp_path: Path) -> None:
    """The night summaries' files deleted behind the generation record (a hand-made
    cleanup): `regressions` folds the runs from the views, the same change points, not
    DuckDB's IO error."""
    _lake(tmp_path)
    with connect(str(tmp_path)) as lake:
        want = regressions(lake, since=None, include_better=True)
    for path in (tmp_path / "compacted" / "delta" / "night_summaries").glob("*.parquet"):
        path.unlink()
    with connect(str(tmp_path)) as lake:
        got = regressions(lake, since=None, include_better=True)
    assert want.rows, "the lake has its planted drop"
    key = [(r.backend, r.job_name, r.direction, r.metric, r.run_after) for r in want.rows]
    assert [(r.backend, r.job_name, r.direction, r.metric, r.run_after) for r in got.rows] == key
    assert (got.series, got.too_short) == (want.series, want.too_short)
