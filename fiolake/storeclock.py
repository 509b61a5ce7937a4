"""This host's offset to the store's clock, to well under a second.

Gang members start fio at one instant judged by the store's clock, never their own
(docs/gangs.md). An S3 `Date` header has one-second resolution, but the moment it
ticks over is an exact instant: the last answer still stamped second S was stamped
after we sent it, the first stamped S+1 before we received it, so the store's clock
read S+1.000 at a local instant between those two. Polling the store quickly across
one tick-over bounds the offset by half that interval (a few ms on a LAN).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from fiolake.store import ObjectStore

# Pause between samples while waiting for the tick-over: bounds the error with the RTT.
_SAMPLE_GAP_S = 0.004
# Tick-overs tried before settling for the best one seen.
_MAX_TICKS = 3
# An offset known to within this is good enough: stop early.
_GOOD_ENOUGH_S = 0.010
# Wake this long (or twice the last error) before the next expected tick-over.
_MIN_MARGIN_S = 0.03


@dataclass(frozen=True)
class ClockOffset:
    """store clock − this host's clock (`time.time()`), and how well it is known."""

    offset_s: float
    error_s: float  # half-width of the interval the store's clock was pinned in

    def store_now(self) -> float:
        """The store's clock now, as POSIX seconds."""
        return time.time() + self.offset_s

    def to_store(self, local: float) -> float:
        """A local POSIX instant in the store's clock."""
        return local + self.offset_s

    def to_local(self, store: float) -> float:
        """A store-clock POSIX instant in this host's clock."""
        return store - self.offset_s


def _sample(server_time: Callable[[], datetime]) -> tuple[float, float, float]:
    sent = time.time()
    stamp = server_time().timestamp()
    return sent, stamp, time.time()


def measure_offset(store: ObjectStore, *, timeout_s: float = 5.0) -> ClockOffset:
    """Measure `store`'s clock against this host's by timing its `Date` tick-over.

    A store whose clock has sub-second resolution (a local lake: this host's clock) is
    read directly. Costs about one second of small requests (a HEAD every few ms).
    """
    sent, stamp, received = _sample(store.server_time)
    if stamp != int(stamp):
        return ClockOffset(stamp - (sent + received) / 2, (received - sent) / 2)
    best: ClockOffset | None = None
    prev = (sent, stamp, received)
    deadline = time.monotonic() + timeout_s
    ticks = 0
    while ticks < _MAX_TICKS and time.monotonic() < deadline:
        time.sleep(_SAMPLE_GAP_S)
        cur = _sample(store.server_time)
        if cur[1] > prev[1]:
            ticks += 1
            # The store read cur[1] (a whole second) between prev's send and cur's receipt.
            low, high = prev[0], cur[2]
            found = ClockOffset(cur[1] - (low + high) / 2, (high - low) / 2)
            if cur[1] - prev[1] == 1 and (best is None or found.error_s < best.error_s):
                best = found
            if best is not None and best.error_s <= _GOOD_ENOUGH_S:
                break
            # The next tick is a second later: sleep through most of it instead of polling.
            margin = max(_MIN_MARGIN_S, 2 * found.error_s)
            time.sleep(max(0.0, (low + high) / 2 + 1 - margin - time.time()))
            cur = _sample(store.server_time)
        prev = cur
    if best is None:
        # No clean tick seen (a very slow store): the coarse reading, honestly bounded.
        return ClockOffset(stamp + 0.5 - (sent + received) / 2, 0.5 + (received - sent) / 2)
    return best
