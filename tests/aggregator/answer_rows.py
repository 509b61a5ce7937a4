"""Rows of a table in a form every engine agrees on, to compare readers row for row."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pyarrow as pa

Rows = list[tuple[Any, ...]]


def _value(v: object) -> object:
    """One cell: maps as sorted pairs (they arrive as pairs or dicts), instants in UTC."""
    if isinstance(v, dict):
        return tuple(sorted(v.items()))
    if isinstance(v, list) and v and isinstance(v[0], dict) and set(v[0]) == {"key", "value"}:
        return tuple(sorted((d["key"], d["value"]) for d in v))
    if isinstance(v, list) and v and isinstance(v[0], tuple):
        return tuple(sorted(v))
    if isinstance(v, list):
        return tuple(v)
    if isinstance(v, datetime):
        return (v.astimezone(UTC) if v.tzinfo else v.replace(tzinfo=UTC)).isoformat()
    if isinstance(v, date):
        return v.isoformat()
    return v


def canonical(data: pa.Table, columns: list[str]) -> Rows:
    """Rows of `columns`, order-free and comparable across readers."""
    rows = data.select(columns).to_pylist()
    return sorted((tuple(_value(r[c]) for c in columns) for r in rows), key=repr)
