"""The status object each runner publishes under `layout.fleet_key`: who it is, where it
runs, what it has done and what it holds now. Written by fiolake.runner.distributed.fleet, read by
fiolake.aggregator.rows.fleet; this module owns its shape."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

STARTING, RUNNING, IDLE, STOPPED = "starting", "running", "idle", "stopped"
IDLE_EVERY_S = 180.0  # an idle runner says it is alive this often


@dataclass(frozen=True)
class RunnerStatus:
    """One runner's latest word about itself (times ISO 8601 UTC, runner's clock)."""

    runner: str
    host: str
    backend: str
    state: str  # starting | running | idle | stopped
    started_at: str
    at: str  # when this status was written
    jobs: dict[str, int] = field(default_factory=dict)  # ok / failed / rejected / lost
    job_id: str | None = None  # the job it holds a lease on (state running)
    lease_ttl_s: float | None = None
    labels: dict[str, str] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> RunnerStatus:
        """Parse a status object; ValueError when it is not one."""
        try:
            raw: dict[str, Any] = json.loads(data)
            known = {k: raw[k] for k in cls.__dataclass_fields__ if k in raw}
            return cls(**known)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"not a runner status: {exc}") from exc
