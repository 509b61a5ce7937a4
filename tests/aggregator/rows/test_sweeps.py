"""Load sweeps recognised from what differs between a job file's sections."""

from __future__ import annotations

from pathlib import Path

import pytest

from fiolake.aggregator.lake.lake import connect
from fiolake.aggregator.rows import latency
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.rows.sweeps import knob_value, load_points, load_sweep_profiles, sweep_of
from tests.aggregator.lakegen import local_store, write_run

RATE_SWEEP = """[global]
rw=randrw
bs=4k
iodepth=32
[load-1k]
rate_iops=1000
[load-4k]
rate_iops=4000,2000
"""


def test_the_knob_is_what_differs_in_every_section() -> None:
    sweep = sweep_of(RATE_SWEEP)
    assert sweep is not None
    assert (sweep.knob, sweep.values) == ("rate_iops", {"load-1k": "1000", "load-4k": "4000,2000"})
    depth = sweep_of("[global]\nrw=read\n[a]\n[b]\niodepth=8\n")  # unset: fio's default 1
    assert depth is not None and depth.values == {"a": "1", "b": "8"}
    assert sweep_of("[a]\nbs=4k\n[b]\nbs=4k\niodepth=4\n[c]\nbs=64k\niodepth=4\n") is None
    assert sweep_of("[only]\niodepth=4\n") is None
    assert sweep_of(None) is None


@pytest.mark.parametrize(
    ("knob", "text", "direction", "value"),
    [
        ("rate_iops", "4000,2000", "read", 4000.0),
        ("rate_iops", "4000,2000", "write", 2000.0),
        ("rate_iops", "4000", "write", 4000.0),
        ("bs", "4k,64k", "write", 65536.0),
        ("iodepth", "16", "read", 16.0),
        ("rate_iops", "0", "read", None),
    ],
)
def test_knob_value_per_direction(knob: str, text: str, direction: str, value: float) -> None:
    assert knob_value(knob, text, direction) == value


def test_points_carry_the_knob_and_value_per_job(tmp_path: Path) -> None:
    store = local_store(tmp_path / "lake")
    metrics = {
        ("load-1k", "read"): {"iops": 990.0, "clat_p99_ns": 50_000},
        ("load-4k", "write"): {"iops": 1900.0, "clat_p99_ns": 900_000},
    }
    write_run(store, run_id="r1", job_id="j1", backend="tmpfs", profile="lat",
              metrics=metrics, canonical_job_file=RATE_SWEEP)  # fmt: skip
    write_run(store, run_id="r2", job_id="j2", backend="tmpfs", profile="plain")
    with connect(str(tmp_path / "lake")) as lake:
        assert load_sweep_profiles(lake) == ["lat"]
        assert "lat" in latency.sweep_profiles(lake)
        points = load_points(lake, RunFilter())
    assert [(p.job_name, p.direction, p.knob, p.load, p.iops, p.clat_p99_ns) for p in points] == [
        ("load-1k", "read", "rate_iops", 1000.0, 990.0, 50_000),
        ("load-4k", "write", "rate_iops", 2000.0, 1900.0, 900_000),
    ]


def test_the_latency_pages_sweep_follows_the_job_files_order(tmp_path: Path) -> None:
    store = local_store(tmp_path / "lake")
    text = "[global]\niodepth=32\n[load-250]\nrate_iops=250\n[load-1000]\nrate_iops=1000\n"
    metrics = {  # by name load-1000 sorts first; in the job file it is second
        ("load-250", "read"): {"iops": 250.0, "job_index": 0, "iodepth": 32},
        ("load-1000", "read"): {"iops": 1000.0, "job_index": 1, "iodepth": 32},
    }
    write_run(store, run_id="r1", job_id="j1", profile="lat", metrics=metrics,
              canonical_job_file=text)  # fmt: skip
    with connect(str(tmp_path / "lake")) as lake:
        points = latency.sweep(lake, RunFilter(profile="lat"))
    assert [p.job_name for p in points] == ["load-250", "load-1000"]
