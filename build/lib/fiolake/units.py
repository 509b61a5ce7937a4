"""Human formatting of raw units; used only at the edges (CLI tables, app)."""

from __future__ import annotations

import math

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


def human_percent(value: float | None) -> str:
    """12.345 -> '12.35%'."""
    return MISSING if _missing(value) else f"{float(value):.2f}%"  # type: ignore[arg-type]


_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> float:
    """Seconds from '90s', '30m', '24h', '7d', '2w' or a plain number of seconds."""
    value = text.strip().lower()
    unit = value[-1:] if value[-1:] in _DURATION_UNITS else "s"
    number = value[:-1] if value[-1:] in _DURATION_UNITS else value
    try:
        seconds = float(number) * _DURATION_UNITS[unit]
    except ValueError:
        raise ValueError(f"{text!r} is not a duration: use e.g. 90s, 30m, 24h or 7d") from None
    if seconds <= 0:
        raise ValueError(f"{text!r} is not a positive duration")
    return seconds
