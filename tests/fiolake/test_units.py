"""The one size parser and the one duration parser: fio's syntax, clean errors."""

from __future__ import annotations

import pytest

from fiolake.errors import UsageProblem
from fiolake.units import parse_duration, parse_size, seconds_or_none, size_or_none


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30", 30), ("90s", 90), ("1500ms", 1.5), ("700000us", 0.7), ("2m", 120), ("24h", 86400),
     ("7d", 604800), (" 5M ", 300)],
)  # fmt: skip
def test_durations_follow_fio(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


def test_a_unit_can_be_required() -> None:
    assert seconds_or_none("30", unit_required=True) is None
    assert parse_duration("30s", unit_required=True) == 30
    with pytest.raises(UsageProblem) as info:
        parse_duration("30", unit_required=True)
    assert str(info.value) == (
        "'30' is not a duration — use a whole number and a unit (us, ms, s, m, h, d), "
        "e.g. 90s, 30m, 24h or 7d"
    )


@pytest.mark.parametrize("text", ["", "1.5h", "2w", "-3s", "1 h", "h", "1sec", "7dd"])
def test_bad_durations_are_usage_problems(text: str) -> None:
    with pytest.raises(UsageProblem, match="is not a duration — use a whole number"):
        parse_duration(text)


def test_zero_is_refused_unless_allowed() -> None:
    with pytest.raises(UsageProblem, match="^'0s' is zero — give a duration above zero, e.g. 30s$"):
        parse_duration("0s")
    assert parse_duration("0s", allow_zero=True) == 0
    assert parse_duration("0", allow_zero=True) == 0


def test_sizes_are_binary_and_iec_spellings_decimal_as_in_fio() -> None:
    assert [size_or_none(t) for t in ("4096", "4k", "4KB", "1m", "1KiB", "2MiB", "1g")] == [
        4096, 4096, 4096, 2**20, 1000, 2_000_000, 2**30,
    ]  # fmt: skip
    with pytest.raises(UsageProblem) as info:
        parse_size("0")
    assert str(info.value) == (
        "'0' is not a size — use a whole number of bytes or one with a suffix, "
        "e.g. 4k, 256m, 1g (k = 1024)"
    )
