"""Job leases on object storage: claim, renew, release — judged by the server's clock.

A lease is `claims/<job_id>.json`. It is created create-only (epoch 1) or taken
over from an expired holder with If-Match on its ETag (epoch + 1). Every write
carries a fresh nonce, so identical bytes never reuse an ETag, and any ambiguous
outcome (412/404 after a retried request) is settled by reading the lease back.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import asdict, dataclass, replace

from fiolake import layout
from fiolake.errors import NotFound, PreconditionFailed
from fiolake.store import ObjectInfo, ObjectStore


class LeaseLost(Exception):
    """Another runner holds the lease now."""


@dataclass(frozen=True)
class Lease:
    """Body of a claim plus the ETag we last wrote (not serialised)."""

    job_id: str
    runner: str
    epoch: int
    seq: int
    nonce: str
    state: str  # running | released
    ttl_s: float
    run_id: str | None = None
    etag: str = ""
    # Object key when not the job's claim (a gang member's slot); not serialised.
    place: str = ""

    def to_bytes(self) -> bytes:
        body = asdict(self)
        body.pop("etag")
        body.pop("place")
        return json.dumps(body, sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes, etag: str, place: str = "") -> Lease:
        obj = json.loads(data)
        local = ("etag", "place")
        fields = {k: obj[k] for k in cls.__dataclass_fields__ if k in obj and k not in local}
        return cls(**fields, etag=etag, place=place)

    @property
    def key(self) -> str:
        """The object this lease lives at."""
        return self.place or layout.claim_key(self.job_id)


def lease_age_s(info: ObjectInfo) -> float:
    """Seconds since the lease was last written, by the store's clock (1 s resolution)."""
    return (info.server_time - info.last_modified).total_seconds()


def is_expired(lease: Lease, info: ObjectInfo) -> bool:
    """A released lease, or one not renewed within its TTL, can be taken over."""
    return lease.state == "released" or lease_age_s(info) > lease.ttl_s


def read_lease(store: ObjectStore, job_id: str, place: str = "") -> tuple[Lease, ObjectInfo] | None:
    """The current lease of a job (or at `place`) with its metadata, or None when never
    claimed."""
    try:
        data, info = store.get(place or layout.claim_key(job_id))
    except NotFound:
        return None
    return Lease.from_bytes(data, info.etag, place), info


def _write(store: ObjectStore, lease: Lease, *, create: bool, if_match: str | None) -> Lease | None:
    try:
        etag = store.put(lease.key, lease.to_bytes(), if_none_match=create, if_match=if_match)
        return replace(lease, etag=etag)
    except (PreconditionFailed, NotFound):
        # Our own request may have landed before a retry failed: the nonce tells.
        current = read_lease(store, lease.job_id, lease.place)
        if current is not None and current[0].nonce == lease.nonce:
            return current[0]
        return None


def claim_lease(store: ObjectStore, job_id: str, runner: str, ttl_s: float) -> Lease | None:
    """Take the job's lease if it is free or expired; None when someone else holds it."""
    current = read_lease(store, job_id)
    if current is None:
        return create_lease(store, job_id, runner, ttl_s)
    held, info = current
    if not is_expired(held, info):
        return None
    lease = Lease(job_id, runner, held.epoch + 1, 0, secrets.token_hex(8), "running", ttl_s)
    return _write(store, lease, create=False, if_match=held.etag)


def create_lease(
    store: ObjectStore, job_id: str, runner: str, ttl_s: float, place: str = ""
) -> Lease | None:
    """Create a lease (create-only, epoch 1) at the job's claim or `place`; None when it
    exists already. Never takes one over: a gang slot, once held, is never handed on."""
    lease = Lease(job_id, runner, 1, 0, secrets.token_hex(8), "running", ttl_s, place=place)
    return _write(store, lease, create=True, if_match=None)


def renew_lease(store: ObjectStore, lease: Lease, *, state: str | None = None) -> Lease:
    """Compare-and-swap a fresh copy of our lease (in `state` if given, e.g. "released");
    raises LeaseLost if it is not ours."""
    fresh = replace(
        lease, seq=lease.seq + 1, nonce=secrets.token_hex(8), state=state or lease.state
    )
    renewed = _write(store, fresh, create=False, if_match=lease.etag)
    if renewed is None:
        raise LeaseLost(f"lease of job {lease.job_id} was taken over")
    return renewed


def resume_lease(store: ObjectStore, job_id: str, runner: str, ttl_s: float) -> Lease | None:
    """Take back the lease of a job `runner` finished before it crashed (its attempt waits
    in the spool): CAS over the lease still naming `runner`, or claim it if it is free or
    expired. None when another runner holds it now: that runner's attempt commits."""
    current = read_lease(store, job_id)
    if current is not None and current[0].runner == runner:
        try:
            return renew_lease(store, current[0])
        except LeaseLost:
            return None
    return claim_lease(store, job_id, runner, ttl_s)


def release_lease(store: ObjectStore, lease: Lease) -> None:
    """Hand the job back (graceful shutdown before it ran): others may claim it at once."""
    renew_lease(store, lease, state="released")


def still_ours(store: ObjectStore, lease: Lease) -> bool:
    """Whether the stored lease is still exactly the one we last wrote."""
    current = read_lease(store, lease.job_id, lease.place)
    return current is not None and current[0].nonce == lease.nonce
