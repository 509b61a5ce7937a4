"""The aligned table: formatters per column, numbers right-aligned, None as '---'."""

from __future__ import annotations

from fiolake.cli.output import render_table
from fiolake.units import MISSING


def test_a_table_formats_by_column_and_aligns_numbers_right() -> None:
    rows = [("nvme", 1234.5678, None, 3), ("ceph-rbd", None, "x", 12)]
    text = render_table(["backend", "iops", "note", "n"], rows, {"iops": lambda v: f"<{v}>"})
    assert text == (
        "backend          iops  note   n\n"
        "--------  -----------  ----  --\n"
        "nvme      <1234.5678>  ---    3\n"
        "ceph-rbd       <None>  x     12\n"
    )
    assert MISSING == "---"


def test_floats_without_a_formatter_show_six_digits_and_an_empty_table_its_header() -> None:
    assert render_table(["v"], [(1 / 3,)]) == "       v\n--------\n0.333333\n"
    assert render_table(["backend", "n"], []) == "backend  n\n-------  -\n"
