"""Time as text: ISO 8601 in UTC, the one spelling fiolake writes, and how it reads times.

What programs read (commit markers, compaction records, runner notes, `--format csv|json`)
keeps milliseconds: `2026-03-01T12:00:00.123Z`; what people read (tables, the app) stops
at the minute: `2026-03-01T12:00Z`. Signed manifests and the compaction lock's holder note
use whole seconds. Reading takes every form `datetime.fromisoformat` takes, including the
`+00:00` spelling older lakes hold; a time without a zone is UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Literal

from fiolake.errors import UsageProblem
from fiolake.units import parse_duration, seconds_or_none

Timespec = Literal["minutes", "seconds", "milliseconds"]

# The people form as a strftime/d3 time format (the app's chart axes use d3's, same syntax).
MINUTES_FORMAT = "%Y-%m-%dT%H:%MZ"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def as_utc(t: datetime) -> datetime:
    """`t` in UTC; a time without a zone is taken to be UTC already."""
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def iso_utc(t: datetime, timespec: Timespec = "milliseconds") -> str:
    """`t` as ISO 8601 in UTC with a `Z`, to `timespec`."""
    return as_utc(t).isoformat(timespec=timespec).replace("+00:00", "Z")


def from_epoch_us(epoch_us: int) -> datetime:
    """The UTC time `epoch_us` microseconds after the epoch: how queries hand over times
    (DuckDB's TIMESTAMPTZ values come to Python through pytz, ~8 µs each and a 13 ms
    import: 1,456 earlier campaigns' starts were 35 ms of a gate, issue 44)."""
    return EPOCH + timedelta(microseconds=epoch_us)


def now_iso(timespec: Timespec = "milliseconds") -> str:
    """This machine's time now, as `iso_utc` writes it."""
    return iso_utc(datetime.now(UTC), timespec)


def parse_iso(text: str) -> datetime:
    """An ISO 8601 time as an aware datetime (UTC when it names no zone); ValueError if
    the text is not one."""
    return as_utc(datetime.fromisoformat(text))


def parse_time(text: str, now: datetime | None = None) -> datetime:
    """A point in time from the command line: a duration back from `now` ('7d', '12h';
    a unit is required, so '2025' stays a year) or an ISO date/time (UTC if naive)."""
    if seconds_or_none(text, unit_required=True) is not None:
        return (now or datetime.now(UTC)) - _ago(text)
    try:
        return parse_iso(text)
    except ValueError:
        raise UsageProblem(
            f"invalid time {text!r} — use a duration (7d, 12h) or an ISO date (2025-03-01)"
        ) from None


def parse_window(text: str) -> timedelta | None:
    """A span of history from the command line: a duration ('30d', '12h'; a unit is
    required) or 'all' (None); UsageProblem in `parse_time`'s words otherwise."""
    if text.strip().lower() == "all":
        return None
    if seconds_or_none(text, unit_required=True) is None:
        raise UsageProblem(f"invalid time {text!r} — use a duration (7d, 12h) or 'all'")
    return _ago(text)


def _ago(text: str) -> timedelta:
    return timedelta(seconds=parse_duration(text, unit_required=True))
