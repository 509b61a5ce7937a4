"""The HTML report in Debian's headless Chromium: it loads from a file with no other
request (no script, style, font or image fetched), logs no console error, states the
answer in words, and draws its inline SVG charts."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from fiolake.cli import cli
from tests.aggregator import lakegen
from tests.app import browser

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium"),
]
READ = ("job1", "read")


def test_the_report_opens_offline_without_console_errors(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path / "lake")
    lakegen.write_campaign(store, "A", {"nvme": {READ: {"iops": 1000}}}, 3, jitter=0.02)
    lakegen.write_campaign(store, "B", {"nvme": {READ: {"iops": 700}}}, 3, jitter=0.02,
                           start=lakegen.T0 + timedelta(days=1))  # fmt: skip
    out = tmp_path / "report.html"
    res = CliRunner().invoke(cli, ["report", "--lake", str(tmp_path / "lake"), "--campaign",
                                   "B", "--baseline-campaign", "A", "-o", str(out),
                                   "--app-url", "http://127.0.0.1:9/app"])  # fmt: skip
    assert res.exit_code == 0, res.output
    requests: list[str] = []
    errors: list[str] = []
    with browser.chromium() as context:
        page = context.new_page()  # type: ignore[attr-defined]
        page.on("request", lambda r: requests.append(r.url))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(out.as_uri(), wait_until="networkidle")
        text = page.inner_text("body")
        links = page.eval_on_selector_all("a", "els => els.map(e => e.href)")
        # Each chart is laid out as SVG (a box of its size), its parts drawn inside it.
        boxes = page.eval_on_selector_all(
            "svg.chart",
            "els => els.map(e => [e.getAttribute('class'), e instanceof SVGSVGElement,"
            " Math.round(e.getBoundingClientRect().width),"
            " e.querySelectorAll('polyline, g.whisker').length])",
        )
    assert requests == [out.as_uri()]  # the file itself and nothing else
    assert errors == []
    assert "Campaign B against A: the gate fails — 4 worse, 0 inconclusive of 4 rows." in text
    assert set(links) == {"http://127.0.0.1:9/app/Gate?campaign=B&baseline=A"}
    assert boxes == [["chart ratio", True, 640, 4], ["chart latency", True, 420, 2],
                     ["chart series", True, 420, 6]]  # fmt: skip
    assert "Ratios new / baseline" in text and "Environment" in text
    print(f"report.html: {out.stat().st_size} bytes, {len(links)} rows")
