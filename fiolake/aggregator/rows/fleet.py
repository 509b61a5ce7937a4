"""The fleet of runners as their status objects tell it (fiolake.fleet), aged by the
store's clock so a runner's own skewed clock cannot make it look alive."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from fiolake import layout
from fiolake.aggregator.lake.lake import Lake
from fiolake.errors import NotFound, StoreError
from fiolake.fleet import IDLE_EVERY_S, STOPPED, RunnerStatus

log = logging.getLogger("fiolake.aggregator")
SILENT_AFTER_S = 2 * IDLE_EVERY_S + 60  # two missed idle updates: presumed gone


@dataclass(frozen=True)
class FleetMember:
    """One runner's latest status and how long ago the store received it."""

    status: RunnerStatus
    last_seen: datetime  # the status object's Last-Modified (store clock)
    age_s: float  # store time now − last_seen

    @property
    def alive(self) -> bool:
        return self.status.state != STOPPED and self.age_s <= SILENT_AFTER_S


def fleet(lake: Lake) -> tuple[list[FleetMember], list[str]]:
    """(runners, newest first by last seen; problems with unreadable status objects)."""
    members, problems = [], []
    try:
        keys = list(lake.store.list(layout.FLEET_PREFIX))
    except StoreError as exc:
        return [], [f"cannot list {layout.FLEET_PREFIX}: {exc}"]
    for key in keys:
        try:
            data, info = lake.store.get(key)
            status = RunnerStatus.from_bytes(data)
        except NotFound:
            continue
        except (StoreError, ValueError) as exc:
            problems.append(f"{key}: {exc}")
            continue
        age = (info.server_time - info.last_modified).total_seconds()
        members.append(FleetMember(status, info.last_modified, max(0.0, age)))
    members.sort(key=lambda m: m.last_seen, reverse=True)
    return members, problems
