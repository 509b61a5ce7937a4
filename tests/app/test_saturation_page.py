"""The Saturation page on a synthetic lake with known curves (AppTest), and in Chromium."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.aggregator import lakegen
from tests.aggregator.stats.test_saturation_cli import DISK, TMPFS, write
from tests.app import browser

APP = Path(__file__).parents[2] / "app"


@pytest.fixture
def lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    store = lakegen.local_store(tmp_path / "lake")
    write(store, "c1", "disk", DISK, 5)
    write(store, "c1", "tmpfs", TMPFS, 5, start=10)
    monkeypatch.setenv("FIOLAKE_LAKE", str(tmp_path / "lake"))
    return tmp_path / "lake"


def test_the_answer_comes_first(lake: Path) -> None:
    at = AppTest.from_file(str(APP / "views/9_Saturation.py"), default_timeout=60).run()
    assert not at.exception
    first = at.markdown[0].value
    assert first.startswith("**read, latency-at-load (rate_iops sweep) at p99 ≤ 1ms: disk 2.0k")
    assert "tmpfs 8.0k IOPS [" in first and "▲ better" in first


def test_a_bad_slo_is_said_not_raised(lake: Path) -> None:
    at = AppTest.from_file(str(APP / "views/9_Saturation.py"), default_timeout=60)
    at.query_params["slo"] = "1ms"
    at.run()
    assert not at.exception
    assert at.error[0].value.startswith("'1ms' is not an SLO")


@pytest.mark.browser
@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium")
def test_the_page_settles_in_chromium(lake: Path) -> None:
    shot = browser.ARTIFACTS / "Saturation-sweep.png"  # Saturation.png: test_browser, no sweep
    shot.unlink(missing_ok=True)
    with browser.serve_app(lake) as url, browser.chromium() as context:
        visit = browser.visit(context, url, "Saturation?slo=p99%3C%3D250us", shot)
    assert visit.problems == [] and visit.console_errors == []
    assert "at p99 ≤ 250us: disk" in visit.text
    assert shot.stat().st_size > 20_000
