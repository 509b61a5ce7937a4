"""`fiolake gate accept` (issue 34): an intended change, recorded in the lake, becomes the
gate's default baseline and stops being a regression.

Nights n0–n8 of one job on one backend, 3 repetitions each, a day apart: 1000 IOPS up to
n3, 700 IOPS from n4 on (new firmware, on purpose). Before the acceptance `regressions`
reports the drop at n4 and the gate's default baseline for n8 is n7; after `gate accept
--campaign n4` the default baseline is n4, `regressions` leaves the change out (and lists
it marked with --accepted), and `trend` carries who accepted it, when and why.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from fiolake import layout
from fiolake.aggregator.lake.lake import open_lake
from fiolake.aggregator.stats.trend import trend
from fiolake.cli import cli
from tests.aggregator import lakegen

READ = ("job1", "read")
WOBBLE = (1.0, 1.01, 0.99, 1.005, 0.995, 1.0, 1.01, 0.99, 1.0)


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    root = tmp_path / "lake"
    store = lakegen.local_store(root)
    for night in range(9):
        level = 1000.0 if night < 4 else 700.0
        for rep in range(3):
            lakegen.write_run(
                store,
                run_id=f"n{night}-r{rep}",
                job_id=f"n{night}-j{rep}",
                campaign=f"n{night}",
                metrics={READ: {"iops": level * WOBBLE[night] * (1 + 0.01 * (rep - 1))}},
                started_at=lakegen.T0 + timedelta(days=night, minutes=rep),
                repetition=rep,
            )
    return root


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def baseline_of_n8(lake: Path) -> str:
    res = run("gate", "--lake", str(lake), "--campaign", "n8", "--format", "json")
    assert res.exit_code in (0, 1), res.output
    return str(json.loads(res.stdout)["baseline"])


def regressions(lake: Path, *args: str) -> Result:
    res = run("regressions", "--lake", str(lake), "--since", "all", "--metric", "iops",
              "--format", "json", *args)  # fmt: skip
    assert res.exit_code == 0, res.output
    return res


def test_accept_makes_the_campaign_the_baseline_and_no_regression(lake: Path) -> None:
    assert baseline_of_n8(lake) == "n7"
    (before,) = json.loads(regressions(lake).stdout)
    assert (before["run_after"], before["verdict"], before["accepted"]) == ("n4-r0", "worse", None)

    why = "firmware 2.1: write cache off on purpose"
    res = run("gate", "accept", "--lake", str(lake), "--campaign", "n4", "--reason", why,
              "--by", "ana@ci-1")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert re.fullmatch(
        r"campaign n4 accepted by ana@ci-1 at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: "
        r"firmware 2\.1: write cache off on purpose\n",
        res.stderr,
    ), res.stderr
    record = json.loads((lake / layout.accepted_key("n4")).read_text())
    assert (record["campaign"], record["by"]) == ("n4", "ana@ci-1")

    assert baseline_of_n8(lake) == "n4"
    hidden = regressions(lake)
    assert json.loads(hidden.stdout) == []
    assert "; 1 at accepted campaigns not listed (--accepted)" in hidden.stderr
    (shown,) = json.loads(regressions(lake, "--accepted").stdout)
    assert shown["accepted"].startswith("accepted by ana@ci-1 at ")

    with open_lake(str(lake)) as handle:
        points = trend(handle, "iops")
    marked = [p for p in points if p.change_point]
    assert [(p.run_id, p.accepted.endswith("write cache off on purpose")) for p in marked] == [
        ("n4-r0", True)
    ]


def test_a_campaign_is_accepted_once(lake: Path) -> None:
    args = ("gate", "accept", "--lake", str(lake), "--campaign", "n4", "--by", "ana@ci-1")
    assert run(*args, "--reason", "firmware 2.1").exit_code == 0
    res = run(*args, "--reason", "again")
    assert res.exit_code == 2
    assert re.search(
        r"Error: campaign 'n4' is already accepted: accepted by ana@ci-1 at \S+: firmware 2\.1 "
        r"— nothing to do\n$",
        res.output,
    ), res.output
