"""One compactor at a time: a lock object with an expiry and a fencing token.

Two compactions at once would both append the same runs to the Delta tables before one
lost the create-only race for the next generation. So a compaction first
creates `compacted/_lock.json` create-only, naming its host, pid, start time, a nonce
and a fencing token, and renews it (If-Match on its ETag) from a thread while it works.
A second compaction finds it held and raises `CompactionBusy` ("compaction already
running on <host> since <time>"), or polls until it is free with `wait=True`. A
compactor killed mid-run stops renewing: its lock expires after `ttl_s` by the store's
clock, and the next compactor takes it over (If-Match) with the token + 1. Before each
Delta append and before switching the generation, the holder reads the lock back
(`fence`): a lock that names another token or nonce means it was taken over (this
process was stopped longer than the TTL), and it stops before writing anything more.

Why not `fiolake.lease`: a job lease has no host or start time to tell the user, and it
is never deleted or released to a stranger; the ambiguous-answer rule (read back, own
nonce means ours) and the age by the store's clock are the same and come from there.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace

from fiolake import layout
from fiolake.errors import CompactionBusy, LakeError, NotFound, PreconditionFailed, StoreError
from fiolake.lease import lease_age_s
from fiolake.store import ObjectInfo, ObjectStore
from fiolake.timetext import now_iso

TTL_S = 60.0  # renewed every TTL_S / 4, so a live compactor never lets it expire
WAIT_POLL_S = 2.0


@dataclass(frozen=True)
class LockBody:
    """What the lock object says: who holds it, since when, and its fencing token."""

    host: str
    pid: int
    since: str  # ISO time the holder took the lock (its own clock, for people)
    token: int  # fencing token: + 1 on every takeover
    nonce: str  # fresh on every write, so an ambiguous answer can be settled
    ttl_s: float
    released: bool = False

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> LockBody:
        obj = json.loads(data)
        return cls(**{k: obj[k] for k in cls.__dataclass_fields__ if k in obj})


def _read(store: ObjectStore) -> tuple[LockBody, ObjectInfo] | None:
    try:
        data, info = store.get(layout.COMPACTION_LOCK_KEY)
    except NotFound:
        return None
    try:
        return LockBody.from_bytes(data), info
    except (ValueError, TypeError):  # unreadable: treat as an expired lock of token 0
        return LockBody("?", 0, "?", 0, "", 0.0, released=True), info


def _write(store: ObjectStore, body: LockBody, if_match: str | None) -> str | None:
    """Our ETag after a create-only (`if_match` None) or If-Match write; None if we lost."""
    try:
        return store.put(
            layout.COMPACTION_LOCK_KEY,
            body.to_bytes(),
            if_none_match=if_match is None,
            if_match=if_match,
        )
    except (PreconditionFailed, NotFound):
        current = _read(store)  # a retried request may have landed first: the nonce tells
        if current is not None and current[0].nonce == body.nonce:
            return current[1].etag
        return None


class CompactionLock:
    """The held lock: renewed by a thread until released; `fence` checks it is still ours."""

    def __init__(self, store: ObjectStore, body: LockBody, etag: str):
        self.store = store
        self.body = body
        self._etag = etag
        self._lost: str | None = None
        self._guard = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew_loop, daemon=True)
        self._thread.start()

    @property
    def token(self) -> int:
        return self.body.token

    def _renew_once(self) -> None:
        with self._guard:
            if self._lost:
                return
            fresh = replace(self.body, nonce=secrets.token_hex(8))
            try:
                etag = _write(self.store, fresh, self._etag)
            except StoreError:
                return  # the store is unreachable: try again; the fence will tell
            if etag is None:
                self._lost = "another compactor took the compaction lock over"
            else:
                self.body, self._etag = fresh, etag

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.body.ttl_s / 4):
            self._renew_once()

    def fence(self) -> None:
        """Raise LakeError unless the stored lock is still exactly ours (token and nonce).

        Read under the guard the renewals take: a renewal between the read and the
        comparison gave the lock a new nonce, and the holder then took its own renewal for
        a takeover (seen compacting a night into a 1,000,000-run lake, whose listing
        outlasts a renewal period)."""
        with self._guard:
            current = _read(self.store)
            if self._lost is None and (
                current is None
                or current[0].token != self.body.token
                or current[0].nonce != self.body.nonce
            ):
                self._lost = "the compaction lock changed hands"
            if self._lost:
                raise LakeError(
                    f"{self._lost} (token {self.body.token}): this compaction stops before "
                    "writing more — run `fiolake lake compact` again"
                )

    def release(self) -> None:
        """Stop renewing and mark the lock released, so the next compactor takes it at once."""
        self._stop.set()
        self._thread.join()
        with self._guard:
            if self._lost is None:
                try:
                    _write(self.store, replace(self.body, released=True), self._etag)
                except StoreError:
                    pass  # it expires on its own


def _free(body: LockBody, info: ObjectInfo) -> bool:
    return body.released or lease_age_s(info) > body.ttl_s


def try_acquire(store: ObjectStore, ttl_s: float = TTL_S) -> CompactionLock:
    """Take the lock if it is free, released or expired; CompactionBusy when it is held."""
    me = LockBody(
        socket.gethostname(),
        os.getpid(),
        now_iso("seconds"),
        1,
        secrets.token_hex(8),
        ttl_s,
    )
    current = _read(store)
    if current is None:
        etag = _write(store, me, None)
    elif _free(*current):
        me = replace(me, token=current[0].token + 1)
        etag = _write(store, me, current[1].etag)
    else:
        etag = None
    if etag is None:
        holder = _read(store) or current
        who = f"on {holder[0].host} since {holder[0].since}" if holder else "elsewhere"
        raise CompactionBusy(
            f"compaction already running {who} — wait for it, or run "
            "`fiolake lake compact --wait` (a killed compactor's lock expires in "
            f"{int(holder[0].ttl_s if holder else ttl_s)} s)"
        )
    return CompactionLock(store, me, etag)


@contextmanager
def compaction_lock(
    store: ObjectStore,
    *,
    wait: bool = False,
    ttl_s: float = TTL_S,
    on_wait: Callable[[str], None] | None = None,
) -> Iterator[CompactionLock]:
    """Hold the lake's compaction lock for the block (waiting for it with `wait`)."""
    while True:
        try:
            lock = try_acquire(store, ttl_s)
            break
        except CompactionBusy as busy:
            if not wait:
                raise
            if on_wait is not None:
                on_wait(str(busy))
                on_wait = None  # say it once
            time.sleep(WAIT_POLL_S)
    try:
        yield lock
    finally:
        lock.release()
