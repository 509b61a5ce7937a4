"""Gang jobs on object storage: N runners meet, start at one instant, commit once.

Everything lives under `gangs/<job_id>/a<attempt>/` (fiolake.layout) and every write
is create-only or a CAS on the writer's own lease:

- `slot-<i>.json`: member i's lease, created once (never taken over) and renewed while
  the member waits, runs and uploads. A slot not renewed within its TTL, by the store's
  clock, means a dead member: the attempt fails as a whole.
- `start.json`: the instant, by the store's clock, when every member starts fio; the
  first member to see all N slots held fixes it, the others read it.
- `done-<i>.json`: member i uploaded run <run_id>; when all N exist, the job's commit
  marker names the N runs (fiolake.commits, `members`).
- `failed.json`: the attempt failed (a member died or lost its slot); the next one,
  with fresh slots, starts at attempt + 1.

The protocol and its failure cases: docs/gangs.md.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from fiolake import layout
from fiolake.errors import NotFound, PreconditionFailed
from fiolake.lease import Lease, create_lease, is_expired, read_lease
from fiolake.store import ObjectInfo, ObjectStore


@dataclass(frozen=True)
class GangStart:
    """Body of `start.json`."""

    start_at: float  # POSIX seconds by the store's clock
    runners: tuple[str, ...]  # slot holders when the start was fixed, in slot order
    fixed_by: str


@dataclass(frozen=True)
class MemberDone:
    """Body of `done-<i>.json`: what one member ran and when it really started."""

    slot: int
    runner: str
    run_id: str
    status: str  # the member run's status (ok | failed | ...)
    reason: str
    started_at: float  # fio started, POSIX seconds by the store's clock
    skew_s: float  # started_at − GangStart.start_at


def _read_json(store: ObjectStore, key: str) -> dict[str, Any] | None:
    try:
        body = json.loads(store.get(key)[0])
    except NotFound:
        return None
    if not isinstance(body, dict):
        raise ValueError(f"{key} holds no JSON object")
    return body


def _create(store: ObjectStore, key: str, body: dict[str, Any]) -> bool:
    """Create-only PUT; False when the object exists already."""
    try:
        store.put(key, json.dumps(body, sort_keys=True).encode(), if_none_match=True)
        return True
    except PreconditionFailed:
        return False


def current_attempt(store: ObjectStore, job_id: str) -> int:
    """The attempt runners join now: the newest one unless it failed, then the next."""
    attempts = [
        a
        for a in map(
            layout.gang_attempt_from_child, store.list_children(layout.gang_prefix(job_id))
        )
        if a is not None
    ]
    newest = max(attempts, default=0)
    if newest == 0:
        return 1
    return newest + 1 if failure(store, job_id, newest) is not None else newest


@dataclass(frozen=True)
class HeldSlot:
    """A held slot of an attempt: its member's lease, and the lease object's metadata,
    whose modification time is the store's clock (what expiry is judged by)."""

    lease: Lease
    info: ObjectInfo

    @property
    def expired(self) -> bool:
        """The holder stopped renewing (or released), by the store's clock."""
        return is_expired(self.lease, self.info)


def slots(store: ObjectStore, job_id: str, attempt: int, size: int) -> dict[int, HeldSlot]:
    """The held slots of an attempt, by slot number."""
    held = {}
    for slot in range(size):
        found = read_lease(store, job_id, layout.gang_slot_key(job_id, attempt, slot))
        if found is not None:
            lease, info = found
            held[slot] = HeldSlot(lease, info)
    return held


def claim_slot(
    store: ObjectStore, job_id: str, attempt: int, size: int, runner: str, ttl_s: float
) -> tuple[int, Lease] | None:
    """Create the first free slot's lease: (slot, lease), or None when the gang is full
    or `runner` already holds a slot of it (a runner never holds two)."""
    held = slots(store, job_id, attempt, size)
    if any(h.lease.runner == runner for h in held.values()):
        return None
    for slot in range(size):
        if slot in held:
            continue
        place = layout.gang_slot_key(job_id, attempt, slot)
        lease = create_lease(store, job_id, runner, ttl_s, place)
        if lease is not None:
            return slot, lease
    return None


def dead_slots(held: dict[int, HeldSlot]) -> list[int]:
    """Slots whose holder stopped renewing (or released): judged by the store's clock."""
    return sorted(slot for slot, h in held.items() if h.expired)


def fix_start(store: ObjectStore, job_id: str, attempt: int, proposed: GangStart) -> GangStart:
    """Fix the attempt's start instant (create-only); the one already fixed wins."""
    key = layout.gang_start_key(job_id, attempt)
    body = asdict(proposed)
    if _create(store, key, body):
        return proposed
    started = read_start(store, job_id, attempt)
    if started is None:  # cannot happen: the create failed because it exists
        raise NotFound(f"{key} vanished")
    return started


def read_start(store: ObjectStore, job_id: str, attempt: int) -> GangStart | None:
    """The attempt's start, or None while not fixed."""
    body = _read_json(store, layout.gang_start_key(job_id, attempt))
    if body is None:
        return None
    return GangStart(float(body["start_at"]), tuple(body["runners"]), body["fixed_by"])


def fail_attempt(store: ObjectStore, job_id: str, attempt: int, runner: str, reason: str) -> None:
    """Mark the attempt failed (create-only: the first reason stays)."""
    _create(store, layout.gang_failed_key(job_id, attempt), {"runner": runner, "reason": reason})


def failure(store: ObjectStore, job_id: str, attempt: int) -> str | None:
    """Why the attempt failed, or None while it has not."""
    body = _read_json(store, layout.gang_failed_key(job_id, attempt))
    return None if body is None else f"{body.get('runner')}: {body.get('reason')}"


def mark_done(store: ObjectStore, job_id: str, attempt: int, done: MemberDone) -> None:
    """Record that a member's run is uploaded (create-only)."""
    _create(store, layout.gang_done_key(job_id, attempt, done.slot), asdict(done))


def dones(store: ObjectStore, job_id: str, attempt: int, size: int) -> dict[int, MemberDone]:
    """The members of an attempt whose runs are uploaded, by slot."""
    out = {}
    for slot in range(size):
        body = _read_json(store, layout.gang_done_key(job_id, attempt, slot))
        if body is not None:
            out[slot] = MemberDone(**body)
    return out


@dataclass(frozen=True)
class GangState:
    """Where an uncommitted gang job stands, for `fiolake status`."""

    attempt: int
    held: int
    runners: tuple[str, ...]
    started: bool


def gang_state(store: ObjectStore, job_id: str, size: int) -> GangState | None:
    """The current attempt of a gang job, or None when no runner has joined it yet."""
    if not any(True for _ in store.list_children(layout.gang_prefix(job_id))):
        return None
    attempt = current_attempt(store, job_id)
    held = slots(store, job_id, attempt, size)
    live = {s: h.lease for s, h in held.items() if not h.expired}
    runners = tuple(live[s].runner for s in sorted(live))
    return GangState(attempt, len(live), runners, read_start(store, job_id, attempt) is not None)
