"""Change points counted in nights (issue 34): one spike night is an outlier, not a
regression; a step that lasts 3 nights is a change point. Synthetic series: 12 nights of
3 runs, σ = 2 % lognormal noise (seeded)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from fiolake.aggregator.lake.lake import open_lake
from fiolake.aggregator.stats.changepoints import change_points
from fiolake.aggregator.stats.night_changes import by_night
from fiolake.aggregator.stats.regressions import regressions
from fiolake.aggregator.stats.trend import trend
from fiolake.cli import cli
from tests.aggregator import lakegen

NIGHTS, RUNS = 12, 3


def series(levels: dict[int, float]) -> tuple[list[float], list[str]]:
    """Runs of NIGHTS nights at 1000 × levels.get(night, 1.0)."""
    rng = np.random.default_rng(5)
    values, nights = [], []
    for night in range(NIGHTS):
        for _ in range(RUNS):
            values.append(1000.0 * levels.get(night, 1.0) * rng.lognormal(0, 0.02))
            nights.append(f"n{night:02d}")
    return values, nights


@pytest.mark.parametrize(("night", "first_run"), [(6, 18), (11, 33)])
def test_one_spike_night_is_an_outlier_not_a_change_point(night: int, first_run: int) -> None:
    values, nights = series({night: 0.6})
    found = by_night(values, nights)
    assert found.changes == {}
    assert [(n, pos) for n, pos, _ in found.outliers] == [(f"n{night:02d}", first_run)]
    assert found.outliers[0][2] == pytest.approx(0.6, abs=0.03)


def test_counted_in_runs_the_newest_spike_night_was_a_change_point() -> None:
    values, _ = series({11: 0.6})
    assert list(change_points(values)) == [33]  # three runs of one night: "a regression"


def test_a_step_of_three_nights_is_a_change_point() -> None:
    values, nights = series({9: 0.8, 10: 0.8, 11: 0.8})
    found = by_night(values, nights)
    assert list(found.changes) == [27]  # the first run of night n09
    assert found.outliers == []
    shorter = by_night(values[:-3], nights[:-3])  # two nights of the step: not yet
    assert shorter.changes == {}


def test_min_segment_is_configurable() -> None:
    values, nights = series({10: 0.8, 11: 0.8})
    assert by_night(values, nights).changes == {}
    assert list(by_night(values, nights, min_segment=2).changes) == [30]


@pytest.fixture
def spiky_lake(tmp_path: Path) -> Path:
    values, nights = series({11: 0.6})  # last night's runs all slow
    store = lakegen.local_store(tmp_path / "lake")
    for i, (value, night) in enumerate(zip(values, nights, strict=True)):
        lakegen.write_run(
            store,
            run_id=f"r{i:02d}",
            job_id=f"j{i:02d}",
            campaign=night,
            started_at=lakegen.T0 + timedelta(hours=8 * i),
            metrics={("job1", "read"): {"iops": value}},
        )
    return tmp_path / "lake"


def test_regressions_and_trend_list_the_spike_night_as_an_outlier(spiky_lake: Path) -> None:
    with open_lake(str(spiky_lake)) as lake:
        report = regressions(lake, since=None, metrics=["iops"], include_better=True)
        assert report.rows == []
        assert [(o.campaign, o.metric) for o in report.outliers] == [("n11", "iops")]
        assert not any(p.change_point for p in trend(lake, "iops"))
    res = CliRunner().invoke(
        cli, ["regressions", "--lake", str(spiky_lake), "--since", "all", "--metric", "iops"]
    )
    assert res.exit_code == 0, res.output
    assert (
        "outlier night: nvme · random-reads · job1 · read · iops: campaign n11 at 0.6× the "
        "other nights of its segment — one night, not a change\n"
    ) in res.stderr
