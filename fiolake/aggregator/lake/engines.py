"""The lake's views for engines other than fiolake's own DuckDB: Spark SQL, Trino/Athena, DuckDB.

One definition per view, in DuckDB's dialect: the gang views are `aggregator.lake.gang`'s SQL
(the very statements `connect()` runs), the compare core is built from
`columns.per_run_aggregate` as `runsets.summarise` is. sqlglot (a maintained SQL
transpiler) turns them into Spark SQL and Trino; this module adds only what no transpiler
knows: how each engine registers the lake's tables (Delta tables of the compacted layer, or
the loose Hive-partitioned Parquet joined with the commit markers) and that fio's bin
percentiles are a DuckDB Python function (NULL elsewhere). `document()` renders
docs/engines.md; a test keeps that file equal to it.
"""

from __future__ import annotations

import sqlglot

from fiolake import layout
from fiolake.aggregator.lake import columns, gang
from fiolake.errors import UsageProblem

ENGINES = ("duckdb", "spark", "trino")
TITLES = {"duckdb": "DuckDB", "spark": "Spark SQL", "trino": "Trino / Athena"}
COMMITS = "commits"
# Internal gang views live in the `_fiolake` schema of fiolake's DuckDB; outside it they get
# a prefixed name instead (Spark temporary views cannot be qualified by a schema).
_INTERNAL = "_fiolake."
_INTERNAL_FLAT = "fiolake_"


def _check(engine: str) -> None:
    if engine not in ENGINES:
        raise UsageProblem(f"unknown engine {engine!r}: choose from {', '.join(ENGINES)}")


def tables() -> list[str]:
    """Every table of the lake, and `commits` (one row per commit marker)."""
    return [*layout.TABLES, COMMITS]


def delta_uri(lake_url: str, table: str) -> str:
    """Where `table`'s Delta table lives under `lake_url` (a directory or s3://bucket)."""
    return f"{lake_url.rstrip('/')}/{layout.delta_table_prefix(table).rstrip('/')}"


def _loose_dir(lake_url: str, table: str) -> str:
    return f"{lake_url.rstrip('/')}/{layout.RESULTS_PREFIX}{table}"


def register_delta(engine: str, lake_url: str, table: str) -> str:
    """One statement making `table` of the compacted layer (committed runs only) a view."""
    _check(engine)
    uri = delta_uri(lake_url, table)
    if engine == "duckdb":
        return f"CREATE OR REPLACE VIEW {table} AS SELECT * FROM delta_scan('{uri}')"
    if engine == "spark":
        return f"CREATE OR REPLACE TEMPORARY VIEW {table} USING delta OPTIONS (path '{uri}')"
    return (
        f"CALL lake.system.register_table(schema_name => 'fiolake', table_name => '{table}', "
        f"table_location => '{uri}')"
    )


def register_loose(engine: str, lake_url: str, table: str) -> list[str]:
    """Statements making the per-run files of `table` a view of committed runs only.

    Files are Hive-partitioned by `date=`, one per run attempt, orphans included: a row
    counts only when a commit marker (commits/<job_id>.json) names its run id — the rule
    `aggregator.lake.lake` applies. Columns newer files added read as NULL in older ones.
    """
    _check(engine)
    if engine == "trino":
        raise UsageProblem("Trino reads the compacted Delta tables; run `fiolake lake compact`")
    base = lake_url.rstrip("/")
    if table == COMMITS:
        if engine == "duckdb":
            source = f"read_json('{base}/{layout.COMMITS_PREFIX}*.json')"
            return [f"CREATE OR REPLACE VIEW commits AS SELECT * FROM {source}"]
        return [
            f"CREATE OR REPLACE TEMPORARY VIEW commits USING json "
            f"OPTIONS (path '{base}/{layout.COMMITS_PREFIX}')"
        ]
    files = f"{_INTERNAL_FLAT}files_{table}"
    where = "WHERE run_id IN (SELECT run_id FROM commits)"
    if engine == "duckdb":
        source = (
            f"read_parquet('{_loose_dir(base, table)}/*/*.parquet', hive_partitioning = true, "
            "union_by_name = true, hive_types = {'date': DATE})"
        )
        return [f"CREATE OR REPLACE VIEW {table} AS SELECT * FROM {source} {where}"]
    return [
        f"CREATE OR REPLACE TEMPORARY VIEW {files} USING parquet "
        f"OPTIONS (path '{_loose_dir(base, table)}', mergeSchema 'true')",
        f"CREATE OR REPLACE TEMPORARY VIEW {table} AS SELECT * FROM {files} {where}",
    ]


def transpile(sql: str, engine: str) -> str:
    """`sql` (DuckDB dialect) in `engine`'s dialect, pretty-printed."""
    _check(engine)
    sql = sql.replace(_INTERNAL, _INTERNAL_FLAT)
    out = sqlglot.transpile(sql, read="duckdb", write=engine, pretty=True)[0]
    if engine == "spark":
        out = out.replace("CREATE VIEW ", "CREATE OR REPLACE TEMPORARY VIEW ", 1)
    elif engine == "trino":  # Trino's arbitrary() skips NULLs and takes no IGNORE NULLS
        out = out.replace(") IGNORE NULLS", ")")
    return out


def gang_views(engine: str) -> list[str]:
    """The gang views (`gang_members`, `gang_seconds`, `gang_results`, and their helpers)
    in `engine`'s dialect. Outside DuckDB the fio-bin percentiles are NULL: they need
    fiolake's exact bin method (fiolake.fio_bins), a Python function of its DuckDB."""
    _check(engine)
    if engine == "duckdb":
        percentiles = gang.percentile_columns()
    else:
        percentiles = ", ".join(f"CAST(NULL AS BIGINT) AS {n}" for n in gang.GANG_PERCENTILES)
    return [transpile(sql, engine) for sql in gang.view_statements(percentiles)]


def compare_core(metric: str, engine: str = "duckdb") -> str:
    """The core of `compare`: per backend × profile × job × direction, the number of
    successful runs and the geometric mean of `metric` (threads folded per run as
    `compare` folds them). Runs with a value <= 0 are left out (no logarithm)."""
    per_run = columns.per_run_aggregate(metric)
    sql = f"""
        WITH per_run AS (
            SELECT x.run_id, x.job_name, x.direction, {per_run} AS value
            FROM results x
            GROUP BY x.run_id, x.job_name, x.direction
        )
        SELECT r.backend, r.profile, p.job_name, p.direction,
               count(*) AS runs, exp(avg(ln(p.value))) AS geomean
        FROM per_run p JOIN runs r ON r.run_id = p.run_id
        WHERE r.status = 'ok' AND p.value > 0
        GROUP BY r.backend, r.profile, p.job_name, p.direction
        ORDER BY r.backend, r.profile, p.job_name, p.direction
    """
    return transpile(sql, engine)


_SETUP = {
    "duckdb": """\
DuckDB reads the Delta tables with its `delta` extension (the file is inside the
`duckdb-extension-delta` wheel: `LOAD '<path>'`, no network). On S3, create a secret
(`CREATE SECRET (TYPE s3, ENDPOINT …, URL_STYLE 'path', KEY_ID …, SECRET …)`); behind a
private CA set `SSL_CERT_FILE` to it (the extension ignores `ca_cert_file`).""",
    "spark": """\
Spark 4.2 with Delta 4.4 (`pip install 'fiolake[spark]'`, or `--packages
io.delta:delta-spark_4.2_2.13:4.4.0`), session options
`spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension` and
`spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog`. On S3,
add `hadoop-aws` and write `s3a://` for `s3://` (`spark.hadoop.fs.s3a.endpoint`,
`spark.hadoop.fs.s3a.path.style.access=true`; a private CA goes into the JVM's trust
store). Every view below is a temporary view of the session.""",
    "trino": """\
Trino's Delta Lake connector (`connector.name=delta_lake`,
`delta.register-table-procedure.enabled=true`, `fs.native-s3.enabled=true`,
`s3.endpoint=…`, `s3.path-style-access=true`); Athena registers the same locations as
Delta tables with `CREATE EXTERNAL TABLE … LOCATION '…' TBLPROPERTIES
('table_type'='DELTA')`. Trino needs Java 22+: this SQL is transpiled, not run, here.""",
}

_EXAMPLE_LAKE = "s3://fiolake"


def _fence(statements: list[str]) -> str:
    return "```sql\n" + ";\n\n".join(s.strip() for s in statements) + ";\n```\n"


def document(lake_url: str = _EXAMPLE_LAKE) -> str:
    """docs/engines.md: for each engine, registering the lake and the SQL of each view."""
    out = [
        "# Reading the lake from Spark, Trino/Athena and DuckDB\n",
        "<!-- generated by `python -m fiolake.aggregator.lake.engines > docs/engines.md`; "
        "tests/aggregator/lake/test_engines.py keeps it current -->\n",
        "The compacted layer (`lake compact`) is one Delta Lake table per lake table under "
        "`compacted/delta/<table>/`, holding committed runs only: register them and the "
        "views below answer what `fiolake sql` answers. Runs committed since the last "
        "compaction are only in the per-run files (`results/<table>/date=…/`, orphan "
        "attempts included): read those joined with the commit markers, as shown. "
        f"Tables: {', '.join(f'`{t}`' for t in tables())}. Columns: docs/aggregator.md and "
        "`fiolake/schema.py`, plus `date`. The statements are generated from the "
        "definitions `fiolake sql` uses (`aggregator/lake/gang.py`, `aggregator/lake/engines.py`) "
        "and translated with sqlglot; the DuckDB and Spark SQL ones are run by the tests "
        "(`make test`, tier `spark`).\n",
    ]
    for engine in ENGINES:
        out.append(f"## {TITLES[engine]}\n")
        out.append(_SETUP[engine] + "\n")
        out.append("### The compacted tables\n")
        uri_lake = lake_url.replace("s3://", "s3a://") if engine == "spark" else lake_url
        out.append(_fence([register_delta(engine, uri_lake, t) for t in tables()]))
        if engine == "trino":
            out.append(
                "Then `USE lake.fiolake;` for the views below. Trino and Athena read the "
                "compacted tables only; run `fiolake lake compact` first.\n"
            )
        else:
            out.append("### Runs not compacted yet (per-run Parquet and commit markers)\n")
            loose = register_loose(engine, uri_lake, COMMITS)
            for t in layout.TABLES:
                loose += register_loose(engine, uri_lake, t)
            out.append(_fence(loose))
        out.append("### Gang views (docs/gangs.md)\n")
        if engine != "duckdb":
            out.append(
                "`clat_p50_ns`, `clat_p99_ns` and `clat_p999_ns` of `gang_results` are NULL "
                "here: fio's bin percentiles are a Python function of fiolake's DuckDB "
                "(`fiolake sql` has them).\n"
            )
        else:
            out.append(
                "`fio_bin_percentile` is a Python function fiolake registers "
                "(`aggregator.lake.gang.register_functions`); without it, leave those three "
                "columns out.\n"
            )
        out.append(_fence(gang_views(engine)))
        out.append("### The core of `compare`: geometric means per backend (IOPS)\n")
        out.append(_fence([compare_core("iops", engine)]))
    return "\n".join(out)


if __name__ == "__main__":  # pragma: no cover - the generator's entry point
    import sys

    sys.stdout.write(document())
