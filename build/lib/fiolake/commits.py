"""Commit markers: the create-only object that names the run attempt that won a job.

The lake views read only run ids named here, so an attempt that uploaded results
but lost the commit race (or died before committing) never counts.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime


@dataclass(frozen=True)
class Commit:
    """Body of `commits/<job_id>.json`."""

    job_id: str
    run_id: str
    campaign_id: str
    runner: str
    status: str  # ok | failed | rejected, as in the runs row
    committed_at: str  # ISO 8601 UTC

    def to_bytes(self) -> bytes:
        """Canonical JSON bytes (sorted keys) written create-only."""
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Commit:
        """Parse a marker; raises ValueError on anything malformed."""
        try:
            obj = json.loads(data)
            return cls(**{k: obj[k] for k in cls.__dataclass_fields__})
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"malformed commit marker: {exc}") from exc


def new_commit(job_id: str, run_id: str, campaign_id: str, runner: str, status: str) -> Commit:
    """A marker stamped with the current UTC time."""
    now = datetime.now(UTC).isoformat(timespec="milliseconds")
    return Commit(job_id, run_id, campaign_id, runner, status, now)
