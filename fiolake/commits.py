"""Commit markers: the create-only object that names the run attempt that won a job.

The lake views read only run ids named here, so an attempt that uploaded results
but lost the commit race (or died before committing) never counts.

The commit log is an index over the markers, not a second source of truth: after
its marker, each writer puts a copy under `commit-log/`, keyed by the store's clock
at that moment (in a folder per hour, so a listing skips the hours before its start:
`layout.commit_log_key`). A compaction lists every marker and records when it started
(`commits_listed_at`); a reader then needs only the log entries from shortly before
that instant (`COMMIT_LOG_SLACK` covers the clock's 1 s resolution and request
latency) to find every marker the compaction could not have seen, because each
entry is written after its marker. A marker whose log entry is missing (an older
runner, a crash between the two PUTs) is found by the next compaction's full
listing, which then records no `commits_listed_at` until every new marker is logged.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from fiolake import layout
from fiolake.errors import PreconditionFailed
from fiolake.timetext import now_iso

if TYPE_CHECKING:  # the CLI imports this module for RERUNNABLE: keep it light
    from fiolake.store import ObjectStore


@dataclass(frozen=True)
class Commit:
    """Body of `commits/<job_id>.json`."""

    job_id: str
    run_id: str
    campaign_id: str
    runner: str
    status: str  # ok | failed | rejected | interrupted, as in the runs row
    committed_at: str  # ISO 8601 UTC
    reason: str = ""  # why a run failed or was rejected (short; the runs row has it all)
    # A gang job's member runs in slot order (run_id is the first); omitted when empty,
    # so solo markers stay byte-identical to those of earlier versions.
    members: tuple[str, ...] = ()

    def to_bytes(self) -> bytes:
        """Canonical JSON bytes (sorted keys) written create-only."""
        body = asdict(self)
        if not self.members:
            del body["members"]
        else:
            body["members"] = list(self.members)
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()

    @property
    def run_ids(self) -> tuple[str, ...]:
        """Every run this marker commits: a gang's members, else the one run."""
        return self.members or (self.run_id,)

    @classmethod
    def from_bytes(cls, data: bytes) -> Commit:
        """Parse a marker; raises ValueError on anything malformed."""
        later = ("reason", "members")  # came later: markers without them are still markers
        try:
            obj = json.loads(data)
            fields = {k: obj[k] for k in cls.__dataclass_fields__ if k not in later or k in obj}
            members = fields.get("members", ())
            if not isinstance(members, list | tuple) or not all(
                isinstance(m, str) for m in members
            ):
                raise ValueError("members is not a list of run ids")
            fields["members"] = tuple(members)
            return cls(**fields)
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"malformed commit marker: {exc}") from exc


REASON_CHARS = 300
# Ended states a campaign's jobs can be re-run from (`fiolake publish --rerun`).
RERUNNABLE = ("rejected", "failed", "interrupted")


def new_commit(
    job_id: str,
    run_id: str,
    campaign_id: str,
    runner: str,
    status: str,
    reason: str = "",
    members: tuple[str, ...] = (),
) -> Commit:
    """A marker stamped with the current UTC time."""
    return Commit(
        job_id, run_id, campaign_id, runner, status, now_iso(), reason[:REASON_CHARS], members
    )


COMMIT_LOG_SLACK = timedelta(minutes=5)


def log_commit(store: ObjectStore, commit: Commit) -> str:
    """Put the commit-log entry of a marker already written; returns its key.

    Keyed by the store's clock now, so the entry sorts after every compaction that
    started before the marker existed. Idempotent: a retry writes a second entry for
    the same job, which readers fold by job id.
    """
    key = layout.commit_log_key(store.server_time(), commit.job_id)
    try:
        store.put(key, commit.to_bytes(), if_none_match=True)
    except PreconditionFailed:
        pass  # a retried request already wrote it
    return key


def logged_job_ids(store: ObjectStore, since: datetime | None) -> set[str]:
    """Job ids with a commit-log entry written at or after `since` - COMMIT_LOG_SLACK
    (every entry when `since` is None)."""
    start = None if since is None else layout.commit_log_start(since - COMMIT_LOG_SLACK)
    # The listing skips the hours before `start`, not the entries of its own hour before it.
    entries = map(
        layout.parse_commit_log_key, store.list(layout.COMMIT_LOG_PREFIX, start_after=start)
    )
    return {e[1] for e in entries if e is not None and (start is None or e[0] > start)}
