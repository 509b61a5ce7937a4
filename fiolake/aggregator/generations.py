"""Compaction generations: which compacted files replace which per-run files.

A generation record is a create-only JSON object `compacted/_manifests/g<generation>.json`
describing the whole compacted state of the lake; the highest generation wins, and it is
the one switch fiolake's views see (the Delta tables are committed one by one). The key
keeps the name it had when these were called manifests, so existing lakes read;
"manifest" now means only a signed job manifest (`fiolake.manifest`).
Each generation is cumulative, so a reader needs exactly one GET to know what to read
instead of the small files.

Format 2 (Delta Lake): per table, the Delta version, its data files and the run ids
they hold. Format 1 (before Delta): per table × month, one merged file of our own, plus
a commit index file; still read, and folded into Delta by the next compaction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from fiolake import layout
from fiolake.errors import LakeError
from fiolake.store import ObjectStore

FORMAT = 2
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
    keys: frozenset[str]  # run ids (job ids for commits) whose rows the files hold
    rows: int


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
    delta: dict[str, DeltaState] = field(default_factory=dict)  # format 2: table -> state
    format: int = FORMAT

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

    def to_bytes(self) -> bytes:
        """Canonical JSON bytes (format 2: Delta states)."""
        body = {
            "format": FORMAT,
            "generation": self.generation,
            "created_at": self.created_at,
            "commits": self.commits,
            "commits_listed_at": self.commits_listed_at,
            "delta": [
                {
                    "table": d.table,
                    "version": d.version,
                    "files": list(d.files),
                    "rows": d.rows,
                    "keys": sorted(d.keys),
                }
                for _, d in sorted(self.delta.items())
            ],
        }
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()

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
    def from_bytes(cls, data: bytes, key: str) -> Generation:
        """Parse a generation record; LakeError when it is malformed or of a newer format."""
        try:
            body = json.loads(data)
            if body["format"] == FORMAT:
                return cls._from_body(body)
            if body["format"] != LEGACY_FORMAT:
                raise ValueError(f"format {body['format']} is not {FORMAT} or {LEGACY_FORMAT}")
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
        except (ValueError, KeyError, TypeError) as exc:
            raise LakeError(
                f"malformed compaction generation {key}: {exc}; "
                "re-run `fiolake lake compact` to write a new generation"
            ) from exc

    @classmethod
    def _from_body(cls, body: dict) -> Generation:
        delta = {
            d["table"]: DeltaState(
                d["table"], d["version"], tuple(d["files"]), frozenset(d["keys"]), d["rows"]
            )
            for d in body["delta"]
        }
        return cls(
            body["generation"],
            body["created_at"],
            None,
            body["commits"],
            commits_listed_at=body["commits_listed_at"],
            delta=delta,
        )


def latest_generation_number(store: ObjectStore) -> int:
    """The number of the lake's newest generation (0 when the lake was never compacted)."""
    generations = [layout.compaction_generation(k) for k in store.list(layout.GENERATIONS_PREFIX)]
    return max((g for g in generations if g is not None), default=0)


def latest_generation(store: ObjectStore) -> Generation | None:
    """The newest generation, or None when the lake was never compacted."""
    generation = latest_generation_number(store)
    if generation == 0:
        return None
    key = layout.generation_key(generation)
    data, _ = store.get(key)
    return Generation.from_bytes(data, key)
