"""runner.report.logs against one real fio 3.33 run with per-second logs (≈3 s) and
hand-written logs for other fio versions' column layouts (docs/fio-output.md §2)."""

from __future__ import annotations

import json
import subprocess
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

from fiolake.runner.report.logs import log_files, thread_owners, timeseries_rows
from fiolake.runner.report.results import FioReport, parse_fio_json
from fiolake.schema import to_table

# Threads (log N): rr → 1, 2; think → 3; grp → 4, 5 (one jobs[] entry); gtod → 6.
JOB = """
[global]
directory={data}
size=4M
bs=4k
runtime=2
time_based=1
ioengine=psync
rate_iops=1000
write_bw_log=fio
write_iops_log=fio
write_lat_log=fio
log_avg_msec=1000
per_job_logs=1

[rr]
rw=randrw
numjobs=2

; one read at t=0, then 2.5 s of thinking: second 2 has no I/O at all
[think]
rw=read
runtime=1
rate_iops=0
thinktime=2500000

[grp]
new_group
rw=write
numjobs=2
group_reporting=1

[gtod]
new_group
rw=randread
gtod_reduce=1
"""

KEY = ("thread", "direction", "second")


@dataclass
class Run:
    log_dir: Path
    report: FioReport
    rows: list[dict]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    base = tmp_path_factory.mktemp("fio_logs")
    (base / "data").mkdir()
    (base / "job.fio").write_text(JOB.format(data=base / "data"))
    subprocess.run(
        ["fio", "--output-format=json+", "--output=out.json", "job.fio"],
        cwd=base,
        check=True,
        capture_output=True,
        timeout=60,
    )
    report = parse_fio_json((base / "out.json").read_text())
    return Run(base, report, timeseries_rows(base, run_id="r1", report=report))


def by_series(rows: list[dict]) -> dict[tuple[int, str], list[dict]]:
    series: dict[tuple[int, str], list[dict]] = defaultdict(list)
    for row in rows:
        series[(row["thread"], row["direction"])].append(row)
    return series


def raw_log(path: Path) -> list[tuple[int, int, int]]:
    return [
        (int(t), int(v), int(d))
        for t, v, d, *_ in (line.split(",") for line in path.read_text().splitlines())
    ]


def test_log_files_lists_every_log(run: Run):
    files = log_files(run.log_dir)
    assert files == sorted(run.log_dir.glob("fio_*.log"))
    names = {p.name for p in files}
    assert {"fio_bw.1.log", "fio_iops.6.log", "fio_clat.5.log", "fio_slat.1.log"} <= names
    assert "fio_lat.6.log" not in names  # gtod_reduce=1: fio writes no latency logs
    assert log_files(run.log_dir / "nowhere") == []


def test_one_row_per_thread_direction_second(run: Run):
    to_table("timeseries", run.rows)
    keys = Counter(tuple(r[k] for k in KEY) for r in run.rows)
    assert max(keys.values()) == 1
    series = by_series(run.rows)
    assert sorted(series) == [(1, "read"), (1, "write"), (2, "read"), (2, "write"),
                              (3, "read"), (4, "write"), (5, "write"), (6, "read")]  # fmt: skip
    for (thread, direction), rows in series.items():
        seconds = [r["second"] for r in rows]
        assert seconds == list(range(1, len(seconds) + 1)), (thread, direction)
        # only a window shorter than log_avg_msec is partial: the job's last, if at all
        assert not any(r["partial"] for r in rows[:-1])
        assert rows[-1]["partial"] == (rows[-1]["window_ms"] < 990)
        assert len(rows) >= 2


def test_threads_map_to_jobs(run: Run):
    owners = {r["thread"]: (r["job_name"], r["job_index"]) for r in run.rows}
    assert owners == {
        1: ("rr", 0),
        2: ("rr", 1),
        3: ("think", 2),
        4: ("grp", 3),  # group_reporting: both threads belong to the group's entry
        5: ("grp", 3),
        6: ("gtod", 4),
    }
    assert thread_owners(run.report) == {t: idx for t, (_, idx) in owners.items()}


def test_values_are_fios_in_raw_units(run: Run):
    rows = {tuple(r[k] for k in KEY): r for r in run.rows}
    checked = Counter()
    for log_type, column, scale in (
        ("bw", "bw_bytes", 1024),
        ("iops", "iops", 1),
        ("clat", "clat_mean_ns", 1),
        ("lat", "lat_mean_ns", 1),
    ):
        for thread in (1, 2, 4, 5):  # the think job's lone read is checked in test_gap…
            for t_ms, value, ddir in raw_log(run.log_dir / f"fio_{log_type}.{thread}.log"):
                row = rows[(thread, ("read", "write")[ddir], (t_ms + 500) // 1000)]
                assert row[column] == value * scale, (log_type, thread, t_ms)
                checked[log_type] += 1
    assert checked["bw"] >= 2 and checked["clat"] >= 4  # fio logs at least the first windows
    assert all(r["slat_mean_ns"] is None for r in run.rows)  # psync: empty slat logs


def test_logged_windows_match_fio_counts(run: Run):
    series = by_series(run.rows)
    for (thread, direction), rows in series.items():
        index = rows[0]["job_index"]
        section = run.report.jobs[index][direction]
        logged = [r for r in rows if r["bw_bytes"] is not None and not r["zero_filled"]]
        logged = [r for r in logged if not r["from_totals"]]
        ios_sum = sum(r["ios"] or 0 for r in rows)
        if thread in (4, 5):  # grouped: fio's totals cover both threads
            continue
        assert len(logged) == section["bw_samples"], (thread, direction)
        # Σ per-second bytes = fio's io_bytes within one window (the unlogged end included)
        window = max(r["io_bytes"] for r in logged)
        assert abs(sum(r["io_bytes"] for r in rows) - section["io_bytes"]) <= window
        # Σ per-second I/Os (not IOPS: a short window has a high rate and few I/Os) stays
        # within fio's total, give or take the rounding of one I/O per window.
        assert ios_sum <= section["total_ios"] + len(rows)
    grouped = [r["ios"] or 0 for r in run.rows if r["job_index"] == 3]
    assert sum(grouped) <= run.report.jobs[3]["write"]["total_ios"] + len(grouped)


def test_gap_is_zero_filled(run: Run):
    think = by_series(run.rows)[(3, "read")]
    first, gap, last = think
    # one 4 KiB read in a window fio closed near 1000 ms: 4 KiB/s, or 3 if it closed late
    assert first["bw_bytes"] in (3072, 4096) and not first["zero_filled"]
    assert {k: gap[k] for k in list(gap)[:13]} == {
        "run_id": "r1",
        "job_name": "think",
        "job_index": 2,
        "thread": 3,
        "direction": "read",
        "second": 2,
        "bw_bytes": 0,
        "iops": 0,
        "lat_mean_ns": None,
        "clat_mean_ns": None,
        "slat_mean_ns": None,
        "zero_filled": True,
        "partial": False,
    }
    # The gap runs from fio's stamp on the first window to the end of second 2: windows
    # never overlap. fio stamps that window near 1,000 ms, not at it: 1,024 beside three
    # test workers, and 999 in CI (its clock read rounds down).
    assert gap["window_ms"] == 2000 - first["window_ms"] and 900 <= gap["window_ms"] <= 1100
    assert gap["io_bytes"] == 0 and not gap["from_totals"]
    # The job ended at 2.5 s; fio's final lat flush (the t=0 read) lands in this idle
    # second: it keeps its latency but is still zero-filled, and it is the partial one.
    assert last["second"] == 3 and last["partial"] and last["zero_filled"]
    assert last["bw_bytes"] == 0 and last["io_bytes"] == 0 and last["clat_mean_ns"] > 0
    assert 400 <= last["window_ms"] <= 600


def test_gtod_reduce_has_no_latency(run: Run):
    gtod = by_series(run.rows)[(6, "read")]
    assert all(r["lat_mean_ns"] is None and r["clat_mean_ns"] is None for r in gtod)
    assert gtod[0]["bw_bytes"] > 0 and gtod[0]["iops"] > 0


# ---- hand-written logs -------------------------------------------------------------


def make_report(jobs: list[dict], version: str = "fio-3.33", **global_options: str):
    doc = {"fio version": version, "global options": global_options, "jobs": jobs}
    return parse_fio_json(json.dumps(doc))


def job(name: str, runtime_ms: int, reads: int, writes: int = 0, **options: str) -> dict:
    def section(ios: int) -> dict:
        return {"io_bytes": ios * 4096, "total_ios": ios, "runtime": runtime_ms if ios else 0}

    return {
        "jobname": name,
        "groupid": 0,
        "error": 0,
        "job options": options,
        "job_runtime": runtime_ms,
        "read": section(reads),
        "write": section(writes),
        "trim": section(0),
    }


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_fio_3_1_columns_drift_and_truncated_line(tmp_path: Path):
    # 3.1–3.17: time, value, ddir, bs — timestamps drift; the last line was cut off.
    write(tmp_path / "fio_bw.1.log", "999, 100, 1, 4096\n2001, 200, 1, 4096\n4002, 50, 1, 4096\n")
    write(tmp_path / "fio_clat.1.log", "1000, 7000, 1, 4096\n2000, 8000, 1, 4096\n3001, 90")
    report = make_report([job("w", 4003, reads=0, writes=90)], version="fio-3.1")
    rows = timeseries_rows(tmp_path, run_id="r", report=report)
    got = [
        (r["second"], r["window_ms"], r["bw_bytes"], r["clat_mean_ns"], r["zero_filled"])
        for r in rows
    ]
    assert got == [
        (1, 999, 100 * 1024, 7000, False),
        (2, 1002, 200 * 1024, 8000, False),
        (3, 999, 0, None, True),  # from fio's stamp at 2001 to the grid
        (4, 1002, 50 * 1024, None, False),  # a window after a gap starts on the grid
    ]
    # every window is a full one (the job ended 1 ms after fio's last stamp)
    assert [r["partial"] for r in rows] == [False, False, False, False]
    # bytes: rate × window; fio's total (90 writes) is below the log's, so nothing is added
    assert [r["io_bytes"] for r in rows] == [102298, 205210, 0, 51302]
    assert {r["direction"] for r in rows} == {"write"}


def test_a_short_window_inside_a_series_is_not_partial(tmp_path: Path):
    """On a loaded host fio stamps a window late and the next one early (seen: 1,025 then
    975 ms); only the job's end cuts a window short, so only the last can be partial."""
    write(tmp_path / "fio_bw.1.log", "1025, 100, 1, 0, 0\n2000, 100, 1, 0, 0\n3000, 100, 1, 0, 0\n")
    write(tmp_path / "fio_bw.2.log", "1000, 100, 1, 0, 0\n2000, 100, 1, 0, 0\n2400, 40, 1, 0, 0\n")
    report = make_report([job("a", 3000, reads=0, writes=30), job("b", 2400, reads=0, writes=27)])
    rows = timeseries_rows(tmp_path, run_id="r", report=report)
    got = [(r["thread"], r["second"], r["window_ms"], r["partial"]) for r in rows]
    assert got == [
        (1, 1, 1025, False),
        (1, 2, 975, False),  # shorter than 990 ms, but fio's logging went on after it
        (1, 3, 1000, False),
        (2, 1, 1000, False),
        (2, 2, 1000, False),
        (2, 3, 400, True),  # the job ended 400 ms into it
    ]


def test_fio_3_37_window_value_both(tmp_path: Path):
    # 3.37+ with log_window_value=both: time, mean, max, ddir, bs, prio
    write(tmp_path / "fio_lat.1.log", "1000, 50, 90, 0, 0, 0\n2000, 60, 95, 1, 0, 0\n")
    report = make_report(
        [job("a", 2000, reads=10, writes=10)], version="fio-3.38", log_window_value="both"
    )
    rows = timeseries_rows(tmp_path, run_id="r", report=report)
    lat = {(r["direction"], r["second"]): r["lat_mean_ns"] for r in rows}
    assert lat == {("read", 1): 50, ("read", 2): None, ("write", 1): None, ("write", 2): 60}


def test_final_lat_flush_in_same_second_is_averaged(tmp_path: Path):
    write(tmp_path / "fio_bw.1.log", "1000, 4, 0, 0, 0\n2000, 4, 0, 0, 0\n")
    write(
        tmp_path / "fio_lat.1.log", "1000, 100, 0, 0, 0\n2000, 200, 0, 0, 0\n2003, 301, 0, 0, 0\n"
    )
    rows = timeseries_rows(tmp_path, run_id="r", report=make_report([job("a", 2003, reads=9)]))
    assert [(r["second"], r["lat_mean_ns"]) for r in rows] == [(1, 100), (2, 250)]


def test_prefix_with_path_and_other_log_files(tmp_path: Path):
    write(tmp_path / "logs" / "j_iops.1.log", "1000, 7, 0, 0, 0\n")
    write(tmp_path / "logs" / "j_iops.2.log", "1000, 3, 0, 0, 0\n")  # no jobs[] entry for it
    write(tmp_path / "logs" / "j_bw.3.log.fz", "compressed")
    write(tmp_path / "logs" / "j_bw.log", "1000, 1, 0, 0, 0\n")  # per_job_logs=0
    write(tmp_path / "logs" / "j_clat_hist.1.log", "1000, 0, 4096, 1\n")
    write(tmp_path / "logs" / "jx_bw.1.log", "")
    write(tmp_path / "logs" / "j_bw.1.log.bak", "")
    assert [p.name for p in log_files(tmp_path, "logs/j")] == [
        "j_bw.3.log.fz",
        "j_bw.log",
        "j_clat_hist.1.log",
        "j_iops.1.log",
        "j_iops.2.log",
    ]
    report = make_report([job("a", 1000, reads=7)])
    rows = timeseries_rows(tmp_path, run_id="r", report=report, prefix="logs/j")
    assert [(r["thread"], r["job_name"], r["job_index"], r["iops"]) for r in rows] == [
        (1, "a", 0, 7),
        (2, None, None, 3),
    ]
    assert timeseries_rows(tmp_path, run_id="r", report=report) == []  # no fio_* logs
    to_table("timeseries", rows)


def test_group_spanning_threads_uses_numjobs_from_global_options(tmp_path: Path):
    for n in (1, 2, 3, 4):
        write(tmp_path / f"fio_bw.{n}.log", "1000, 8, 1, 0, 0\n")
    grouped = job("g", 1000, reads=0, writes=30, group_reporting="1")
    report = make_report([grouped, job("solo", 1000, reads=0, writes=5)], numjobs="3")
    assert thread_owners(report) == {1: 0, 2: 0, 3: 0, 4: 1}


def test_group_spanning_sections_names_each_threads_own_section(tmp_path: Path):
    # [r] randread + [w] randwrite, one group (group_reporting): fio reports one entry 'r';
    # thread 2 runs section w and must say so; [solo] starts a new group and entry.
    write(tmp_path / "fio_bw.1.log", "1000, 8, 0, 0, 0\n")
    write(tmp_path / "fio_bw.2.log", "1000, 4, 1, 0, 0\n")
    write(tmp_path / "fio_bw.3.log", "1000, 2, 0, 0, 0\n")
    group = job("r", 1000, reads=2, writes=1, group_reporting="1")
    report = make_report([group, job("solo", 1000, reads=1)])
    sections = [
        ("r", {"rw": "randread", "group_reporting": "1"}),
        ("w", {"rw": "randwrite", "group_reporting": "1"}),
        ("solo", {"rw": "read", "new_group": "1"}),
    ]
    rows = timeseries_rows(tmp_path, run_id="r", report=report, sections=sections)
    got = [(r["thread"], r["job_name"], r["job_index"], r["direction"]) for r in rows]
    assert got == [(1, "r", 0, "read"), (2, "w", 0, "write"), (3, "solo", 1, "read")]
    assert thread_owners(report, sections) == {1: 0, 2: 0, 3: 1}
    # without the job file the report alone cannot see the fold: thread 2 is unplaced
    assert thread_owners(report)[2] == 1
