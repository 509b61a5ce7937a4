"""One answer everywhere (issue 26): a campaign's verdicts computed through every surface —
`compare.compare`, CLI `compare` (with and without --metric / --profile / --backend), the
landing page's comparison and the app's Compare page — are identical row for row; and
`fiolake gate` gives the rows of `compare --by campaign_id` for the same two campaigns."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from streamlit.testing.v1 import AppTest

from fiolake.aggregator.lake.lake import connect
from fiolake.aggregator.report.headline import landing, sentences
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.stats.compare import compare
from fiolake.aggregator.stats.verdict_text import label
from fiolake.cli import cli
from tests.aggregator import lakegen

APP = Path(__file__).parents[2] / "app"
CAMPAIGN = "nightly"
Key = tuple[str, str, str, str, str]


@pytest.fixture
def lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Three backends, two profiles of two jobs each, 3 noisy repetitions: enough tests
    that a filter-chosen Holm family would change adjusted p-values."""
    store = lakegen.local_store(tmp_path / "lake")
    for profile, scale in (("random-reads", 1.0), ("random-writes", 0.5)):
        jobs = {
            ("job1", "read"): {"iops": 1000 * scale, "clat_p99_ns": 200_000 / scale},
            ("job2", "write"): {"iops": 400 * scale, "clat_p99_ns": 900_000 / scale},
        }
        backends = {
            "disk": jobs,
            "tmpfs": {k: {m: v * (1.4 if m == "iops" else 0.8) for m, v in d.items()}
                      for k, d in jobs.items()},
            "ssd": {k: {m: v * 1.05 for m, v in d.items()} for k, d in jobs.items()},
        }  # fmt: skip
        lakegen.write_campaign(store, CAMPAIGN, backends, 3, profile=profile, jitter=0.1)
    monkeypatch.setenv("FIOLAKE_LAKE", str(tmp_path / "lake"))
    return str(tmp_path / "lake")


def cli_rows(lake: str, *args: str) -> dict[Key, tuple[float | None, str]]:
    res = CliRunner().invoke(
        cli,
        [
            "compare",
            "--lake",
            lake,
            "--campaign",
            CAMPAIGN,
            "--baseline",
            "disk",
            "--format",
            "json",
            *args,
        ],  # fmt: skip
    )
    assert res.exit_code == 0, res.output
    return {
        (r["backend"], r["profile"], r["job_name"], r["direction"], r["metric"]): (
            r["p_adjusted"],
            r["verdict"],
        )
        for r in json.loads(res.stdout)
    }


def test_every_surface_gives_the_same_verdicts(lake: str) -> None:
    with connect(lake) as handle:
        whole = compare(handle, filt=RunFilter(campaign=CAMPAIGN), baseline="disk")
        _, landed = landing(handle)
        lines = sentences(landed)
    truth = {
        (r.group, r.profile, r.job_name, r.direction, r.metric): (r.p_adjusted, r.verdict)
        for r in whole.rows
    }
    assert whole.family == f"campaign {CAMPAIGN} vs disk, {whole.tests} tests, Holm"
    assert whole.tests == 2 * 2 * 2 * 3  # 2 backends × 2 profiles × 2 jobs × 3 tests
    # Enough decided rows that a smaller family would move them.
    assert {v for _, v in truth.values()} >= {"better", "baseline"}

    def same(got: dict[Key, tuple[float | None, str]]) -> None:
        # Verdicts exactly; p-values to the last few bits (SQL sums logs in any order).
        assert got, "no rows"
        assert {k: v for k, (_, v) in got.items()} == {k: truth[k][1] for k in got}
        assert {k: p for k, (p, _) in got.items()} == {
            k: None if truth[k][0] is None else pytest.approx(truth[k][0], rel=1e-9) for k in got
        }

    full = cli_rows(lake)
    assert full.keys() == truth.keys()
    same(full)
    same(cli_rows(lake, "--metric", "iops"))
    same(cli_rows(lake, "--profile", "random-writes"))
    same(cli_rows(lake, "--backend", "disk", "--backend", "tmpfs", "--metric", "clat_p99_ns"))
    # Asked on purpose, a smaller family changes the adjusted p-values (and says so).
    narrow = cli_rows(lake, "--metric", "iops", "--family", "table")
    assert any(narrow[k][0] != truth[k][0] for k in narrow if truth[k][0] is not None)

    assert landed.baseline == "disk"
    same({(r.group, r.profile, r.job_name, r.direction, r.metric): (r.p_adjusted, r.verdict)
          for r in landed.rows})  # fmt: skip
    for profile, sentence in lines.items():
        assert any(
            w in " ".join(sentence)
            for w in ("better", "worse", "equivalent", "inconclusive", "mixed")
        ), profile

    at = AppTest.from_file(str(APP / "views/1_Compare.py"), default_timeout=30)
    at.query_params.update({"campaign": CAMPAIGN, "metric": "iops", "baseline": "disk",
                            "profile": "random-writes"})  # fmt: skip
    at = at.run()
    assert not at.exception
    table = at.dataframe[0].value
    shown = [r for r in whole.rows if r.metric == "iops" and r.profile == "random-writes"]
    assert table["verdict"].tolist() == [label(r, whole.min_effect) for r in shown]
    assert table["p (adjusted)"].tolist() == [
        "" if r.p_adjusted is None else f"{r.p_adjusted:.2g}" for r in shown
    ]
    assert table["note"].tolist() == ["; ".join(r.notes) for r in shown]
    assert any(whole.family in c.value for c in at.caption)


def test_the_gate_gives_the_verdicts_of_compare_by_campaign(tmp_path: Path) -> None:
    """`fiolake gate` and `fiolake compare --by campaign_id` ask one question of a lake with
    one backend and two campaigns: the same rows, verdicts and adjusted p-values."""
    store = lakegen.local_store(tmp_path / "lake")
    jobs = {
        ("job1", "read"): {"iops": 1000.0, "clat_p99_ns": 200_000.0},
        ("job2", "write"): {"iops": 400.0, "clat_p99_ns": 900_000.0},
    }
    slower = {k: {m: v * (0.7 if m == "iops" else 1.3) for m, v in d.items()}
              for k, d in jobs.items()}  # fmt: skip
    lakegen.write_campaign(store, "before", {"disk": jobs}, 4, jitter=0.05)
    later = lakegen.T0 + timedelta(days=1)
    lakegen.write_campaign(store, "after", {"disk": slower}, 4, jitter=0.05, start=later)
    lake = str(tmp_path / "lake")
    gated = CliRunner().invoke(
        cli, ["gate", "--lake", lake, "--campaign", "after", "--format", "json"]
    )
    assert gated.exit_code == 1, gated.output  # slower on every row: the gate fails
    doc = json.loads(gated.stdout)
    assert doc["baseline"] == "before"  # the default: the newest earlier campaign
    compared = CliRunner().invoke(
        cli,
        ["compare", "--lake", lake, "--by", "campaign_id", "--baseline", "before",
         "--format", "json"],
    )  # fmt: skip
    assert compared.exit_code == 0, compared.output

    def key(r: dict[str, object]) -> tuple[object, ...]:
        return r["profile"], r["job_name"], r["direction"], r["metric"]

    truth = {key(r): (r["p_adjusted"], r["verdict"]) for r in json.loads(compared.stdout)
             if r["campaign_id"] == "after"}  # fmt: skip
    got = {key(r): (r["p_adjusted"], r["verdict"]) for r in doc["rows"]}
    assert got.keys() == truth.keys() and got
    assert {k: v for k, (_, v) in got.items()} == {k: v for k, (_, v) in truth.items()}
    assert {"worse"} <= {v for _, v in got.values()}
    assert {k: p for k, (p, _) in got.items()} == {
        k: None if p is None else pytest.approx(p, rel=1e-9) for k, (p, _) in truth.items()
    }
