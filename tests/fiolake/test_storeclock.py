"""The store-clock offset from the `Date` tick-over, against a store whose clock is off.

The store here is the one fake: a real MinIO on this machine shares its clock, so an
offset of 12.345 s (and its whole-second `Date`) cannot be caused any other way.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime

import pytest

from fiolake.store import LocalStore
from fiolake.storeclock import measure_offset


class OffsetClockStore:
    """Answers server_time() like S3: this host's clock + `offset_s`, whole seconds."""

    def __init__(self, offset_s: float, latency_s: float = 0.001) -> None:
        self.offset_s = offset_s
        self.latency_s = latency_s
        self.requests = 0

    def server_time(self) -> datetime:
        self.requests += 1
        time.sleep(self.latency_s / 2)  # on the way there
        stamp = math.floor(time.time() + self.offset_s)
        time.sleep(self.latency_s / 2)  # and back
        return datetime.fromtimestamp(stamp, UTC)


@pytest.mark.slow  # waits for whole-second tick-overs: ~1.5 s
def test_offset_is_found_to_within_its_error_bound_from_whole_second_dates() -> None:
    for offset in (12.345, -29.9991):
        store = OffsetClockStore(offset)
        got = measure_offset(store)  # type: ignore[arg-type]
        assert got.error_s < 0.02, got
        assert abs(got.offset_s - offset) <= got.error_s + 0.002, (offset, got)
        assert store.requests < 400  # sleeps through most of a second, not polling it


def test_sub_second_store_clock_is_read_directly(tmp_path) -> None:  # noqa: ANN001
    got = measure_offset(LocalStore(tmp_path))
    assert abs(got.offset_s) < 0.01 and got.error_s < 0.01
    assert abs(got.to_local(got.store_now()) - time.time()) < 0.01
