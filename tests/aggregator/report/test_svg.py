"""The report's hand-written SVG charts at their edges: a row without a CI, a side
without data, a ratio range narrower than a decade, a zero on a log axis."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from fiolake.aggregator.report.svg import Axis, Line, Whisker, _ticks, line_chart, ratio_chart

PLAIN = Axis(log=False, fmt=lambda v: f"{v:g}")
LOG = Axis(log=True, fmt=lambda v: f"{v:g}")


def test_a_row_without_a_ci_gets_its_dot_and_no_whisker() -> None:
    svg = ratio_chart(
        [
            Whisker("a", 0.7, 0.65, 0.75, "worse", "a: worse"),
            Whisker("b", 1.01, None, None, "inconclusive", "b: too few runs"),
        ],
        min_effect=0.05,
    )
    ET.fromstring(svg)  # well-formed: it renders in any browser's SVG parser
    assert svg.count('<circle class="ratio"') == 2
    assert svg.count('<g class="whisker"') == 1
    assert "<title>b: too few runs</title>" in svg


def test_ratio_ticks_are_labelled_within_a_decade() -> None:
    ticks = _ticks(0.62, 1.6, log=True)  # a 30 % regression next to "no change"
    assert ticks == [0.7, 1.0, 1.5]
    svg = ratio_chart([Whisker("a", 0.7, 0.65, 0.75, "worse", "")], min_effect=0.05)
    assert re.findall(r">([\d.]+)×</text>", svg) == ["0.6", "0.7", "0.8", "0.9", "1"]


def test_a_side_without_data_draws_no_line_and_no_legend() -> None:
    lines = [
        Line("new: B", [(1, 700.0), (2, 710.0)], "#1565c0"),
        Line("baseline: A", [], "#757575", dashed=True),
    ]
    svg = line_chart(lines, PLAIN, PLAIN, "nvme", "series")
    ET.fromstring(svg)
    assert svg.count("<polyline") == 1
    assert "baseline: A" not in svg


def test_zero_on_a_log_axis_is_left_out_and_nothing_drawable_says_so() -> None:
    svg = line_chart([Line("new", [(1, 0.0), (2, 5e5), (3, 1e6)], "#000")], PLAIN, LOG, "t", "x")
    (points,) = re.findall(r'<polyline points="([^"]+)"', svg)
    assert len(points.split()) == 2  # the zero has no place on a log axis
    empty = line_chart([Line("new", [(1, 0.0)], "#000")], PLAIN, LOG, "t", "x")
    assert "no data" in empty and "<polyline" not in empty
    whole = _ticks(1, 3, log=False, whole=True)
    assert whole == [1.0, 2.0, 3.0]  # seconds: no 1.5 s tick
