"""Answers equal as a user reads them: every number to 9 significant digits.

DuckDB's parallel sums add in an order that follows the rows a query scans, so one
group's figures differ in their last bits between a query of it alone and one of it
among others (issue 44's bound: the same adjusted p to 9 significant digits)."""

from __future__ import annotations

import dataclasses

import pytest


def assert_same(got: object, want: object) -> None:
    """Equal JSON-like values (dataclasses by their fields), floats to 9 significant
    digits."""
    if dataclasses.is_dataclass(want) and not isinstance(want, type):
        assert type(got) is type(want)
        assert_same(dataclasses.asdict(got), dataclasses.asdict(want))  # type: ignore[arg-type]
    elif isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys()
        for k in want:
            assert_same(got[k], want[k])
    elif isinstance(want, list | tuple):
        assert isinstance(got, list | tuple) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert_same(g, w)
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-9)
    else:
        assert got == want
