"""Compaction manifests: which merged files replace which per-run files.

A manifest is a create-only JSON object `compacted/_manifests/g<generation>.json`
describing the whole compacted state of the lake; the highest generation wins.
Each generation is cumulative (it lists every partition ever compacted), so a
reader needs exactly one GET to know what to read instead of the small files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime

from fiolake import layout
from fiolake.errors import LakeError
from fiolake.store import ObjectStore

FORMAT = 1


@dataclass(frozen=True)
class Partition:
    """One table × month: the merged file and the run ids it holds (all their rows)."""

    table: str
    month: str  # YYYY-MM: the file holds the date= partitions of this month
    file: str  # object key of the merged Parquet file
    run_ids: frozenset[str]
    rows: int


@dataclass(frozen=True)
class Manifest:
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

    def to_bytes(self) -> bytes:
        """Canonical JSON bytes."""
        body = {
            "format": FORMAT,
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
    def from_bytes(cls, data: bytes, key: str) -> Manifest:
        """Parse a manifest; LakeError when it is malformed or of a newer format."""
        try:
            body = json.loads(data)
            if body["format"] != FORMAT:
                raise ValueError(f"format {body['format']} is not {FORMAT}")
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
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise LakeError(
                f"malformed compaction manifest {key}: {exc}; "
                "re-run `fiolake lake compact` to write a new generation"
            ) from exc


def now_iso() -> str:
    """Current UTC time, ISO 8601 with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def latest_generation(store: ObjectStore) -> int:
    """The newest manifest generation in the lake (0 when the lake was never compacted)."""
    generations = [layout.compaction_generation(k) for k in store.list(layout.MANIFESTS_PREFIX)]
    return max((g for g in generations if g is not None), default=0)


def latest_manifest(store: ObjectStore) -> Manifest | None:
    """The newest manifest, or None when the lake was never compacted."""
    generation = latest_generation(store)
    if generation == 0:
        return None
    key = layout.compaction_manifest_key(generation)
    data, _ = store.get(key)
    return Manifest.from_bytes(data, key)
