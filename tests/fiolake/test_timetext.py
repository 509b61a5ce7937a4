"""Time as text: one spelling written (ISO 8601, UTC, Z), every ISO spelling read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from fiolake.errors import UsageProblem
from fiolake.timetext import iso_utc, parse_iso, parse_time

T = datetime(2026, 3, 1, 12, 0, 5, 123456, tzinfo=UTC)


def test_iso_utc_writes_z_to_the_asked_precision() -> None:
    assert iso_utc(T) == "2026-03-01T12:00:05.123Z"
    assert iso_utc(T, "seconds") == "2026-03-01T12:00:05Z"
    assert iso_utc(T, "minutes") == "2026-03-01T12:00Z"


def test_iso_utc_converts_other_zones_and_takes_naive_times_as_utc() -> None:
    east = T.astimezone(timezone(timedelta(hours=2)))
    assert iso_utc(east) == "2026-03-01T12:00:05.123Z"
    assert iso_utc(T.replace(tzinfo=None)) == "2026-03-01T12:00:05.123Z"


@pytest.mark.parametrize(
    "text",
    ["2026-03-01T12:00:05.123Z", "2026-03-01T12:00:05.123+00:00", "2026-03-01T14:00:05.123+02:00"],
)
def test_parse_iso_reads_what_older_lakes_wrote_too(text: str) -> None:
    assert parse_iso(text) == T.replace(microsecond=123000)
    assert parse_iso(text).tzinfo == UTC


def test_parse_time_takes_a_duration_back_or_a_date() -> None:
    assert parse_time("7d", now=T) == T - timedelta(days=7)
    assert parse_time("2025-03-01") == datetime(2025, 3, 1, tzinfo=UTC)
    with pytest.raises(UsageProblem) as err:
        parse_time("last week")
    assert str(err.value) == (
        "invalid time 'last week' — use a duration (7d, 12h) or an ISO date (2025-03-01)"
    )


def test_a_window_is_a_duration_or_all() -> None:
    from datetime import timedelta

    from fiolake.timetext import parse_window

    assert parse_window("7d") == timedelta(days=7)
    assert parse_window("ALL") is None
    with pytest.raises(UsageProblem, match="invalid time '7' — use a duration"):
        parse_window("7")  # a bare number is not a span: seconds or days?
