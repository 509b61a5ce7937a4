"""`fiolake-gate.toml` (issue 34): per-row minimum effects, the metrics to gate and the
policies, read from the working directory or `--config`, shown in the footer and JSON.

Campaigns `quiet` (1000 IOPS) and `slow` (800 IOPS, 20 % fewer), 3 repetitions each.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from fiolake.cli import cli
from tests.aggregator import lakegen
from tests.aggregator.stats.test_gate_host_noise import night

WIDE = """[gate]
metrics = ["iops"]
inconclusive = "fail"

[[threshold]]
backend = "nvme"
metric = "iops"
min_effect = 0.3
"""


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gate-config") / "lake"
    store = lakegen.local_store(root)
    night(store, "quiet", 0, 1000, flags=[])
    night(store, "slow", 1, 800, flags=[])
    return root


def gate(lake: Path, *args: str) -> Result:
    return CliRunner().invoke(
        cli, ["gate", "--lake", str(lake), "--campaign", "slow", "--format", "json", *args]
    )


def test_without_a_file_a_20_percent_drop_is_worse(
    lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    res = gate(lake, "--metric", "iops")
    assert res.exit_code == 1, res.output
    doc = json.loads(res.stdout)
    assert doc["config"] is None
    assert [r["verdict"] for r in doc["rows"]] == ["worse"]


def test_the_working_directorys_file_sets_the_rows_threshold(
    lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "fiolake-gate.toml").write_text(WIDE)
    monkeypatch.chdir(tmp_path)
    res = gate(lake)  # metrics from the file: iops only
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert [(r["metric"], r["verdict"], r["min_effect"]) for r in doc["rows"]] == [
        ("iops", "equivalent", 0.3)
    ]
    assert doc["config"] == {
        "path": str(tmp_path / "fiolake-gate.toml"),
        "metrics": ["iops"],
        "min_effect": None,
        "inconclusive": "fail",
        "host_noise": None,
        "thresholds": ["nvme/*/*/iops ±30%"],
    }
    assert (
        f"config: {tmp_path / 'fiolake-gate.toml'}: metrics iops, --inconclusive fail, "
        "thresholds nvme/*/*/iops ±30%\n"
    ) in res.stderr


def test_config_option_and_command_line_win(lake: Path, tmp_path: Path) -> None:
    path = tmp_path / "ci.toml"
    path.write_text(WIDE.replace('metric = "iops"', 'metric = "clat_p99_ns"'))
    res = gate(lake, "--config", str(path), "--metric", "iops", "--metric", "clat_p99_ns")
    rows = json.loads(res.stdout)["rows"]
    verdicts = {r["metric"]: (r["verdict"], r["min_effect"]) for r in rows}
    # iops at the default ±5 % is worse; p99 (1.25×) is within the file's ±30 %
    assert verdicts == {"iops": ("worse", 0.05), "clat_p99_ns": ("equivalent", 0.3)}
    assert res.exit_code == 1
