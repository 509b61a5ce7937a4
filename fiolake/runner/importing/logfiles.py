"""The per-second logs fio wrote beside an imported document, found by the prefixes its
own options name (`write_bw_log`, `write_iops_log`, `write_lat_log`, `write_hist_log`).

Only the prefix's file name is used, looked up in the document's folder or `--logs DIR`:
a document cannot make the importer read elsewhere. Each log is checked before
runner.report.logs reads it (that reader passes over a malformed line, as fio's own last
line may be cut short; an imported log whose lines do not fit is refused instead).
"""

from __future__ import annotations

from pathlib import Path

from fiolake.errors import FioError
from fiolake.fio_bins import PLAT_NR
from fiolake.runner.report.document import FioReport, json_option
from fiolake.runner.report.logs import log_files

LOG_OPTIONS = ("write_bw_log", "write_iops_log", "write_lat_log", "write_hist_log")
_MIN_COLUMNS = 4  # time, value, direction, block size (fio 2.x and 3.x alike)
_HIST_META = 3  # time, direction, block size before the buckets


def prefixes(report: FioReport) -> list[str]:
    """The file names of the log prefixes the document's options set, in order."""
    found: list[str] = []
    for job in report.jobs:
        for option in LOG_OPTIONS:
            value = json_option(report, job, option)
            name = Path(value).name if value else ""
            if name and name not in found:
                found.append(name)
    return found


def checked_logs(log_dir: Path, report: FioReport) -> list[str]:
    """The prefixes with logs in `log_dir`, each of their files checked; FioError names a
    log whose lines do not fit fio's format."""
    present = []
    for prefix in prefixes(report):
        files = log_files(log_dir, prefix)
        for path in files:
            _check(path)
        if files:
            present.append(prefix)
    return present


def _check(path: Path) -> None:
    if path.suffix != ".log":
        return  # fio's compressed logs (.fz) are not read
    hist = "_clat_hist." in path.name
    with path.open(encoding="ascii", errors="replace") as fh:
        lines = [line for line in fh.read().splitlines() if line.strip()]
    for number, line in enumerate(lines[:-1], start=1):  # the last may be cut short
        fields = [f.strip() for f in line.split(",")]
        ok = len(fields) >= _MIN_COLUMNS and all(_number(f) for f in fields[:_MIN_COLUMNS])
        if hist:
            buckets = len(fields) - _HIST_META
            ok = ok and buckets > 0 and PLAT_NR % buckets == 0 and all(map(_number, fields))
        if not ok:
            raise FioError(
                f"log {path.name} line {number} does not fit fio's log format "
                f"({len(fields)} columns: {line[:60]!r})"
            )


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
