"""Values written into SQL as literals give what DuckDB's binding of them gives."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fiolake.aggregator.lake.sqltext import with_values

VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
    st.datetimes(timezones=st.just(UTC)),
)


@settings(max_examples=40)  # the fast tier's budget: each example is a DuckDB connection
@given(st.lists(VALUES, min_size=1, max_size=4))
@example([0.015106735869404567])  # read as a DECIMAL first, it came back one double up
def test_written_in_equals_bound(values: list[object]) -> None:
    # A '?' inside a quoted string or name is text, not a placeholder.
    sql = "SELECT '?' AS \"a?\", " + ", ".join("?" for _ in values)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    assert con.execute(with_values(sql, values)).fetchall() == con.execute(sql, values).fetchall()


def test_placeholders_and_values_must_match() -> None:
    with pytest.raises(ValueError, match="more placeholders than the 1 values given"):
        with_values("SELECT ?, ?", ["a"])
    with pytest.raises(ValueError, match="fewer placeholders than the 2 values given"):
        with_values("SELECT ?", ["a", "b"])
    with pytest.raises(TypeError, match="no SQL literal for bytes"):
        with_values("SELECT ?", [b"x"])
    assert with_values("SELECT ?", [datetime(2026, 1, 2, tzinfo=UTC)]) == (
        "SELECT TIMESTAMPTZ '2026-01-02T00:00:00+00:00'"
    )
