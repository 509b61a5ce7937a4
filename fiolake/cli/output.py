"""Render rows of data as an aligned table, CSV or JSON (stdout is for data only)."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import click

from fiolake.timetext import iso_utc
from fiolake.units import MISSING

FORMATS = ("table", "csv", "json")

Formatter = Callable[[Any], str]


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return iso_utc(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _plain(value: Any) -> str:
    if value is None:
        return MISSING
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def render_table(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    formatters: Mapping[str, Formatter] | None = None,
) -> str:
    """Aligned text table; numbers right-aligned, None shown as '---'."""
    formatters = formatters or {}
    # Column by column: one formatter lookup per column, not per cell (a year of one
    # profile's trend is 99,000 rows × 9 columns).
    by_column = list(zip(*rows, strict=True)) if rows else [() for _ in columns]
    cells = [
        [*map(formatters.get(c, _plain), values)]
        for c, values in zip(columns, by_column, strict=True)
    ]
    widths = [max([len(c), *map(len, col)]) for c, col in zip(columns, cells, strict=True)]
    numeric = [
        all(isinstance(v, int | float | Decimal) or v is None for v in values)
        for values in by_column
    ]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    out = [line(list(columns)), line(["-" * w for w in widths])]
    out += [line(r) for r in zip(*cells, strict=True)] if rows else []
    return "\n".join(out) + "\n"


def render(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    fmt: str,
    formatters: Mapping[str, Formatter] | None = None,
) -> str:
    """Render in `fmt` (table|csv|json); csv and json carry raw values."""
    if fmt == "table":
        return render_table(columns, rows, formatters)
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow(
                [
                    ""
                    if v is None
                    else json.dumps(_jsonable(v))
                    if isinstance(v, dict | list)
                    else _jsonable(v)
                    for v in row
                ]
            )
        return buf.getvalue()
    if fmt == "json":
        records = [{c: _jsonable(v) for c, v in zip(columns, row, strict=True)} for row in rows]
        return json.dumps(records, indent=2) + "\n"
    raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")


def emit(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    fmt: str,
    formatters: Mapping[str, Callable[[Any], str]] | None = None,
) -> None:
    """`render` the rows to stdout (data goes to stdout; logs and progress to stderr)."""
    click.echo(render(columns, rows, fmt, formatters), nl=False)
