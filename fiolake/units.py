"""Units: the one size parser and the one duration parser (fio's syntax), and human
formatting of raw units, used only at the edges (CLI tables, app).

Sizes follow fio with its default `kb_base=1024`: a bare number is bytes; `k`/`kb`,
`m`/`mb`, `g`, `t`, `p` (any case) are powers of 1024; the IEC spellings `kib`, `mib`, …
are powers of 1000 (fio's own, inverted, convention). No fractions, no spaces.

Durations follow fio's time options: a bare number is seconds; suffixes `us`/`usec`,
`ms`/`msec`, `s`, `m` (minutes), `h`, `d`. Whole numbers only.

Hand-written because these are fio's exact rules (a general units library would accept
`1.5k` or read `1KiB` as 1024, which fio does not).
"""

from __future__ import annotations

import math
import re

from fiolake.errors import UsageProblem

MISSING = "---"


def _missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def human_bytes(value: float | None) -> str:
    """1536 -> '1.5 KiB'."""
    if _missing(value):
        return MISSING
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
    v = float(value)  # type: ignore[arg-type]
    for unit in units:
        if abs(v) < 1024 or unit == units[-1]:
            return f"{v:.0f} {unit}" if unit == "B" else f"{v:.1f} {unit}"
        v /= 1024
    raise AssertionError("unreachable")


def human_rate(value: float | None) -> str:
    """Bytes per second -> '512.0 MiB/s'."""
    return MISSING if _missing(value) else f"{human_bytes(value)}/s"


def human_count(value: float | None) -> str:
    """12345.6 -> '12.3k'."""
    if _missing(value):
        return MISSING
    v = float(value)  # type: ignore[arg-type]
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.1f}{unit}"
    return f"{v:.0f}" if v == int(v) else f"{v:.1f}"


def human_ns(value: float | None) -> str:
    """Nanoseconds -> '1.25 ms'."""
    if _missing(value):
        return MISSING
    v = float(value)  # type: ignore[arg-type]
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.2f} {unit}"
    return f"{v:.0f} ns"


def human_ms(value: float | None) -> str:
    """Milliseconds -> '2.00 s'."""
    return MISSING if _missing(value) else human_ns(float(value) * 1e6)  # type: ignore[arg-type]


def human_duration(seconds: float) -> str:
    """Seconds in the largest whole unit of the duration syntax: 7200 -> '2h', 5400 ->
    '90m', 90 -> '90s', 2.5 -> '2.5s' (so a message repeats the user's --timeout)."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def human_percent(value: float | None) -> str:
    """12.345 -> '12.35%'."""
    return MISSING if _missing(value) else f"{float(value):.2f}%"  # type: ignore[arg-type]


_SIZE = re.compile(r"^(\d+)(?:([kmgtp])(b|ib)?)?$", re.IGNORECASE)
_SIZE_POWER = {"k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_DURATION = re.compile(r"^(\d+)(us|usec|ms|msec|s|m|h|d)?$", re.IGNORECASE)
_DURATION_S = {"us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3, "s": 1, "m": 60, "h": 3600}
_DURATION_S["d"] = 86400


def size_or_none(text: str) -> int | None:
    """Bytes from a fio size ('256m' -> 268435456, '1KiB' -> 1000); None if not one."""
    m = _SIZE.match(text.strip())
    if not m:
        return None
    number, prefix, tail = m.groups()
    if not prefix:
        return int(number)
    base = 1000 if (tail or "").lower() == "ib" else 1024
    return int(number) * int(base ** _SIZE_POWER[prefix.lower()])


def parse_size(text: str) -> int:
    """Bytes from a positive fio size; UsageProblem naming the syntax otherwise."""
    found = size_or_none(text)
    if found is None or found <= 0:
        raise UsageProblem(
            f"{text!r} is not a size — use a whole number of bytes or one with a suffix, "
            "e.g. 4k, 256m, 1g (k = 1024)"
        )
    return found


def seconds_or_none(text: str, *, unit_required: bool = False) -> float | None:
    """Seconds from a fio time value ('2' -> 2, '1500ms' -> 1.5, '2m' -> 120); None if not
    one, or if `unit_required` and it has no unit."""
    m = _DURATION.match(text.strip())
    if not m or (unit_required and m.group(2) is None):
        return None
    return int(m.group(1)) * _DURATION_S[(m.group(2) or "s").lower()]


def parse_duration(text: str, *, unit_required: bool = False, allow_zero: bool = False) -> float:
    """Positive (or, with `allow_zero`, zero) seconds from a fio time value; UsageProblem
    naming the syntax otherwise."""
    seconds = seconds_or_none(text, unit_required=unit_required)
    if seconds == 0 and not allow_zero:
        raise UsageProblem(f"{text!r} is zero — give a duration above zero, e.g. 30s")
    if seconds is None or seconds < 0:
        example = "90s, 30m, 24h or 7d" if unit_required else "30, 90s, 30m, 24h or 7d"
        raise UsageProblem(
            f"{text!r} is not a duration — use a whole number "
            + ("and a unit (us, ms, s, m, h, d), " if unit_required else "of seconds or one with a "
               "unit (us, ms, s, m, h, d), ")
            + f"e.g. {example}"
        )  # fmt: skip
    return seconds
