"""One fio report → every lake table but `runs`: the one place that puts the readers of
this package together, for a run fiolake executed (runner.execute) and for fio output
brought in from elsewhere (runner.importing) alike."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pyarrow as pa

from fiolake import schema
from fiolake.runner.report import extras as fio_extras
from fiolake.runner.report import logs as fio_logs
from fiolake.runner.report import results as fio_output
from fiolake.runner.report.document import FioReport
from fiolake.runner.report.steady import with_steady_state
from fiolake.runner.report.threads import Section


def _no_options(_name: str) -> Mapping[str, str]:
    return {}


def report_tables(
    report: FioReport,
    *,
    run_id: str,
    backend: str,
    job_options: Callable[[str], Mapping[str, str]] = _no_options,
    sections: Sequence[Section] | None = None,
    log_dir: Path | None = None,
    log_prefixes: Sequence[str] = ("fio",),
) -> dict[str, pa.Table]:
    """results, percentiles, disk_util, iodepth, latency_bins and timeseries of a report.

    `job_options` and `sections` are the job file fio ran, when known (a run's canonical
    file; an import has only what fio echoed in `job options`). `log_dir` holds fio's
    per-second logs named `<prefix>_<type>.<N>.log` for each of `log_prefixes`; without it
    `timeseries` is empty.
    """
    tables = {
        "results": schema.to_table(
            "results",
            fio_output.result_rows(
                report,
                run_id=run_id,
                backend=backend,
                job_options=job_options,
                sections=sections,
            ),
        ),
        "percentiles": schema.to_table(
            "percentiles", fio_output.percentile_rows(report, run_id=run_id)
        ),
    }
    for name, make in (
        ("disk_util", fio_extras.disk_util_rows),
        ("iodepth", fio_extras.iodepth_rows),
        ("latency_bins", fio_extras.latency_bin_rows),
    ):
        tables[name] = schema.to_table(name, make(report, run_id=run_id))
    rows: list[dict] = []
    for prefix in log_prefixes:
        if log_dir is None:
            break
        rows += fio_logs.timeseries_rows(
            log_dir, run_id=run_id, report=report, prefix=prefix, sections=sections
        )
    tables["timeseries"] = schema.to_table("timeseries", rows)
    tables["results"] = with_steady_state(
        tables["results"], tables["timeseries"], fio_extras.fio_steady_states(report)
    )
    return tables
