"""Night-to-night spread in the gate (issue 34): the campaign, not the repetition, is the
unit when the lake holds earlier nights of the same job on the same backend.

Two synthetic lakes of one backend, 8 earlier nights of 3 runs (runs of a night within
±1 %) and a new night `new`:
- `wobbly`: nights differ by up to ±10 %; the new night is 0.90× their mean — 0.85× the
  night before, which the runs alone call worse. Against the nights it is inconclusive.
- `steady`: nights within ±1 %; the new night 0.85× — worse, and the smallest drop the
  gate could detect is small.
"""

from __future__ import annotations

import json
import math
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from fiolake.aggregator.lake.compact import compact as compact_lake
from fiolake.aggregator.lake.lake import open_lake
from fiolake.aggregator.stats import nights
from fiolake.cli import cli
from fiolake.timetext import EPOCH
from tests.aggregator import lakegen
from tests.aggregator.same import assert_same

READ = ("job1", "read")
WOBBLY = (1.08, 0.93, 1.05, 0.95, 1.10, 0.92, 1.02, 1.06)
STEADY = (1.0, 1.01, 0.99, 1.0, 1.005, 0.995, 1.0, 1.01)


def lake_of(root: Path, levels: tuple[float, ...], new: float, *, compact: bool = False) -> Path:
    """The earlier nights at `levels`, then the new night at `new`; with `compact`, the
    earlier nights compacted before the new night is written (as a nightly job finds them)."""
    store = lakegen.local_store(root)
    for night, level in enumerate((*levels, new)):
        name = f"n{night}" if night < len(levels) else "new"
        if compact and name == "new":
            compact_lake(store, grace=timedelta(0))
        for rep in range(3):
            lakegen.write_run(
                store,
                run_id=f"{name}-r{rep}",
                job_id=f"{name}-j{rep}",
                campaign=name,
                metrics={READ: {"iops": 1000 * level * (1 + 0.01 * (rep - 1))}},
                started_at=lakegen.T0 + timedelta(days=night, minutes=rep),
            )
    return root


def gate(lake: Path, *args: str) -> Result:
    return CliRunner().invoke(
        cli, ["gate", "--lake", str(lake), "--campaign", "new", "--metric", "iops",
              "--format", "json", *args],
    )  # fmt: skip


@pytest.fixture(scope="module")
def wobbly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    mean = math.exp(sum(map(math.log, WOBBLY)) / len(WOBBLY))
    return lake_of(tmp_path_factory.mktemp("wobbly"), WOBBLY, 0.90 * mean)


def test_a_drop_within_the_nights_spread_is_inconclusive(wobbly: Path) -> None:
    res = gate(wobbly)
    assert res.exit_code == 0, res.output
    (row,) = json.loads(res.stdout)["rows"]
    assert row["ratio"] == pytest.approx(0.90 * 1.0 / 1.06, abs=0.02)  # vs n7, the runs
    assert row["verdict"] == "inconclusive"
    assert row["nights"]["nights"] == 8
    assert row["nights"]["ratio"] == pytest.approx(0.90, abs=0.005)
    assert row["nights"]["p_adjusted"] > 0.05
    assert row["reason"].startswith("night-to-night: 0.90× vs 8 earlier nights (they differ by ±")
    assert row["mde"] > 0.15  # nights this wobbly hide a 15 % drop
    assert (
        "nights: the new night against up to 8 earlier nights (campaign as the unit); "
        "smallest drop it could detect (80 % power): " in res.stderr
    )


def test_the_same_drop_against_one_chosen_night_is_worse(wobbly: Path) -> None:
    res = gate(wobbly, "--baseline-campaign", "n7")
    assert res.exit_code == 1, res.output
    assert (
        "nights: baseline is one night: ≥ 2 earlier nights of this job on this backend "
        "measure night-to-night spread, ~10 make it trustworthy; smallest drop it could "
        "detect (80 % power): "
    ) in res.stderr


def test_a_drop_beyond_steady_nights_is_worse(tmp_path: Path) -> None:
    res = gate(lake_of(tmp_path, STEADY, 0.85))
    assert res.exit_code == 1, res.output
    (row,) = json.loads(res.stdout)["rows"]
    assert (row["verdict"], row["reason"], row["nights"]["nights"]) == ("worse", None, 8)
    assert row["nights"]["p_adjusted"] < 0.001
    assert row["mde"] < 0.05


def test_earlier_nights_read_from_the_summaries_give_the_model_their_runs_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compacted earlier nights come from the night summaries (issue 44), the new night
    (not compacted) from its runs: the same night model, to 9 significant digits, as
    folding every run of every night."""
    mean = math.exp(sum(map(math.log, WOBBLY)) / len(WOBBLY))
    loose = lake_of(tmp_path / "loose", WOBBLY, 0.90 * mean)
    compacted = lake_of(tmp_path / "compacted", WOBBLY, 0.90 * mean, compact=True)
    campaigns = [*(f"n{i}" for i in range(len(WOBBLY))), "new"]
    with open_lake(str(compacted)) as lake:
        logs = nights.night_logs(lake, ["nvme"], campaigns, ["iops"])
    with open_lake(str(loose)) as lake:
        assert nights.night_logs(lake, ["nvme"], campaigns, ["iops"]) is None  # no summaries
    assert logs is not None and len(logs) == len(campaigns)
    assert {log["iops"].n for log in logs.values() if log["iops"]} == {3}
    given: list[bool] = []  # whether each night model was given the summaries' logs
    models = nights.models

    def spied(*args: object) -> object:
        given.append(args[-1] is not None)
        return models(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(nights, "models", spied)
    rows = [json.loads(gate(lake).stdout)["rows"] for lake in (loose, compacted)]
    assert given == [False, True]
    (by_runs,), (by_summaries,) = rows
    assert by_summaries["verdict"] == by_runs["verdict"] == "inconclusive"
    for field, value in by_runs["nights"].items():
        assert by_summaries["nights"][field] == pytest.approx(value, rel=1e-9), field


def test_no_night_before_an_accepted_campaign_counts(tmp_path: Path) -> None:
    """An accepted campaign starts the history (issue 34): nights before it were another
    setup, so the model takes it and the nights after it only."""
    lake = lake_of(tmp_path, STEADY, 0.85)
    accept = ["gate", "accept", "--lake", str(lake), "--campaign", "n5", "--reason", "new disk",
              "--by", "ana@ci-1"]  # fmt: skip
    assert CliRunner().invoke(cli, accept).exit_code == 0
    answer = json.loads(gate(lake).stdout)
    assert answer["baseline"] == "n5"  # the accepted campaign is the default baseline too
    (row,) = answer["rows"]
    assert row["nights"]["nights"] == 3  # n5, n6, n7


def test_earlier_campaigns_from_the_summaries_are_those_their_runs_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default baseline's earlier campaigns come from the night summaries (issue 44):
    the same (backend, campaign, first and last start, accepted) as from the runs — with
    a compacted campaign that straddles the new one's first start (only its run before
    counts), one not compacted, and one of precondition runs only (never measured, so
    never a baseline)."""
    lake = lake_of(tmp_path, STEADY, 0.85, compact=True)
    store = lakegen.local_store(lake)
    start = lakegen.T0 + timedelta(days=len(STEADY))  # the new night's first start
    metrics = {READ: {"iops": 1000.0}}
    for rep, hours in enumerate((-1, 1)):
        lakegen.write_run(store, run_id=f"over-r{rep}", job_id=f"over-j{rep}", campaign="over",
                          metrics=metrics, started_at=start + timedelta(hours=hours))  # fmt: skip
    lakegen.write_run(store, run_id="prep-r0", job_id="prep-j0", campaign="prep",
                      metrics=metrics, started_at=start - timedelta(hours=2),
                      role="precondition")  # fmt: skip
    compact_lake(store, grace=timedelta(0))
    lakegen.write_run(store, run_id="late-r0", job_id="late-j0", campaign="late",
                      metrics=metrics, started_at=start - timedelta(hours=3))  # fmt: skip
    accept = ["gate", "accept", "--lake", str(lake), "--campaign", "n6", "--reason", "new disk",
              "--by", "ana@ci-1"]  # fmt: skip
    assert CliRunner().invoke(cli, accept).exit_code == 0
    partial_rows = nights.night_rows.partial_rows
    answered: list[bool] = []  # whether the summaries could answer, each call

    def spied(*args: object) -> str | None:
        answered.append(partial_rows(*args) is not None)  # type: ignore[arg-type]
        return partial_rows(*args)  # type: ignore[arg-type]

    with open_lake(str(lake)) as opened:
        monkeypatch.setattr(nights.night_rows, "partial_rows", spied)
        from_summaries = nights.earlier_campaigns(opened, "new")
        monkeypatch.setattr(nights.night_rows, "partial_rows", lambda *args: None)
        from_runs = nights.earlier_campaigns(opened, "new")
    assert answered == [True]
    assert sorted(from_summaries) == sorted(from_runs)
    by_name = {name: rest for _, name, *rest in from_runs}
    assert set(by_name) == {*(f"n{i}" for i in range(len(STEADY))), "over", "late"}
    before = (start - timedelta(hours=1) - EPOCH) // timedelta(microseconds=1)
    assert by_name["over"] == [before, before, False]
    assert [name for name, (*_, accepted) in by_name.items() if accepted] == ["n6"]


def test_a_night_summaries_file_gone_folds_the_nights_runs(tmp_path: Path) -> None:
    """The night summaries' files deleted behind the generation record (a hand-made
    cleanup): the gate folds the nights' runs instead, the same model, not an IO error."""
    lake = lake_of(tmp_path, STEADY, 0.85, compact=True)
    want = json.loads(gate(lake).stdout)["rows"]
    for path in (lake / "compacted" / "delta" / "night_summaries").glob("*.parquet"):
        path.unlink()
    res = gate(lake)
    assert res.exit_code == 1, res.output
    assert_same(json.loads(res.stdout)["rows"], want)
