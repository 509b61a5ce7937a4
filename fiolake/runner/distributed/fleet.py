"""A runner tells the fleet page it is alive: a status object at start, when it takes and
finishes a job, and every IDLE_EVERY_S while idle (an idle runner wrote nothing before)."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable

from fiolake import layout
from fiolake.errors import StoreError
from fiolake.fleet import IDLE, IDLE_EVERY_S, RUNNING, STARTING, STOPPED, RunnerStatus
from fiolake.store import ObjectStore
from fiolake.timetext import now_iso

log = logging.getLogger("fiolake.runner")


def _now() -> str:
    return now_iso()


class FleetStatus:
    """Writes one runner's status object; never lets a store problem stop the runner."""

    def __init__(
        self,
        store: ObjectStore,
        runner: str,
        backend: str,
        labels: dict[str, str],
        counts: Callable[[], dict[str, int]],
        every_s: float = IDLE_EVERY_S,
    ):
        self.store, self.runner, self.backend, self.labels = store, runner, backend, labels
        self.counts = counts
        self.every_s = every_s
        self.started_at = _now()
        self.host = socket.gethostname()
        self._last = float("-inf")

    def publish(self, state: str, job_id: str | None = None, ttl_s: float | None = None) -> None:
        """Write the status now."""
        status = RunnerStatus(
            self.runner, self.host, self.backend, state, self.started_at, _now(),
            self.counts(), job_id, ttl_s, dict(self.labels),
        )  # fmt: skip
        try:
            self.store.put(layout.fleet_key(self.runner), status.to_bytes())
            self._last = time.monotonic()
        except StoreError as exc:
            log.warning("cannot publish runner status: %s", exc)

    def start(self) -> None:
        self.publish(STARTING)

    def job(self, job_id: str, ttl_s: float) -> None:
        self.publish(RUNNING, job_id, ttl_s)

    def idle(self, did_work: bool) -> None:
        """After a pass over open jobs: publish if work was done or it is time to."""
        if did_work or time.monotonic() - self._last >= self.every_s:
            self.publish(IDLE)

    def stop(self) -> None:
        self.publish(STOPPED)
