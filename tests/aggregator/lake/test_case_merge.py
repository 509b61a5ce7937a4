"""cases._merge: a night's case summaries added to a year's, histograms bin by bin."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from pathlib import Path

import pyarrow as pa

from fiolake.aggregator.lake import cases
from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.generations import latest_generation
from tests.aggregator import lakegen

HISTS = [cases.metric_columns(m)["hist"] for m in cases.METRICS]


def case_object(root: Path) -> pa.Table:
    """The case summaries of a compacted lake of two backends, two jobs, 5 runs each."""
    store = lakegen.local_store(root)
    for backend in ("nvme", "sata"):
        for rep in range(5):
            metrics = {(f"job{j}", "read"): {"iops": 1000.0 * (1 + 0.013 * rep + 0.1 * j)}
                       for j in range(2)}  # fmt: skip
            lakegen.write_run(store, run_id=f"{backend}-{rep}", job_id=f"j-{backend}-{rep}",
                              backend=backend, metrics=metrics,
                              started_at=lakegen.T0 + timedelta(minutes=rep))  # fmt: skip
    compact(store, grace=timedelta(0))
    gen = latest_generation(store)
    assert gen is not None and gen.cases_file
    return cases.read(store, gen.cases_file)


def by_key(table: pa.Table) -> dict[tuple[object, ...], dict[str, object]]:
    rows = table.to_pylist()
    return {tuple(r[k] for k in cases.KEYS): r for r in rows}


def test_histograms_of_shared_cases_add_bin_by_bin_and_lone_ones_pass_through(
    tmp_path: Path,
) -> None:
    year = case_object(tmp_path)
    night = year.slice(0, 1)  # one case shared, in a third part
    merged = by_key(cases._merge([year, year, night]))
    parts = by_key(year)
    assert len(merged) == len(parts) > 1
    first = tuple(year.slice(0, 1).to_pylist()[0][k] for k in cases.KEYS)
    for key, row in parts.items():
        for name in HISTS:
            times = 3 if key == first else 2
            want = Counter()
            for _ in range(times):
                want.update(dict(row[name] or []))
            got = merged[key][name]
            assert got is not None and dict(got) == dict(want), (key, name)
            assert [b for b, _ in got] == sorted(want)  # bins ascending, as DuckDB's maps
    alone = by_key(cases._merge([year.slice(0, 1), year.slice(1, 1)]))
    for key, row in by_key(year.slice(0, 2)).items():
        assert {n: alone[key][n] for n in HISTS} == {n: row[n] for n in HISTS}
