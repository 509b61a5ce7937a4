"""Steady state of each result: the SNIA PTS rule (`fiolake.steady`) over the per-second
IOPS of `timeseries`, or fio's own verdict for jobs run with `steadystate=`."""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

from fiolake.steady import steady_state


def with_steady_state(
    results: pa.Table,
    timeseries: pa.Table,
    fio_verdicts: Mapping[str, tuple[bool, int | None]] | None = None,
) -> pa.Table:
    """`results` with steady_state and warmup_s from each job × direction's per-second IOPS
    (threads summed; the short last window left out). fio's own verdict
    (`fio_extras.fio_steady_states`, jobs run with `steadystate=`) wins where present."""
    per_second: dict[tuple[str, str], dict[int, float]] = {}
    wanted = ["job_name", "direction", "second", "iops", "partial"]
    for row in timeseries.select(wanted).to_pylist():
        if row["partial"] or row["iops"] is None:
            continue
        series = per_second.setdefault((row["job_name"], row["direction"]), {})
        series[row["second"]] = series.get(row["second"], 0.0) + row["iops"]
    verdicts = {
        key: steady_state([v for _, v in sorted(series.items())])
        for key, series in per_second.items()
    }
    keys = zip(
        results.column("job_name").to_pylist(), results.column("direction").to_pylist(), strict=True
    )
    fio_verdicts = fio_verdicts or {}
    found = [fio_verdicts.get(k[0]) or verdicts.get(k, (None, None)) for k in keys]
    results = results.set_column(
        results.schema.get_field_index("steady_state"),
        "steady_state",
        pa.array([f[0] for f in found], pa.bool_()),
    )
    return results.set_column(
        results.schema.get_field_index("warmup_s"),
        "warmup_s",
        pa.array([f[1] for f in found], pa.int32()),
    )
