"""`fiolake gate` baselines on a synthetic lake: the newest earlier campaign whose runs
carry a label (or an environment value), every comparable run of a window before the new
campaign, the exclusions between them, exit 2 saying what is missing, and the app link.

Campaigns of one backend, 3 repetitions each, a day apart: `k61` (kernel 6.1, fw=1.0,
1000 IOPS), `k66a` and `k66b` (kernel 6.6, fw=2.0, 1000 IOPS), then `new` (kernel 6.6,
fw=2.0, 700 IOPS: worse than every baseline). A campaign of another job (`other`) never
counts as comparable.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from click.testing import CliRunner, Result

from fiolake.cli import cli
from tests.aggregator import lakegen

READ = ("job1", "read")
DAY = timedelta(days=1)


def campaign(store: object, name: str, day: int, iops: float, kernel: str, fw: str,
             job: str = "rw=randread") -> None:  # fmt: skip
    for rep in range(3):
        lakegen.write_run(
            store,  # type: ignore[arg-type]
            run_id=f"{name}-r{rep}",
            job_id=f"{name}-j{rep}",
            campaign=name,
            backend="nvme",
            metrics={READ: {"iops": iops * (1 + 0.01 * (rep - 1))}},
            started_at=lakegen.T0 + day * DAY + timedelta(minutes=rep),
            repetition=rep,
            kernel=kernel,
            labels=[("fw", fw)],
            canonical_job_file=f"[global]\ndirectory=/mnt/nvme\n[random-reads]\n{job}\n",
        )


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gate-baselines") / "lake"
    store = lakegen.local_store(root)
    campaign(store, "k61", 0, 1000, "6.1.0-18-amd64", "1.0")
    campaign(store, "k66a", 1, 1000, "6.6.0-1-amd64", "2.0")
    campaign(store, "other", 1, 1000, "5.10.0-9-amd64", "0.9", job="rw=randwrite")
    campaign(store, "k66b", 2, 1000, "6.6.0-1-amd64", "2.0")
    campaign(store, "new", 3, 700, "6.6.0-1-amd64", "2.0")
    return root


def gate(lake: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["gate", "--lake", str(lake), "--campaign", "new", *args])


def as_json(res: Result) -> dict:
    return json.loads(res.stdout)


@pytest.mark.parametrize(
    ("label", "baseline"),
    [
        ("kernel=6.1", "k61"),  # an environment column, matched at a version boundary
        ("kernel=6.1.0-18-amd64", "k61"),
        ("kernel=6.6", "k66b"),  # the newest earlier one
        ("kernel=6", "k66b"),  # any 6.x: the newest
        ("fw=1.0", "k61"),  # a runner label
        ("fw=2.0", "k66b"),
    ],
)
def test_baseline_label_picks_the_newest_earlier_campaign_carrying_it(
    lake: Path, label: str, baseline: str
) -> None:
    res = gate(lake, "--baseline-label", label, "--format", "json")
    assert res.exit_code == 1, res.output  # 700 against 1000 IOPS: worse
    doc = as_json(res)
    assert (doc["baseline"], doc["baseline_kind"]) == (baseline, "campaign")
    iops = next(r for r in doc["rows"] if r["metric"] == "iops")
    assert iops["verdict"] == "worse" and iops["n_baseline"] == 3
    assert iops["ratio"] == pytest.approx(0.7, rel=0.01)


def test_baseline_label_that_no_comparable_campaign_carries_is_exit_2(lake: Path) -> None:
    # `other` carries kernel 5.10 but ran another job: not comparable, so not chosen.
    for label in ("kernel=5.10", "kernel=6.2", "kernel=6.1.0-1", "fw=0.9", "rack=r9"):
        res = gate(lake, "--baseline-label", label)
        assert res.exit_code == 2, (label, res.output)
        assert res.stderr.splitlines()[-1] == (
            f"Error: no earlier campaign whose runs carry {label} ran the jobs of campaign "
            "'new' on its backends — check the label (`fiolake sql 'SELECT DISTINCT labels "
            "FROM runs'` lists them) or give --baseline-campaign"
        )


def test_baseline_runs_pools_every_comparable_run_of_the_window(lake: Path) -> None:
    res = gate(lake, "--baseline-runs", "since:2d", "--format", "json")
    assert res.exit_code == 1, res.output
    doc = as_json(res)
    assert (doc["baseline"], doc["baseline_kind"]) == ("since:2d", "window")
    iops = next(r for r in doc["rows"] if r["metric"] == "iops")
    # k66a and k66b (not `other`: another job; not `new` itself): 6 runs against 3
    assert (iops["n"], iops["n_baseline"], iops["verdict"]) == (3, 6, "worse")
    assert iops["ratio"] == pytest.approx(0.7, rel=0.01)
    assert "family: backend nvme, 9 runs vs since:2d" in res.stderr

    narrow = as_json(gate(lake, "--baseline-runs", "since:30h", "--format", "json"))
    assert {r["n_baseline"] for r in narrow["rows"]} == {3}  # k66b only
    everything = as_json(gate(lake, "--baseline-runs", "since:2025-01-01", "--format", "json"))
    assert {r["n_baseline"] for r in everything["rows"]} == {9}  # k61, k66a, k66b


def test_baseline_runs_with_nothing_in_the_window_is_exit_2(lake: Path) -> None:
    res = gate(lake, "--baseline-runs", "since:1h")
    assert res.exit_code == 2, res.output
    assert res.stderr.splitlines()[-1] == (
        "Error: no comparable runs since:1h before campaign 'new' (from 2025-03-04T11:00Z "
        "to 2025-03-04T12:00Z): no successful run of its workloads on its backends in "
        "that window — widen the window (e.g. since:30d) or give --baseline-campaign"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--baseline-campaign", "k61", "--baseline-runs", "since:2d"],
            "Error: --baseline-campaign, --baseline-label and --baseline-runs each choose the "
            "baseline — give one of them",
        ),
        (
            ["--baseline-campaign", "k61", "--baseline-label", "fw=1.0"],
            "Error: --baseline-campaign, --baseline-label and --baseline-runs each choose the "
            "baseline — give one of them",
        ),
        (
            ["--baseline-runs", "7d"],
            "Error: Invalid value for --baseline-runs: '7d' is not a window — use "
            "since:DURATION or since:DATE, e.g. since:7d or since:2026-11-01",
        ),
        (
            ["--baseline-runs", "since:soon"],
            "Error: invalid time 'soon' — use a duration (7d, 12h) or an ISO date (2025-03-01)",
        ),
        (
            ["--baseline-label", "kernel"],
            "Error: Invalid value for --baseline-label: 'kernel' is not KEY=VALUE",
        ),
    ],
)
def test_bad_baseline_choices_are_exit_2(lake: Path, args: list[str], message: str) -> None:
    res = gate(lake, *args)
    assert res.exit_code == 2, res.output
    assert res.stderr.splitlines()[-1] == message
    assert "Traceback" not in res.output


def test_app_url_links_each_verdict_to_the_gate_page_of_this_comparison(lake: Path) -> None:
    res = gate(lake, "--baseline-campaign", "k61", "--format", "md",
               "--app-url", "https://fiolake.example/app/")  # fmt: skip
    rows = [line for line in res.stdout.splitlines() if line.startswith("| nvme |")]
    assert rows and all(
        line.endswith("(https://fiolake.example/app/Gate?campaign=new&baseline=k61) |")
        for line in rows
    ), res.stdout
    assert "[▼ worse](https://fiolake.example/app/Gate?campaign=new&baseline=k61)" in rows[0]
    url = urlsplit(rows[0].rsplit("(", 1)[1].rstrip(") |"))
    assert url.path == "/app/Gate"
    assert parse_qs(url.query) == {"campaign": ["new"], "baseline": ["k61"]}
    # A window of runs is no campaign the Gate page can select: no link, rather than a wrong one.
    res = gate(lake, "--baseline-runs", "since:2d", "--format", "md", "--app-url", "https://x")
    assert "](https://x" not in res.stdout and "| ▼ worse |" in res.stdout


def test_runs_without_workload_hashes_find_their_baseline_by_profile(tmp_path: Path) -> None:
    # Imported history and lakes written before hashing: no workload_sha256. Their
    # comparisons pool by profile, and so does the choice of a baseline.
    store = lakegen.local_store(tmp_path / "lake")
    bare = {"workload_sha256": None, "canonical_job_file": None}
    nights = (("n0", "random-reads", 990.0), ("n1", "random-reads", 1000.0),
              ("n2", "seq-reads", 1000.0), ("n3", "random-reads", 700.0))  # fmt: skip
    for day, (name, profile, iops) in enumerate(nights):
        lakegen.write_campaign(store, name, {"nvme": {READ: {"iops": iops}}}, 3, jitter=0.01,
                               profile=profile, start=lakegen.T0 + day * DAY, **bare)  # fmt: skip
    lake = str(tmp_path / "lake")
    for args in ([], ["--baseline-runs", "since:7d"]):
        res = CliRunner().invoke(
            cli, ["gate", "--lake", lake, "--campaign", "n3", "--format", "json", *args]
        )
        assert res.exit_code == 1, res.output  # 0.7× of n1: worse
        doc = json.loads(res.stdout)
        # n2 is newer but ran another profile: not comparable
        assert doc["baseline"] == ("n1" if not args else "since:7d")
        assert {r["metric"] for r in doc["rows"] if r["verdict"] == "worse"} >= {"iops"}
    # the night model finds the earlier nights of the profile too (n0, n1; not n2)
    res = CliRunner().invoke(cli, ["gate", "--lake", lake, "--campaign", "n3"])
    assert "against up to 2 earlier nights" in res.output, res.output
