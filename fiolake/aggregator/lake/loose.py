"""Rows of runs committed since the last compaction, kept merged on this machine.

Until the next `lake compact`, a night's campaign is per-run files: at 200 runs, 400
objects for `runs` and `results` alone. DuckDB reading them over S3 reads every footer to
bind a view (0.75 s at 100,000 compacted + 200 loose runs over TLS here) and the files
again for each query (0.35 s of `compare --campaign`); even from local disk, opening 200
small files costs 0.3 s. A committed run's files never change (a runner writes them
before its marker, under a run id no other attempt uses), so a connection loads the rows
of the loose files into an in-memory table once and keeps that table as one Parquet
file in the snapshot cache directory, with the keys it holds. The next connection reads
the kept file for the keys it still needs (the snapshot lists the lake every time: rows
of a file that vanished or was compacted are left out) and only new files from the lake.
Only for lakes on S3 (`lake.connect`): on a local file system there are no round trips
to save.

Written here, not found in a library: DuckDB's file caches live and die with one process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path

from fiolake.aggregator.lake.snapcache import lake_id
from fiolake.store import ObjectStore

LOCAL_LIMIT = 2_000  # loose files of one table, at most, loaded at connect (else in place)


def folder(cache: Path, store: ObjectStore) -> Path:
    """Where the kept rows of `store`'s loose files live below a cache directory."""
    return cache / f"loose-{hashlib.sha256(lake_id(store).encode()).hexdigest()[:32]}"


@dataclass(frozen=True)
class Kept:
    """The merged rows of one table's loose files that an earlier connection kept."""

    file: Path | None
    keys: frozenset[str]


def kept(where: Path, table: str) -> Kept:
    """What `where` keeps of `table` (nothing when absent or unreadable)."""
    try:
        state = json.loads((where / f"{table}.json").read_text())
        file = where / state["file"]
        if Path(state["file"]).name != state["file"] or not file.exists():
            return Kept(None, frozenset())
        return Kept(file, frozenset(state["keys"]))
    except (OSError, ValueError, KeyError, TypeError):
        return Kept(None, frozenset())


def new_file(where: Path, table: str) -> Path:
    """A fresh path to write `table`'s merged rows to, before `commit` names it."""
    where.mkdir(parents=True, exist_ok=True)
    return where / f"{table}-{secrets.token_hex(8)}.parquet"


def commit(where: Path, table: str, file: Path, keys: list[str]) -> None:
    """Name `file` (written completely) what `where` keeps of `table`, holding `keys`:
    the state is replaced atomically, then the files no state names are removed. A
    failure leaves the earlier state whole."""
    fd, tmp = tempfile.mkstemp(dir=where, prefix=".state.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump({"file": file.name, "keys": sorted(keys)}, fh)
        os.replace(tmp, where / f"{table}.json")
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _trim(where, table, file.name)


def _trim(where: Path, table: str, current: str) -> None:
    # Every other file of this table: replaced, or a concurrent writer's that lost the
    # race — but never the one the state names now (a concurrent writer's that won). A
    # reader of a removed file fails its load and reads the lake's files instead
    # (`lake._load_loose`); one that has it open keeps reading it (POSIX).
    named = kept(where, table).file
    for path in where.glob(f"{table}-*.parquet"):
        if path.name != current and path != named:
            with contextlib.suppress(OSError):
                path.unlink()
