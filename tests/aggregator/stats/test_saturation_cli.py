"""`fiolake saturation`, `gate --metric iops_at_slo` and `trend --metric iops_at_slo` on
synthetic lakes whose curves have known answers."""

from __future__ import annotations

import csv
import io
import json
import math
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from fiolake.aggregator.rows.sweeps import LOAD_KNOBS
from fiolake.cli import cli
from fiolake.cli.saturation import KNOBS
from tests.aggregator import lakegen

SWEEP = "[global]\nrw=randread\nbs=4k\niodepth=32\n" + "".join(
    f"[load-{n}]\nrate_iops={n}\n" for n in (1000, 4000, 16000)
)
# p99 per load (ns): disk crosses 1 ms midway (in logs) between 1,000 and 4,000 IOPS;
# tmpfs midway between 4,000 and 16,000.
DISK = (250e3, 4e6, 8e6)
TMPFS = (100e3, 250e3, 4e6)


def sweep_metrics(p99: tuple[float, ...], scale: float = 1.0) -> lakegen.Metrics:
    return {
        (f"load-{n}", "read"): {"iops": n * scale, "clat_p99_ns": lat}
        for n, lat in zip((1000, 4000, 16000), p99, strict=True)
    }


def write(store: object, campaign: str, backend: str, p99: tuple[float, ...], reps: int,
          start: int = 0, scale: float = 1.0, jitter: float = 0.02,
          **extra: object) -> None:  # fmt: skip
    for rep in range(reps):
        factor = 1 + jitter * ((rep % 5) - 2) / 2
        lakegen.write_run(
            store,  # type: ignore[arg-type]
            run_id=f"{campaign}-{backend}-r{rep}",
            job_id=f"{campaign}-{backend}-j{rep}",
            campaign=campaign,
            backend=backend,
            profile="latency-at-load",
            metrics=sweep_metrics(tuple(v * factor for v in p99), scale),
            started_at=lakegen.T0 + timedelta(hours=start + rep),
            canonical_job_file=SWEEP,
            **extra,
        )


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    store = lakegen.local_store(tmp_path / "lake")
    write(store, "c1", "disk", DISK, 5)
    write(store, "c1", "tmpfs", TMPFS, 5, start=10)
    return tmp_path / "lake"


def run(*args: str) -> object:
    return CliRunner().invoke(cli, list(args))


def test_json_carries_every_number_and_the_exact_figures(lake: Path) -> None:
    res = run("saturation", "--lake", str(lake), "--format", "json", "--slo", "p99<=1ms")
    assert res.exit_code == 0, res.output
    disk, tmpfs = json.loads(res.stdout)
    assert disk["iops_at_slo"] == pytest.approx(2000.0, rel=0.02)  # √(1000·4000), ±jitter
    assert tmpfs["iops_at_slo"] == pytest.approx(8000.0, rel=0.02)
    assert (disk["status"], disk["baseline"], disk["verdict"]) == ("within", "disk", None)
    assert tmpfs["verdict"] == "better" and tmpfs["ratio"] == pytest.approx(4.0, rel=0.02)
    assert tmpfs["ratio_ci_low"] > 1 and tmpfs["p_adjusted"] < 0.05
    assert tmpfs["family"] == "IOPS at p99<=1ms: all runs vs disk, 1 tests, Holm"
    assert [p["load"] for p in tmpfs["curve"]] == [1000.0, 4000.0, 16000.0]
    assert len(tmpfs["per_run"]) == 5 and tmpfs["ci_low"] <= 8000 <= tmpfs["ci_high"]
    exact = run("saturation", "--lake", str(lake), "--format", "json", "--slo", "p99<=250us")
    at_250 = {r["backend"]: r for r in json.loads(exact.stdout)}
    assert at_250["disk"]["status"] == "within" or at_250["disk"]["status"] == "< first tested"
    assert at_250["tmpfs"]["iops_at_slo"] == pytest.approx(4000.0, rel=0.03)


def test_beyond_the_loads_tested(lake: Path) -> None:
    res = run("saturation", "--lake", str(lake), "--format", "csv", "--slo", "p99<=50us")
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert [(r["backend"], r["status"], r["iops_at_slo"]) for r in rows] == [
        ("disk", "< first tested", "1000.0"), ("tmpfs", "< first tested", "1000.0")
    ]  # fmt: skip
    res = run("saturation", "--lake", str(lake), "--format", "json", "--slo", "p99<=1s")
    assert {r["status"] for r in json.loads(res.stdout)} == {"≥ last tested"}
    assert {r["verdict"] for r in json.loads(res.stdout)} == {None, "inconclusive"}


def test_two_bounds_are_not_compared_and_say_which_load_to_try(lake: Path) -> None:
    """Issue 40: both backends met the SLO at every load tested (or at none): the row has
    no ratio and no interval — it says they cannot be compared and what load to try."""
    above = ("cannot be compared at the loads tested: both met the SLO up to rate_iops "
             "16.0k, the last tested — try rate_iops 32.0k")  # fmt: skip
    res = run("saturation", "--lake", str(lake), "--slo", "p99<=1s")
    assert res.exit_code == 0, res.output
    tmpfs = next(line for line in res.stdout.splitlines() if line.startswith("tmpfs"))
    assert "×" not in tmpfs and "[" not in tmpfs.split("(last tested)")[-1]
    assert tmpfs.rstrip().endswith(f"inconclusive: {above}")
    assert res.stderr.startswith(
        "read, latency-at-load (rate_iops sweep) at p99 ≤ 1s: disk ≥ 16.0k IOPS (last "
        f"tested); tmpfs ≥ 16.0k IOPS (last tested) — tmpfs vs disk: {above}\n"
    )
    res = run("saturation", "--lake", str(lake), "--slo", "p99<=1s", "--format", "json")
    tmpfs_json = json.loads(res.stdout)[1]
    assert [tmpfs_json[k] for k in ("ratio", "ratio_ci_low", "ratio_ci_high", "p_adjusted")] == [
        None, None, None, None
    ]  # fmt: skip
    assert (tmpfs_json["verdict"], tmpfs_json["notes"]) == ("inconclusive", above)
    res = run("saturation", "--lake", str(lake), "--slo", "p99<=50us")
    assert res.stdout.rstrip().endswith(
        "inconclusive: cannot be compared at the loads tested: both missed the SLO from "
        "rate_iops 1.0k, the first tested — try rate_iops 500"
    )


def test_table_and_the_answer_sentence(lake: Path) -> None:
    res = run("saturation", "--lake", str(lake))
    assert res.exit_code == 0, res.output
    assert "IOPS at p99<=1ms [95% CI]" in res.stdout and "▲ better" in res.stdout
    assert "read, latency-at-load (rate_iops sweep) at p99 ≤ 1ms: disk 2.0k IOPS [" in res.stderr


def test_the_knob_choice_is_the_sweeps_own() -> None:
    assert set(KNOBS) == set(LOAD_KNOBS)


def test_gate_fails_on_a_capacity_drop_and_trend_follows_it(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path / "lake")
    write(store, "before", "box", TMPFS, 4)
    write(store, "after", "box", DISK, 4, start=10)  # 8,000 → 2,000 IOPS at 1 ms
    lake = str(tmp_path / "lake")
    res = run("gate", "--lake", lake, "--campaign", "after", "--metric", "iops_at_slo",
              "--slo", "p99<=1ms", "--format", "json")  # fmt: skip
    assert res.exit_code == 1, res.output
    (row,) = json.loads(res.stdout)["rows"]
    assert (row["metric"], row["verdict"], row["job_name"]) == (
        "iops_at_slo",
        "worse",
        "rate_iops sweep",
    )
    assert row["ratio"] == pytest.approx(0.25, rel=0.03)
    same = run("gate", "--lake", lake, "--campaign", "after", "--metric", "iops_at_slo",
               "--slo", "p99<=20ms")  # fmt: skip
    assert same.exit_code == 0, same.output  # met everywhere on both sides: no drop shown
    assert (
        "inconclusive: cannot be compared at the loads tested: both met the SLO up to "
        "rate_iops 16.0k, the last tested — try rate_iops 32.0k" in same.stdout
    )
    res = run("trend", "--lake", lake, "--metric", "iops_at_slo", "--format", "json")
    values = [p["iops_at_slo"] for p in json.loads(res.stdout)]
    assert res.exit_code == 0, res.output
    assert [round(v) for v in values[:4]] == [pytest.approx(8000, rel=0.03)] * 4
    assert all(math.isclose(v, 2000, rel_tol=0.03) for v in values[4:])


def test_the_report_shows_the_section_offline(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path / "lake")
    write(store, "before", "box", TMPFS, 4)
    write(store, "after", "box", DISK, 4, start=10)
    out = tmp_path / "report.html"
    res = run("report", "--lake", str(tmp_path / "lake"), "--campaign", "after",
              "--metric", "iops_at_slo", "--slo", "p99<=1ms", "-o", str(out))  # fmt: skip
    assert res.exit_code == 0, res.output
    page = out.read_text()
    assert "<h2>Saturation: IOPS at a latency SLO</h2>" in page
    assert "read, latency-at-load (rate_iops sweep) at p99 ≤ 1ms: box 2.0k IOPS [" in page
    assert page.count('class="chart saturation"') == 1 and "SLO p99 ≤ 1ms" in page
    assert "<script" not in page and "http" not in page.replace("http://www.w3.org/2000/svg", "")


def test_by_keeps_the_sweeps_of_one_knob(lake: Path) -> None:
    res = run("saturation", "--lake", str(lake), "--by", "rate_iops", "--format", "json")
    assert res.exit_code == 0 and {r["knob"] for r in json.loads(res.stdout)} == {"rate_iops"}
    res = run("saturation", "--lake", str(lake), "--by", "iodepth")
    assert res.exit_code == 1
    assert res.output == (
        "Error: no load sweep in the successful runs selected (no filter) that steps iodepth — "
        "run a sweep profile (latency-at-load, iodepth-sweep) first\n"
    )


@pytest.fixture
def busy_lake(tmp_path: Path) -> str:
    """`before` alone; `after` 20 % fewer IOPS at every load on a host 45 % busy (issue 41)."""
    store = lakegen.local_store(tmp_path / "lake")
    write(store, "before", "box", TMPFS, 4, outside_cpu_pct=2.0, flags=[])
    write(store, "after", "box", TMPFS, 4, start=10, scale=0.8, outside_cpu_pct=45.2,
          flags=["cpu-busy"])  # fmt: skip
    return str(tmp_path / "lake")


def gate_json(lake: str, *args: str) -> tuple[int, dict, str]:
    res = run("gate", "--lake", lake, "--campaign", "after", "--metric", "iops_at_slo",
              "--format", "json", *args)  # fmt: skip
    return res.exit_code, json.loads(res.stdout) if res.stdout else {}, res.output


def test_iops_at_slo_on_a_busy_host_is_inconclusive_host_busy(busy_lake: str) -> None:
    """Issue 41: iops_at_slo rows go through host-noise judging and carry the min effect
    that decided them."""
    code, out, text = gate_json(busy_lake, "--min-effect", "0.1")
    assert code == 0, text
    (row,) = out["rows"]
    assert (row["metric"], row["verdict"], row["reason"]) == (
        "iops_at_slo", "inconclusive", "host busy (outside CPU 45 %)"
    )  # fmt: skip
    assert row["ratio"] == pytest.approx(0.8, rel=0.03)
    assert row["min_effect"] == 0.1
    res = run("gate", "--lake", busy_lake, "--campaign", "after", "--metric", "iops_at_slo")
    assert "inconclusive: host busy (outside CPU 45 %)" in res.stdout


def test_a_threshold_on_iops_at_slo_decides_its_rows(busy_lake: str, tmp_path: Path) -> None:
    config = tmp_path / "fiolake-gate.toml"
    config.write_text('[[threshold]]\nmetric = "iops_at_slo"\nmin_effect = 0.3\n')
    code, out, text = gate_json(busy_lake, "--config", str(config))
    assert code == 0, text
    (row,) = out["rows"]
    assert row["min_effect"] == 0.3 and row["verdict"] != "worse"


def test_a_threshold_with_a_misspelt_backend_is_refused(busy_lake: str, tmp_path: Path) -> None:
    config = tmp_path / "fiolake-gate.toml"
    config.write_text('[[threshold]]\nbackend = "bx"\nmetric = "iops_at_slo"\nmin_effect = 0.3\n')
    res = run("gate", "--lake", busy_lake, "--campaign", "after", "--metric", "iops_at_slo",
              "--config", str(config))  # fmt: skip
    assert res.exit_code == 2
    assert res.output.splitlines(keepends=True)[-1] == (
        f"Error: {config}: [[threshold]] 1 (bx/*/*/iops_at_slo ±30%): backend 'bx' is in "
        "no row of this gate — use one of box, or remove the threshold\n"
    )


def test_iops_at_slo_is_judged_by_the_night_model(tmp_path: Path) -> None:
    """Issue 41: with earlier nights, iops_at_slo's verdict is the night model's. Nights
    whose capacity differs by ±30 % cannot show a 20 % drop, which the runs alone call
    worse (the night is the unit, docs/ci.md)."""
    store = lakegen.local_store(tmp_path / "lake")
    for day, scale in enumerate((1.0, 1.3, 0.75, 1.2)):
        write(store, f"n{day}", "box", TMPFS, 4, start=24 * day, scale=scale)
    write(store, "after", "box", TMPFS, 4, start=24 * 4, scale=0.96)  # 0.8 × the last night
    lake = str(tmp_path / "lake")
    code, out, text = gate_json(lake)  # the default baseline: n3, and the nights before it
    (row,) = out["rows"]
    assert row["ratio"] == pytest.approx(0.8, rel=0.03)  # the runs: against n3 alone
    assert (code, row["verdict"]) == (0, "inconclusive"), text
    assert (
        row["reason"].startswith("night-to-night: 0.9") and "vs 4 earlier nights" in row["reason"]
    )
