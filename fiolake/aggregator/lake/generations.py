"""Compaction generations: which compacted files replace which per-run files.

A generation record is a create-only JSON object `compacted/_manifests/g<generation>.json`
describing the whole compacted state of the lake; the highest generation wins, and it is
the one switch fiolake's views see (the Delta tables are committed one by one). The key
keeps the name it had when these were called manifests, so existing lakes read;
"manifest" now means only a signed job manifest (`fiolake.manifest`).
Each generation is cumulative, so a reader needs exactly one GET to know what to read
instead of the small files.

Format 3 (Delta Lake): per table, the Delta version and its data files; the run ids
(job ids for `commits`) each table holds are in a Parquet object beside the record,
which the record names. At 100,000 runs those ids are 500,000 strings: as JSON (format
2, which listed them inline) a reader spent ~0.1 s parsing them into Python sets and
~0.45 s more turning sets back into Arrow to compare them with the commit index; from
Parquet they arrive as Arrow arrays, which is what the snapshot compares in.
Format 2 is still read (its ids become Arrow as the record is parsed, which imports
pandas) and the next compaction rewrites it as format 3, even with nothing new. Format 1
(before Delta): per table × month, one merged file of our own, plus a commit index file;
still read, and folded into Delta by the next compaction.
"""

from __future__ import annotations

import dataclasses
import io
import json
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property

import pyarrow as pa
import pyarrow.parquet as pq

from fiolake import layout
from fiolake.aggregator.lake.coveredids import (
    CoveredIdsMissing,
    IdsByTable,
    LazyIds,
    covered_ids,
    covered_ids_later,
    no_ids,
    string_array,
)
from fiolake.errors import LakeError
from fiolake.store import ObjectInfo, ObjectStore

FORMAT = 3
INLINE_KEYS_FORMAT = 2  # Delta, with the covered ids inline in the JSON
LEGACY_FORMAT = 1


@dataclass(frozen=True)
class Partition:
    """One table × month: the merged file and the run ids it holds (all their rows)."""

    table: str
    month: str  # YYYY-MM: the file holds the date= partitions of this month
    file: str  # object key of the merged Parquet file
    run_ids: frozenset[str]
    rows: int


@dataclass(frozen=True)
class DeltaState:
    """One Delta table at the version a compaction left it: its files and what they hold."""

    table: str  # a lake table, or "commits"
    version: int
    files: tuple[str, ...]  # object keys of the data files of that version
    # The run ids (job ids for commits) the table covers: their rows were appended (a run
    # without rows here counts too; `lake prune` deletes rows, not the coverage). In the
    # order compactions added them, each one's sorted: a night appends to a year's ids
    # without sorting the year again (issue 44).
    key_source: pa.Array | LazyIds = field(compare=False, repr=False)  # see `key_array`
    rows: int = 0
    # Every run of the generation's commit index is covered (its rows appended, or it had
    # none here): readers then look for loose files only among the commits since, instead
    # of comparing a year's committed ids with a year's covered ids per table (issue 44).
    # False for a table a compaction left out (`--table`), and in records before it.
    covers_index: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.key_source, LazyIds):
            object.__setattr__(self, "key_source", string_array(self.key_source))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DeltaState):
            return NotImplemented
        return (
            (self.table, self.version, self.files, self.rows, self.covers_index, self.key_count)
            == (other.table, other.version, other.files, other.rows, other.covers_index,
                other.key_count)
            and self.key_array.equals(other.key_array)
        )  # fmt: skip

    @cached_property
    def key_array(self) -> pa.Array:
        """The covered ids, read now if the record left them for later (`LazyIds`)."""
        source = self.key_source
        return string_array(source.read()) if isinstance(source, LazyIds) else source

    @property
    def key_count(self) -> int:
        """How many ids the table covers (without reading them)."""
        return len(self.key_source)

    @property
    def ids_read(self) -> bool:
        """Whether the covered ids are in memory (never left for later, or read since)."""
        return not isinstance(self.key_source, LazyIds) or "key_array" in self.__dict__

    @classmethod
    def of(
        cls, table: str, version: int, files: Iterable[str], keys: Iterable[str], rows: int
    ) -> DeltaState:
        """A state from Python values (compaction; building the array imports pandas)."""
        return cls(table, version, tuple(files), pa.array(sorted(keys), pa.string()), rows)

    @cached_property
    def keys(self) -> frozenset[str]:
        """The covered ids as a set (for asking id by id; readers and compaction use
        `key_array`, in Arrow)."""
        return frozenset(self.key_array.to_pylist())


@dataclass(frozen=True)
class Generation:
    """The compacted state of the lake as of one compaction generation."""

    generation: int
    created_at: str
    commits_file: str | None  # commit markers known at that time, as Parquet
    commits: int
    partitions: dict[tuple[str, str], Partition] = field(default_factory=dict)  # (table, month)
    # Store time when this compaction began listing `commits/`, set only when every
    # marker new since the previous generation had its commit-log entry: readers then
    # find later commits in the commit log instead of listing every marker.
    commits_listed_at: str | None = None
    delta: dict[str, DeltaState] = field(default_factory=dict)  # formats 2, 3: table -> state
    # Store time when the newest compaction that listed every commit marker began (a
    # compaction lists them only now and then: `compact.FULL_LISTING_EVERY`); None when
    # none recorded it (a record written before this field).
    markers_listed_at: str | None = None
    format: int = FORMAT
    keys_file: str | None = None  # format 3, as read: the covered-ids object the record names
    mended: bool = False  # read with its covered ids rebuilt: compaction writes a new one
    # The case summaries (`cases`): their object and how many of the night summaries'
    # covered runs they fold (the first that many); None before they existed.
    cases_file: str | None = None
    cases_runs: int = 0
    # Compacted runs that are gang members (runs.gang_size); None where not counted.
    gang_runs: int | None = None

    @property
    def legacy(self) -> bool:
        """Written before Delta Lake: merged files of our own (`partitions`)."""
        return self.format == LEGACY_FORMAT

    def covered(self, table: str) -> frozenset[str]:
        """Run ids whose `table` rows the compacted files hold."""
        if not self.legacy:
            state = self.delta.get(table)
            return state.keys if state else frozenset()
        parts = [p.run_ids for (t, _), p in self.partitions.items() if t == table]
        return frozenset().union(*parts)

    def covered_array(self, table: str) -> pa.Array:
        """`covered(table)` as a sorted Arrow array (for Arrow's set lookups)."""
        if self.legacy:
            return pa.array(sorted(self.covered(table)), pa.string())
        state = self.delta.get(table)
        return state.key_array if state else no_ids()

    def files(self, table: str) -> list[str]:
        """Compacted files of `table` (they carry a `date` column of their own)."""
        if not self.legacy:
            state = self.delta.get(table)
            return list(state.files) if state else []
        return [p.file for (t, _), p in sorted(self.partitions.items()) if t == table]

    def commit_files(self) -> list[str]:
        """Files holding the commit markers known to this generation."""
        if self.legacy:
            return [self.commits_file] if self.commits_file else []
        return self.files("commits")

    def objects(self, token: str | None = None) -> list[tuple[str, bytes]]:
        """The (key, bytes) this generation is stored as, in the order to create them:
        the covered ids (Parquet, `token` names it: default random), then the record."""
        states = [d for _, d in sorted(self.delta.items())]
        keys_key = layout.generation_keys_key(self.generation, token or uuid.uuid4().hex[:16])
        ids = pa.table(
            {
                # Repeated in Arrow: a Python list of 8,000,000 names took 0.2 s at a year.
                "table": pa.concat_arrays(
                    [no_ids()]
                    + [pa.repeat(d.table, len(d.key_array)).cast(pa.string()) for d in states]
                ),
                "key": self.ids_in_order(),
            }
        )
        out = io.BytesIO()
        pq.write_table(ids, out, compression="zstd")
        record = json.dumps(self.body(keys_key, FORMAT), sort_keys=True, separators=(",", ":"))
        return [
            (keys_key, out.getvalue()),
            (layout.generation_key(self.generation), record.encode()),
        ]

    def body(self, keys_file: str | None, fmt: int) -> dict:
        """The record's JSON body in format 3's shape (`from_body` reads it back): the
        Delta states in table order, each with the count of its ids; the ids themselves
        are `ids_in_order()`, kept beside it (`keys_file`, or a snapshot cache's batch)."""
        return {
            "format": fmt,
            "generation": self.generation,
            "created_at": self.created_at,
            "commits": self.commits,
            "commits_listed_at": self.commits_listed_at,
            "markers_listed_at": self.markers_listed_at,
            "keys_file": keys_file,
            "cases": {"file": self.cases_file, "runs": self.cases_runs}
            if self.cases_file
            else None,
            "gang_runs": self.gang_runs,
            "delta": [
                {
                    "table": d.table,
                    "version": d.version,
                    "files": list(d.files),
                    "rows": d.rows,
                    "key_count": d.key_count,
                    "covers_index": d.covers_index,
                }
                for _, d in sorted(self.delta.items())
            ],
        }

    def ids_in_order(self) -> pa.Array:
        """Every state's covered ids, one after another in `body()`'s table order."""
        return pa.concat_arrays([no_ids(), *(d.key_array for _, d in sorted(self.delta.items()))])

    def legacy_bytes(self) -> bytes:
        """Format 1 JSON bytes (tests build lakes of the earlier layout with it)."""
        body = {
            "format": LEGACY_FORMAT,
            "generation": self.generation,
            "created_at": self.created_at,
            "commits_file": self.commits_file,
            "commits": self.commits,
            "commits_listed_at": self.commits_listed_at,
            "partitions": [
                {
                    "table": p.table,
                    "month": p.month,
                    "file": p.file,
                    "rows": p.rows,
                    "run_ids": sorted(p.run_ids),
                }
                for _, p in sorted(self.partitions.items())
            ],
        }
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(
        cls, data: bytes, key: str, ids: Callable[[dict], IdsByTable] | None = None
    ) -> Generation:
        """Parse a generation record; LakeError when it is malformed or of a newer format.
        `ids` reads the covered ids a format-3 record names (`read_generation`)."""
        try:
            body = json.loads(data)
            if body["format"] == FORMAT:
                if ids is None:
                    raise ValueError("a format-3 record needs its covered-ids object")
                return cls.from_body(body, ids(body))
            if body["format"] == INLINE_KEYS_FORMAT:
                inline = {d["table"]: pa.array(d["keys"], pa.string()) for d in body["delta"]}
                return cls.from_body(body, inline)
            if isinstance(body["format"], int) and body["format"] > FORMAT:
                raise LakeError(
                    f"compaction generation {key} is of format {body['format']}, written by a "
                    f"newer fiolake (this one reads formats 1 to {FORMAT}) — upgrade fiolake "
                    "here (readers before the compactor)"
                )
            if body["format"] != LEGACY_FORMAT:
                raise ValueError(f"format {body['format']} is not {FORMAT}, 2 or {LEGACY_FORMAT}")
            parts = {}
            for p in body["partitions"]:
                part = Partition(
                    p["table"], p["month"], p["file"], frozenset(p["run_ids"]), p["rows"]
                )
                parts[(part.table, part.month)] = part
            return cls(
                body["generation"],
                body["created_at"],
                body["commits_file"],
                body["commits"],
                parts,
                body.get("commits_listed_at"),  # absent before the commit log
                format=LEGACY_FORMAT,
            )
        except (ValueError, KeyError, TypeError, pa.ArrowException) as exc:
            raise LakeError(
                f"malformed compaction generation {key}: {exc}; "
                "re-run `fiolake lake compact` to write a new generation"
            ) from exc

    @classmethod
    def from_body(cls, body: dict, ids: IdsByTable) -> Generation:
        """The generation a format-2 or -3 body describes, with each table's ids."""
        delta = {
            d["table"]: DeltaState(
                d["table"],
                d["version"],
                tuple(d["files"]),
                ids[d["table"]],
                d["rows"],
                d.get("covers_index", False),
            )
            for d in body["delta"]
        }
        return cls(
            body["generation"],
            body["created_at"],
            None,
            body["commits"],
            commits_listed_at=body["commits_listed_at"],
            markers_listed_at=body.get("markers_listed_at"),  # absent before issue 44
            delta=delta,
            format=body["format"],
            keys_file=body.get("keys_file"),
            cases_file=(body.get("cases") or {}).get("file"),  # absent before case summaries
            cases_runs=(body.get("cases") or {}).get("runs", 0),
            gang_runs=body.get("gang_runs"),  # absent before it was counted
        )


# Compaction's way to mend a record whose covered ids are gone: (table, files) -> the ids
# the rows of those files belong to (`delta.keys_in`).
IdsOf = Callable[[str, list[str]], set[str]]


def read_generation(
    store: ObjectStore, key: str, ids_of: IdsOf | None = None, *, reader: bool = False
) -> tuple[Generation, ObjectInfo]:
    """The generation record under `key` (and what the store says of it), with the
    covered-ids object it names. When that object is missing or unreadable: LakeError,
    unless `ids_of` reads the ids from the tables' files instead (compaction, which then
    writes a whole generation: `Generation.mended`). A `reader` of a record whose every
    table covers its commit index gets the ids only if it asks (`LazyIds`)."""
    data, info = store.get(key)
    mended = False

    def ids(body: dict) -> IdsByTable:
        nonlocal mended
        if reader and all(d.get("covers_index") for d in body["delta"]):
            return covered_ids_later(store, key, body)
        try:
            return covered_ids(store, key, body)
        except LakeError:
            if ids_of is None:  # from_bytes passes a LakeError on as it is
                raise
        mended = True
        return {
            d["table"]: pa.array(sorted(ids_of(d["table"], d["files"])), pa.string())
            for d in body["delta"]
        }

    record = Generation.from_bytes(data, key, ids)
    if not mended:
        return record, info
    # Ids read from the files lack the runs that had no rows there: no longer the index's.
    states = {t: dataclasses.replace(d, covers_index=False) for t, d in record.delta.items()}
    return dataclasses.replace(record, mended=True, delta=states), info


def write_generation(store: ObjectStore, record: Generation) -> None:
    """Create `record`'s objects, the record last and create-only (PreconditionFailed when
    another writer created that generation first). The covered ids go first under a name
    of their own (a random token): a plain PUT, which a retry after a lost answer repeats
    harmlessly where create-only would answer 412."""
    (ids_key, ids), (record_key, body) = record.objects()
    store.put(ids_key, ids)
    store.put(record_key, body, if_none_match=True)


def latest_generation_number(store: ObjectStore) -> int:
    """The number of the lake's newest generation (0 when the lake was never compacted)."""
    generations = [layout.compaction_generation(k) for k in store.list(layout.GENERATIONS_PREFIX)]
    return max((g for g in generations if g is not None), default=0)


def latest_generation(store: ObjectStore, ids_of: IdsOf | None = None) -> Generation | None:
    """The newest generation, or None when the lake was never compacted (`ids_of`: see
    `read_generation`)."""
    generation = latest_generation_number(store)
    while generation:
        try:
            return read_generation(store, layout.generation_key(generation), ids_of)[0]
        except CoveredIdsMissing:
            newer = latest_generation_number(store)
            if newer <= generation:
                raise
            generation = newer  # cleaned up behind a newer generation: read that one
    return None
