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


# The question before it read one run a workload: every result row (kept as the oracle).
EVERY_RUN_SWEEPS = """
    SELECT r.profile FROM results x JOIN runs r USING (run_id) WHERE r.status = 'ok'
    GROUP BY r.profile
    HAVING count(DISTINCT x.job_name) > 1
       AND (count(DISTINCT x.iodepth) > 1 OR count(DISTINCT x.bs) > 1)
    ORDER BY 1
"""


def test_sweep_profiles_read_one_run_a_workload_and_every_run_without_one(
    tmp_path: Path,
) -> None:
    store = local_store(tmp_path / "lake")
    depths = {("qd1", "read"): {"iodepth": 1}, ("qd32", "read"): {"iodepth": 32}}
    flat = {("a", "read"): {"iodepth": 4}, ("b", "read"): {"iodepth": 4}}
    for i in range(3):
        write_run(store, run_id=f"d{i}", job_id=f"jd{i}", profile="qd-sweep", metrics=depths)
        write_run(store, run_id=f"f{i}", job_id=f"jf{i}", profile="flat", metrics=flat)
        # imported one fio job at a time, without job text: a sweep only all together
        no_text = {"canonical_job_file": None, "workload_sha256": None}
        write_run(store, run_id=f"i{i}", job_id=f"ji{i}", profile="imported",
                  metrics={(f"qd{2**i}", "read"): {"iodepth": 2**i}},
                  effective_job_sha256=None, **no_text)  # fmt: skip
    with connect(str(tmp_path / "lake")) as lake:
        assert latency.sweep_profiles(lake) == ["imported", "qd-sweep"]
        assert [p for (p,) in lake.con.execute(EVERY_RUN_SWEEPS).fetchall()] == [
            "imported",
            "qd-sweep",
        ]
