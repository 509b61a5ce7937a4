"""The run ids a compaction generation's tables cover: read from the Parquet object beside
a format-3 record, cut back into each table's ids, or left for later (`LazyIds`).

At a year (1,000,000 runs) they are 5,000,000 ids, a quarter of a first connect; a
reader whose tables all cover the commit index never needs them (issue 44).
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from fiolake.errors import LakeError, NotFound
from fiolake.store import ObjectStore


class LazyIds:
    """A state's covered ids not read yet: the count the record gives, and how to read
    them (`covered_ids_later`)."""

    __slots__ = ("count", "read")

    def __init__(self, count: int, read: Callable[[], pa.Array]) -> None:
        self.count = count
        self.read = read

    def __len__(self) -> int:
        return self.count


def string_array(ids: pa.Array | pa.ChunkedArray) -> pa.Array:
    """`ids` as one plain string array: states compare by their ids (`compact` writes a
    new generation only when a state changed)."""
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    return ids if ids.type == pa.string() else ids.cast(pa.string())


# Each table's covered ids, read or left for later.
IdsByTable = dict[str, pa.Array] | dict[str, LazyIds]


class CoveredIdsMissing(LakeError):
    """A record's covered-ids object is gone: removed with its generation by a compaction's
    cleanup just after this reader listed it (read the newer one), or deleted by hand."""


def no_ids() -> pa.Array:
    """An empty array of ids (`pa.array([])` would import pandas: 0.12 s)."""
    return pa.nulls(0, pa.string())


def _split_ids(data: bytes, tables: list[dict]) -> dict[str, pa.Array]:
    """The covered-ids object cut into each table's ids (`split_ids`)."""
    return split_ids(pq.ParquetFile(io.BytesIO(data)).read(columns=["key"]).column("key"), tables)


def split_ids(ids: pa.ChunkedArray, tables: list[dict]) -> dict[str, pa.Array]:
    """`ids_in_order()` cut back into each table's ids: written table by table in the
    body's order, so slices by its counts (no filter per table); ValueError when the
    counts do not add up."""
    counted = sum(d["key_count"] for d in tables)
    if len(ids) != counted:
        raise ValueError(f"it holds {len(ids)} ids where the record counts {counted}")
    out, start = {}, 0
    for d in tables:
        out[d["table"]] = ids.slice(start, d["key_count"]).combine_chunks()
        start += d["key_count"]
    return out


def covered_ids(store: ObjectStore, key: str, body: dict) -> dict[str, pa.Array]:
    """The covered ids of format-3 record `body` (under `key`), read from the object it
    names; CoveredIdsMissing when that object is gone, LakeError when unreadable."""
    ids_key = body["keys_file"]
    try:
        return _split_ids(store.get(ids_key)[0], body["delta"])
    except (NotFound, ValueError, pa.ArrowException) as exc:
        missing = isinstance(exc, NotFound)
        what = "is missing" if missing else f"is unreadable ({exc})"
        error = CoveredIdsMissing if missing else LakeError
        raise error(
            f"malformed compaction generation {key}: its covered-ids object "
            f"{ids_key} {what}; `fiolake lake compact` reads them from the "
            "compacted tables and writes a whole generation"
        ) from None


def covered_ids_later(store: ObjectStore, key: str, body: dict) -> dict[str, LazyIds]:
    """`covered_ids`, read (once, for every table) when a table's ids are first asked."""

    @functools.cache
    def read() -> dict[str, pa.Array]:
        return covered_ids(store, key, body)

    def table_ids(table: str) -> Callable[[], pa.Array]:
        return lambda: read()[table]

    return {d["table"]: LazyIds(d["key_count"], table_ids(d["table"])) for d in body["delta"]}
