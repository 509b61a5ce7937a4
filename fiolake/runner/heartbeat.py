"""The lease heartbeat: renews a runner's lease on its job while fio runs."""

from __future__ import annotations

import logging
import threading
import time

from fiolake.errors import StoreError
from fiolake.lease import Lease, LeaseLost, renew_lease
from fiolake.store import ObjectStore

log = logging.getLogger("fiolake.runner")


class Heartbeat(threading.Thread):
    """Renews a lease every ttl/3; sets `lost` when it is taken over or cannot be renewed."""

    def __init__(self, store: ObjectStore, lease: Lease):
        super().__init__(daemon=True, name=f"heartbeat-{lease.job_id}")
        self.store = store
        self.lease = lease
        self.lost = threading.Event()
        self._halt = threading.Event()

    def run(self) -> None:
        last_ok = time.monotonic()
        while not self._halt.wait(self.lease.ttl_s / 3):
            try:
                self.lease = renew_lease(self.store, self.lease)
                last_ok = time.monotonic()
            except LeaseLost:
                self.lost.set()
                return
            except StoreError as exc:
                # Store unreachable: past our TTL another runner may have taken over.
                if time.monotonic() - last_ok > self.lease.ttl_s:
                    log.warning(
                        "lease of %s lapsed while the store was unreachable: %s",
                        self.lease.job_id,
                        exc,
                    )
                    self.lost.set()
                    return

    def stop(self) -> Lease:
        self._halt.set()
        self.join()
        return self.lease
