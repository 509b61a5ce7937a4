"""`runsets.summarise`'s query against the query it replaced (issue 44, compare pooled).

The query was restructured for speed (integer keys per run, MADs from the medians, only
outlying rows ordered); the one before is kept here, verbatim, as the reference. On a lake
with every kind of case the table shows (outliers, values ≤ 0, unsteady, flagged and
preconditioned runs, threads folded, several workloads, file systems, fio versions), both
give the same summaries, and `compare` on either gives the same verdict for every row
and the same ratios and adjusted p to 9 significant digits. Counts, ranges, outliers and
attribute lists are equal exactly; the log moments to 1e-12 relative, the noise of
DuckDB's parallel float sums, which differ that much between two runs of one query.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from fiolake import layout
from fiolake.aggregator.lake.lake import Lake, connect
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.stats import groupstats, runsets, stats
from fiolake.aggregator.stats.compare import DEFAULT_METRICS, compare
from fiolake.schema import parquet_bytes, to_table
from tests.aggregator import lakegen

BACKENDS = ("a", "b", "c")
CASES = [("job1", "read"), ("job1", "write"), ("job2", "read")]
REPS = 7  # outliers are judged from stats.OUTLIER_MIN_N runs up


def _reference_sql(
    group_expr: str, where: str, sha: str, metrics: list[str], *, exclude_unsteady: bool
) -> str:
    """The query of `summarise` before issue 44's change (main at dff6b23), verbatim."""
    idx = range(len(metrics))
    per_run = runsets.per_run_columns(metrics)
    moments = ", ".join(
        f'count("m{i}") AS "n{i}", avg("l{i}") AS "mean{i}", var_samp("l{i}") AS "var{i}", '
        f'min("m{i}") AS "lo{i}", max("m{i}") AS "hi{i}", '
        f'count(*) FILTER (WHERE "m{i}" <= 0) AS "bad{i}", '
        f'median("l{i}") AS "med{i}", mad("l{i}") AS "mad{i}"'
        for i in idx
    )
    cut = stats.OUTLIER_Z / 0.6745
    odd = ", ".join(
        f'list(j.run_id ORDER BY j.run_id) FILTER (WHERE g."mad{i}" > 0 '
        f'AND abs(j."l{i}" - g."med{i}") > {cut} * g."mad{i}") AS "odd{i}"'
        for i in idx
    )
    logs = ", ".join(
        f'p."m{i}", CASE WHEN p."m{i}" > 0 THEN ln(p."m{i}") END AS "l{i}"' for i in idx
    )
    steady_only = "AND p.steady IS NOT FALSE" if exclude_unsteady else ""
    keys = "grp, profile, job_name, direction, sha"
    picked = ", ".join(
        f'g."n{i}", g."mean{i}", g."var{i}", g."lo{i}", g."hi{i}", g."bad{i}", o."odd{i}"'
        for i in idx
    )
    return f"""
        WITH per_run AS (
            SELECT x.run_id, x.job_name, x.direction, bool_and(x.steady_state) AS steady,
                   {per_run}
            FROM results x
            WHERE x.run_id IN (SELECT r.run_id FROM runs r WHERE {where})
            GROUP BY ALL
        ), j AS MATERIALIZED (
            SELECT coalesce({group_expr}, '') AS grp, r.profile, p.job_name, p.direction,
                   coalesce({sha}, '') AS sha, r.run_id, r.fio_version,
                   coalesce(r.origin, 'run') AS origin, coalesce(r.target_kind, 'dir') AS target,
                   r.fs_type,
                   coalesce(len(r.flags), 0) > 0 AS flagged, p.steady,
                   r.preconditioned_by IS NOT NULL AS pre, {logs}
            FROM per_run p JOIN runs r USING (run_id)
            WHERE {where} {steady_only}
        ), g AS (
            SELECT {keys}, count(*) FILTER (WHERE steady) AS steady,
                   count(*) FILTER (WHERE NOT steady) AS unsteady,
                   count(*) FILTER (WHERE steady IS NULL) AS unknown,
                   count(*) FILTER (WHERE flagged) AS flagged,
                   list(DISTINCT fio_version) AS fios, list(DISTINCT origin) AS origins,
                   list(DISTINCT target) AS targets, list(DISTINCT fs_type) AS fss,
                   count(*) FILTER (WHERE pre) AS pre, {moments}
            FROM j GROUP BY ALL
        ), o AS (
            SELECT {keys}, {odd} FROM j JOIN g USING ({keys}) GROUP BY ALL
        )
        SELECT {keys}, g.steady, g.unsteady, g.unknown, g.flagged, g.fios, g.pre,
               g.origins, g.targets, g.fss, {picked}
        FROM g JOIN o USING ({keys})
    """


def _reference(
    monkeypatch: pytest.MonkeyPatch, lake: Lake, group_expr: str, metrics: list[str], **kw: bool
) -> groupstats.Data:
    """`summarise` on the reference query."""
    with monkeypatch.context() as patch:
        patch.setattr(runsets, "_summary_sql", _reference_sql)
        return runsets.summarise(lake, group_expr, RunFilter(), metrics, **kw)


def _values(backend: int, case: int, rep: int) -> dict[str, Any]:
    """One run's metrics for one job × direction: spread per backend and case, rep 3 of
    backend a an outlier, a zero bandwidth in backend c, unsteady and unknown runs."""
    iops = 1000.0 * (1 + 0.3 * backend) * (1 + 0.1 * case) * (1 + 0.013 * ((rep * 7) % 5 - 2))
    values: dict[str, Any] = {"iops": iops, "clat_p99_ns": 3e6 / iops * (1 + 0.02 * (rep % 3))}
    if backend == 0 and rep == 3:
        values["iops"] = iops * 4
    if backend == 2 and case == 1 and rep == 5:
        values["bw_bytes"] = 0
    values["steady_state"] = None if rep == 6 else rep % 4 != 1
    return values


def _write_threads(store: lakegen.LocalStore, run_id: str, started: Any, metrics: Any) -> None:
    """Rewrite a run's results as two threads per job × direction (numjobs=2 without
    group_reporting): the per-run fold sums and averages them back."""
    rows = []
    for index, ((job, direction), values) in enumerate(sorted(metrics.items())):
        for thread, share in ((0, 0.4), (1, 0.6)):
            split = {k: v * share if k == "iops" else v for k, v in values.items()}
            row = lakegen.result_row(run_id, "x", job, direction, 2 * index + thread, split)
            rows.append(row | {"numjobs": 2})
    key = layout.result_key("results", started, run_id)
    store.put(key, parquet_bytes(to_table("results", rows)))


def every_kind_lake(root: Path) -> str:
    """A lake of uncompacted runs with every kind of case the table shows (the module
    docstring); its root."""
    store = lakegen.local_store(root)
    for b, backend in enumerate(BACKENDS):
        for profile in ("random-reads", "seq-writes"):
            for rep in range(REPS):
                metrics = {case: _values(b, c, rep) for c, case in enumerate(CASES)}
                started = lakegen.T0 + timedelta(minutes=100 * b + 10 * rep)
                started += timedelta(seconds=1 if profile == "seq-writes" else 0)
                extra: dict[str, Any] = {
                    "fs_type": "xfs" if rep == 2 else None if rep == 4 else "ext4",
                    "fio_version": "fio-3.36" if b == 1 and rep == 0 else "fio-3.33",
                    "flags": ["cpu-busy"] if rep == 5 else None,
                    "origin": "import" if b == 2 and rep == 1 else None,
                    "repetition": rep,
                }
                if rep == 2 and profile == "seq-writes":  # a second workload of the case
                    extra["canonical_job_file"] = f"[{profile}]\nrw=write\nbs=1M\n"
                if rep == 6:
                    extra["preconditioned_by"] = "pre-1"
                run_id = lakegen.write_run(
                    store,
                    run_id=f"r-{backend}-{profile}-{rep}",
                    job_id=f"j-{backend}-{profile}-{rep}",
                    backend=backend,
                    profile=profile,
                    metrics=metrics,
                    started_at=started,
                    **extra,
                )
                if rep == 4:
                    _write_threads(store, run_id, started, metrics)
    return str(root)


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    """One connection for the module's tests (connecting is most of their time)."""
    with connect(every_kind_lake(tmp_path_factory.mktemp("equivalence") / "lake")) as handle:
        yield handle


def _same_summaries(new: groupstats.Data, old: groupstats.Data) -> None:
    assert new.keys() == old.keys()
    for key, metrics in old.items():
        for metric, want in metrics.items():
            got = new[key][metric]
            where = (key, metric)
            assert (got.log is None) == (want.log is None), where
            if want.log is not None and got.log is not None:
                assert got.log.n == want.log.n, where
                assert got.log.mean == pytest.approx(want.log.mean, rel=1e-12), where
                assert (got.log.var is None) == (want.log.var is None), where
                if want.log.var is not None:
                    assert got.log.var == pytest.approx(want.log.var, rel=1e-12, abs=1e-300)
            assert got == type(want)(**{**want.__dict__, "log": got.log}), where


def test_the_lake_has_every_kind_of_case(lake: Lake) -> None:
    """The lake exercises what the rewrite changed: outliers, NULL logs, folds, mixes."""
    data = runsets.summarise(lake, 'CAST(r."backend" AS VARCHAR)', RunFilter(), ["iops"])
    both = runsets.summarise(
        lake, 'CAST(r."backend" AS VARCHAR)', RunFilter(), ["bw_bytes", "iops"]
    )
    found = [s for m in data.values() for s in m.values()]
    assert any(s.outliers for s in found)
    assert any(s.log is None for m in both.values() for s in m.values())
    assert any(len(s.file_systems) > 1 and s.unsteady and s.steady_unknown for s in found)
    assert any(s.flagged and s.preconditioned and len(s.fio_versions) > 1 for s in found)
    assert any(s.origins == ["import", "run"] for s in found)
    assert len({case[3] for _, case in data}) > 1  # workloads


@pytest.mark.parametrize(
    ("group_expr", "allow_mixed", "exclude_unsteady"),
    [
        ('CAST(r."backend" AS VARCHAR)', False, False),
        ('CAST(r."backend" AS VARCHAR)', True, True),
        ("CAST(r.campaign_id AS VARCHAR)", False, False),  # the gate's grouping
        (
            "CASE WHEN r.run_id LIKE '%-1' THEN 'x' WHEN r.fs_type = 'xfs' THEN 'y' END",
            False,
            False,
        ),
    ],
)
def test_summaries_equal_the_reference(
    lake: Lake,
    monkeypatch: pytest.MonkeyPatch,
    group_expr: str,
    allow_mixed: bool,
    exclude_unsteady: bool,
) -> None:
    metrics = [*DEFAULT_METRICS, "clat_mean_ns"]
    options = {"allow_mixed": allow_mixed, "exclude_unsteady": exclude_unsteady}
    new = runsets.summarise(lake, group_expr, RunFilter(), metrics, **options)
    old = _reference(monkeypatch, lake, group_expr, metrics, **options)
    assert new
    _same_summaries(new, old)


def _nine_digits(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return a == b or math.isclose(a, b, rel_tol=5e-10, abs_tol=1e-300)


@pytest.mark.parametrize("kwargs", [{}, {"adjustment": "fdr", "family": "metric"}])
def test_compare_gives_the_same_table(
    lake: Lake, monkeypatch: pytest.MonkeyPatch, kwargs: dict[str, str]
) -> None:
    new = compare(lake, **kwargs)  # type: ignore[arg-type]
    monkeypatch.setattr(runsets, "_summary_sql", _reference_sql)
    old = compare(lake, **kwargs)  # type: ignore[arg-type]
    assert len(new.rows) == len(old.rows) > 0
    assert (new.tests, new.groups, new.family) == (old.tests, old.groups, old.family)
    verdicts = {r.verdict for r in old.rows}
    assert {"baseline", "better"} <= verdicts and len(verdicts) >= 3
    for got, want in zip(new.rows, old.rows, strict=True):
        where = (want.group, want.profile, want.job_name, want.direction, want.metric)
        assert got.verdict == want.verdict, where
        assert (got.n, got.n_baseline, got.outliers, got.notes) == (
            want.n,
            want.n_baseline,
            want.outliers,
            want.notes,
        ), where
        for name in ("ratio", "ratio_ci_low", "ratio_ci_high", "p_value", "p_adjusted"):
            assert _nine_digits(getattr(got, name), getattr(want, name)), (where, name)
        assert _nine_digits(got.p_equivalence_adjusted, want.p_equivalence_adjusted), where
