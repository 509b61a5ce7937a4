"""Every shipped profile, scaled down and run through the runner (real fio): per-second
bytes add up to fio's io_bytes, and per-second latency percentiles agree with fio's own
fiologparser_hist.py on the same histogram logs."""

from __future__ import annotations

import csv
import gzip
import io
import subprocess
import sys
import tarfile
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fiolake.fio_bins import PLAT_NR, plat_idx_to_val
from fiolake.runner import attempt
from fiolake.runner import execute as ex
from fiolake.runner.policy.jobfile import parse_job_file
from fiolake.runner.profiles import list_profiles
from fiolake.schema import SECOND_PERCENTILES

pytestmark = pytest.mark.slow
FIOLOGPARSER = Path("/usr/share/doc/fio/fiologparser_hist.py.gz")


def scaled(text: str, sections: int = 2) -> str:
    """The profile's first sections, self-contained, without ramp_time (fiolake's own
    --runtime/--size overrides scale the rest)."""
    lines = []
    for section in parse_job_file(text).jobs[:sections]:
        lines.append(f"[{section.name}]")
        lines += [f"{k}={v}" for k, v in section.options.items() if k != "ramp_time"]
    return "\n".join(lines) + "\n"


def run_profile(name: str, text: str, target: Path) -> ex.RunOutcome:
    target.mkdir()
    request = ex.RunRequest(
        scaled(text), name, "local", target, f"j-{name}", "c-1", runtime_s=2, size_bytes=8 << 20
    )
    return ex.execute(attempt.prepare(request).measured)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ex.RunOutcome]:
    base = tmp_path_factory.mktemp("profiles")
    # precondition-fill is no measurement: its first phase writes the working set once and,
    # scaled down to 8 MiB, ends inside fio's first log window (nothing logged to check).
    profiles = [p for p in list_profiles() if p.name != "precondition-fill"]
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {
            p.name: pool.submit(run_profile, p.name, p.path.read_text(), base / p.name)
            for p in profiles
        }
        done = {name: future.result() for name, future in futures.items()}
    for name, outcome in done.items():
        assert outcome.status == "ok", (name, outcome.error)
    return done


def test_per_second_bytes_add_up_to_io_bytes(outcomes: dict[str, ex.RunOutcome]):
    measured = []
    for name, outcome in outcomes.items():
        results = outcome.tables["results"].to_pylist()
        series = defaultdict(list)
        for row in outcome.tables["timeseries"].to_pylist():
            series[(row["job_index"], row["direction"])].append(row)
        assert {(r["job_index"], r["direction"]) for r in results} == set(series), name
        for result in results:
            rows = series[(result["job_index"], result["direction"])]
            logged = [r["io_bytes"] for r in rows if not r["from_totals"] and not r["zero_filled"]]
            window = max(logged)
            total = sum(r["io_bytes"] for r in rows)
            io_bytes = result["io_bytes"]
            where = (name, result["job_name"], result["direction"])
            # Σ per-second bytes = fio's io_bytes within one window (in fact within the
            # averaging of fio's bw log and the I/Os of fio's last few ms: < 2 %) ...
            assert abs(total - io_bytes) <= min(window, io_bytes / 50), where
            threads = defaultdict(list)
            for row in rows:
                threads[row["thread"]].append(row)
            for thread_rows in threads.values():
                # ... the windows tile the job's runtime, what fio did not log is its end
                # (its last window; longer when closing files takes long), and only a
                # window shorter than log_avg_msec is partial
                span = sum(r["window_ms"] for r in thread_rows)
                assert abs(span - result["runtime_ms"]) <= 15, (*where, span)
                flags = [r["from_totals"] for r in thread_rows]
                assert flags == sorted(flags), where  # derived windows only after logged ones
                # Only the last window is partial (shorter than log_avg_msec). Inside the
                # series a short window follows a late one (fio stamps a window when an I/O
                # completes after the interval: 1,104 ms then 896 ms for a rate-limited job
                # of 250 IOPS here), so the pair still tiles two intervals.
                ordered = sorted(thread_rows, key=lambda r: r["second"])
                *inner, last = ordered
                assert not any(r["partial"] for r in inner), where
                assert last["partial"] == (last["window_ms"] < 990), (*where, last)
                for before, short in zip(inner[:-1], inner[1:], strict=True):
                    if short["window_ms"] < 990:
                        pair = before["window_ms"] + short["window_ms"]
                        assert abs(pair - 2000) <= 15, (*where, before, short)
            measured.append((*where, sum(logged) / io_bytes, total / io_bytes))
    print("\nper-second bytes / io_bytes: fio's logged windows, with the unlogged tail")
    for name, job, direction, logged, ratio in measured:
        print(f"  {name:18} {job:20} {direction:5} {logged:.4f} {ratio:.6f}")


def run_fiologparser(tmp: Path, hist_log: Path) -> list[dict]:
    script = tmp / "fiologparser_hist.py"
    script.write_bytes(gzip.decompress(FIOLOGPARSER.read_bytes()))
    done = subprocess.run(
        [sys.executable, str(script), "--noweight", "--directions=rw", "--decimals=3",
         "--percentiles=90:99:99.9:99.99", str(hist_log)],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    reader = csv.reader(io.StringIO(done.stdout), skipinitialspace=True)
    header = next(reader)
    return [dict(zip(header, row, strict=True)) for row in reader]


MIDPOINTS = [plat_idx_to_val(i) for i in range(PLAT_NR)]


def lower_edge(idx: int) -> int:
    """fio's bucket `idx` starts here (stat.c: plat_idx_to_val with edge 0)."""
    if idx < 128:
        return idx
    error_bits = (idx >> 6) - 1
    return (1 << (error_bits + 6)) + (idx % 64) * (1 << error_bits)


def their_bounds(counts: list[int], value: int) -> tuple[int, int]:
    """Where fiologparser_hist's answer must lie if it picked the same bucket as fio.

    fiologparser values bucket i at its upper edge (plat_idx_to_val_coarse with stride 1
    spans buckets i and i+1) and interpolates over every bucket, empty ones included,
    so its answer lies between the values of the non-empty buckets around ours. Interpolating
    toward the next non-empty bucket it can pass that bucket's upper edge by part of one
    more bucket (seen: a p99 of 134.33 ms against a bucket edge of 134.22 ms above the last
    non-empty bucket, and 131,189.76 ns against the edge 131,072 ns below another one),
    hence one bucket more above."""
    i = MIDPOINTS.index(value)
    used = [j for j, c in enumerate(counts) if c]
    before = [j for j in used if j < i] or [i]
    after = [j for j in used if j > i] or [i + 1]
    return lower_edge(before[-1] + 1), lower_edge(after[0] + 2)


@pytest.mark.skipif(not FIOLOGPARSER.exists(), reason="fio's fiologparser_hist.py not shipped")
def test_per_second_percentiles_match_fiologparser_hist(
    outcomes: dict[str, ex.RunOutcome], tmp_path: Path
):
    gaps: list[float] = []
    for name, outcome in outcomes.items():
        rows = {
            (r["thread"], r["direction"][0], r["second"]): r
            for r in outcome.tables["timeseries"].to_pylist()
        }
        with tarfile.open(fileobj=io.BytesIO(outcome.raw["logs.tar.gz"])) as tar:
            tar.extractall(tmp_path / name, filter="data")
        for hist_log in sorted((tmp_path / name).glob("fio_clat_hist.*.log")):
            thread = int(hist_log.name.split(".")[1])
            lines = [
                [int(x) for x in line.split(",")] for line in hist_log.read_text().splitlines()
            ]
            for theirs in run_fiologparser(tmp_path, hist_log):
                end = int(theirs["end-time"])
                # --noweight puts a line stamped t in the interval ending at the next
                # multiple of 1000 above t + 10; fiolake files it under round(t / 1000).
                [line] = [
                    ln for ln in lines
                    if "rw"[ln[1]] == theirs["dir"] and end - 1000 <= ln[0] + 10 < end
                ]  # fmt: skip
                ours = rows[(thread, theirs["dir"], (line[0] + 500) // 1000)]
                assert ours["clat_samples"] == int(theirs["samples"]), (name, thread, end)
                assert len(line) - 3 == PLAT_NR
                for column, p in SECOND_PERCENTILES.items():
                    key = "median" if p == 50.0 else f"{p:g}%"
                    their_value = float(theirs[key])
                    low, high = their_bounds(line[3:], ours[column])
                    assert low - 1 <= their_value <= high + 1, (name, thread, end, column)
                    gaps.append(abs(their_value - ours[column]) / their_value)
    assert len(gaps) >= 5 * 11
    gaps.sort()
    print(
        f"\n{len(gaps)} per-second percentiles vs fiologparser_hist: relative gap median "
        f"{gaps[len(gaps) // 2]:.2%}, 90th {gaps[len(gaps) * 9 // 10]:.2%}, max {gaps[-1]:.2%}"
    )
