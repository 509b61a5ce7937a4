"""A local spool so a finished run survives an object store outage or a runner crash.

Every object of an attempt (raw output, Parquet, then the commit marker) is written
here first; the spool entry is removed only after the commit is settled. A runner
drains leftover entries when it starts.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

from fiolake.errors import StoreUnavailable, UsageProblem
from fiolake.store import ObjectStore

log = logging.getLogger("fiolake.runner")


@dataclass(frozen=True)
class SpoolEntry:
    """One attempt waiting to be uploaded and committed."""

    path: Path
    run_id: str
    meta: dict[str, str]  # job_id, campaign_id, runner, status

    def objects(self) -> Iterator[tuple[str, bytes]]:
        for file in sorted((self.path / "objects").iterdir()):
            yield unquote(file.name), file.read_bytes()


class Spool:
    """Directory of pending attempts, one subdirectory per run id."""

    def __init__(self, root: Path):
        """Open (create) the spool at `root`; UsageProblem when it cannot be written, so a
        runner refuses at start rather than failing its first job after fio ran."""
        self.root = root
        try:
            root.mkdir(parents=True, exist_ok=True)
            if not os.access(root, os.W_OK | os.X_OK):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        except OSError as exc:
            raise UsageProblem(
                f"cannot use the spool directory {root}: {exc.strerror} — give --spool-dir "
                "DIR where this user may create and write files"
            ) from None

    def add(self, run_id: str, objects: dict[str, bytes], meta: dict[str, str]) -> SpoolEntry:
        """Persist an attempt's objects before any upload (atomic rename into place)."""
        tmp = self.root / f".{run_id}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        (tmp / "objects").mkdir(parents=True)
        for key, data in objects.items():
            (tmp / "objects" / quote(key, safe="")).write_bytes(data)
        (tmp / "meta.json").write_text(json.dumps(meta))
        final = self.root / run_id
        tmp.rename(final)
        return SpoolEntry(final, run_id, meta)

    def pending(self) -> list[SpoolEntry]:
        """Entries left by an earlier run of this runner (or a failed upload)."""
        out = []
        for path in sorted(self.root.iterdir()):
            if path.name.startswith(".") or not (path / "meta.json").exists():
                continue
            out.append(SpoolEntry(path, path.name, json.loads((path / "meta.json").read_text())))
        return out

    def remove(self, entry: SpoolEntry) -> None:
        shutil.rmtree(entry.path, ignore_errors=True)


def put_with_retry(
    store: ObjectStore, key: str, data: bytes, *, deadline_s: float, create_only: bool = False
) -> None:
    """PUT until it succeeds or `deadline_s` passes (MinIO restarting, network blips).

    A create-only PUT that finds the key already there is left for the caller
    (PreconditionFailed propagates); only StoreUnavailable (outages, 5xx) is retried with
    backoff: access denied or a refused request fails at once.
    """
    end = time.monotonic() + deadline_s
    delay = 0.2
    while True:
        try:
            store.put(key, data, if_none_match=create_only)
            return
        except StoreUnavailable as exc:
            if time.monotonic() + delay > end:
                raise
            log.warning("upload of %s failed (%s); retrying", key, exc)
            time.sleep(delay)
            delay = min(delay * 2, 5.0)
