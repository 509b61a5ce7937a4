"""SQL text built by hand: literals, the read_parquet() call the views read files with, and
the column definitions of an empty table.

Values go into a query as literals, not bound parameters (see `literal`). Kept apart from
`lake` (which re-exports these) so that module stays the connection and its views.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

import pyarrow as pa


def quote(text: str) -> str:
    """A SQL string literal (a NUL, which DuckDB's parser ends a literal at, as chr(0))."""
    return " || chr(0) || ".join("'" + part.replace("'", "''") + "'" for part in text.split("\x00"))


def literal(value: str | datetime) -> str:
    """A value as a SQL literal, written into a query instead of bound as a parameter:
    DuckDB's Python client imports pandas (0.12 s) to bind any parameter, which a command
    that only prints would pay for nothing (BENCHMARKS.md, issue 24). Strings are quoted
    (`quote`: DuckDB reads no backslash escapes); times become TIMESTAMPTZ in UTC."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"a naive time cannot be a literal: {value!r}")
        return f"TIMESTAMPTZ {quote(value.astimezone(UTC).isoformat())}"
    return quote(value)


def literals(values: Iterable[str | datetime]) -> str:
    """Comma-separated `literal`s, for `IN (…)`."""
    return ", ".join(literal(v) for v in values)


def with_values(sql: str, params: Sequence[str | datetime | int | float | None]) -> str:
    """`sql` with each `?` placeholder (outside quoted strings and names) replaced by its
    parameter as a literal, for the same reason as `literal`: binding one would import
    pandas (0.1-0.5 s) into a command that prints a table. ValueError when the counts
    differ."""
    parts, values, quoted = [], iter(params), ""
    for char in sql:
        if quoted:
            quoted = "" if char == quoted else quoted
        elif char in "'\"":
            quoted = char
        elif char == "?":
            value = next(values, _MISSING)
            if value is _MISSING:
                raise ValueError(f"more placeholders than the {len(params)} values given")
            char = _sql_value(value)
        parts.append(char)
    if next(values, _MISSING) is not _MISSING:
        raise ValueError(f"fewer placeholders than the {len(params)} values given")
    return "".join(parts)


_MISSING = object()


def _sql_value(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return repr(value)
    if isinstance(value, float):
        # From text: a bare 1.1 is a DECIMAL, and CAST(0.015106735869404567 AS DOUBLE)
        # went through DECIMAL(19,18) to the next double up (Hypothesis found it).
        return f"CAST('{value!r}' AS DOUBLE)"
    if isinstance(value, str | datetime):
        return literal(value)
    raise TypeError(f"no SQL literal for {type(value).__name__}")


def parquet_source(paths: list[str], *, hive: bool = True, one_schema: bool = False) -> str:
    """A read_parquet() call over `paths`; `hive` takes `date` from the date= directory.
    `one_schema`: the files are known to share one schema, so binding reads one footer, not
    every file's to line their columns up (`aggregator.lake.footers`)."""
    files = ", ".join(quote(p) for p in paths)
    options = f"union_by_name = {'false' if one_schema else 'true'}, hive_partitioning = "
    options += "true, hive_types = {'date': DATE}" if hive else "false"
    return f"read_parquet([{files}], {options})"


# The DuckDB type of each Arrow type the lake's schemas use, as DuckDB reads it from a
# Parquet file pyarrow wrote (tests/aggregator/lake/test_lake_materialise.py compares).
_TYPES = {
    pa.string(): "VARCHAR",
    pa.float64(): "DOUBLE",
    pa.bool_(): "BOOLEAN",
    pa.int32(): "INTEGER",
    pa.int64(): "BIGINT",
    pa.date32(): "DATE",
    pa.timestamp("ms", tz="UTC"): "TIMESTAMP WITH TIME ZONE",
}


def _duckdb_type(arrow: pa.DataType) -> str | None:
    if isinstance(arrow, pa.MapType):
        key, item = _duckdb_type(arrow.key_type), _duckdb_type(arrow.item_type)
        return f"MAP({key}, {item})" if key and item else None
    if isinstance(arrow, pa.ListType):
        item = _duckdb_type(arrow.value_type)
        return f"{item}[]" if item else None
    return _TYPES.get(arrow)


def column_definitions(schema: pa.Schema) -> str | None:
    """`"name" TYPE, …` for CREATE TABLE: the columns DuckDB would read from a Parquet file
    of `schema`; None when a type is not one the lake's schemas use."""
    types = [_duckdb_type(f.type) for f in schema]
    if None in types:
        return None
    return ", ".join(f'"{f.name}" {t}' for f, t in zip(schema, types, strict=True))
