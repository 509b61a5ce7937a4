"""The real app (`fiolake app`) in Debian's headless Chromium on a lake written by real
fio: every page loads without an exception or a console error, the landing page states
the ratio computed here independently, selections live in the URL, and every page is
screenshotted into build/test-artifacts/app/ (`make screenshots`)."""

from __future__ import annotations

import math
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from fiolake.aggregator.lake.lake import connect
from fiolake.aggregator.stats.verdict_text import mark
from fiolake.cli import cli
from fiolake.runner.distributed.fleet import FleetStatus
from fiolake.store import LocalStore
from tests.app import browser

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium"),
]
REPS = 3
# Per run: the IOPS of its one job × direction; per backend the geometric mean.
PER_RUN = """
    SELECT r.backend, sum(x.iops) FROM results x JOIN runs r USING (run_id)
    WHERE r.status = 'ok' AND r.profile = 'random-reads'
    GROUP BY r.backend, x.run_id
"""


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """random-reads on a disk directory and on tmpfs, 3 repetitions of 6 s (long enough
    for a steady-state verdict), plus one runner's fleet status."""
    root = tmp_path_factory.mktemp("browser")
    shm = Path("/dev/shm")
    # A name of this process: parallel workers and sessions each get their own.
    tmpfs = (shm if shm.is_dir() else root) / f"fiolake-browser-{os.getpid()}-{root.name}"
    targets = {"disk": root / "disk", "tmpfs": tmpfs}
    try:
        for backend, target in targets.items():
            args = ["run", "random-reads", "--create-dir", "--dir", str(target)]
            args += ["--backend", backend, "--lake", str(root / "lake"), "--runtime", "6"]
            args += ["--size", "8M", "--repeat", str(REPS), "--campaign", "browser-1"]
            res = CliRunner().invoke(cli, [*args, "--format", "csv"])
            assert res.exit_code == 0, res.output
    finally:
        for target in targets.values():
            shutil.rmtree(target, ignore_errors=True)
    store = LocalStore(root / "lake")
    FleetStatus(store, "runner-a", "disk", {}, lambda: {"ok": REPS}).start()
    return root / "lake"


@pytest.fixture(scope="module")
def app(lake: Path) -> Iterator[tuple[str, object]]:
    with browser.serve_app(lake) as url, browser.chromium() as context:
        yield url, context


def expected_ratio(lake: Path) -> float:
    """tmpfs / disk geometric-mean IOPS, by hand from the lake."""
    with connect(str(lake)) as handle:
        rows = handle.con.sql(PER_RUN).fetchall()
    logs: dict[str, list[float]] = {}
    for backend, iops in rows:
        logs.setdefault(backend, []).append(math.log(iops))
    assert {b: len(v) for b, v in logs.items()} == {"disk": REPS, "tmpfs": REPS}
    mean = {b: sum(v) / len(v) for b, v in logs.items()}
    return math.exp(mean["tmpfs"] - mean["disk"])


@pytest.mark.parametrize("path", list(browser.PAGES))
def test_every_page_renders_without_errors(app: tuple[str, object], path: str) -> None:
    url, context = app
    shot = browser.ARTIFACTS / f"{path or 'Home'}.png"
    shot.unlink(missing_ok=True)
    visit = browser.visit(context, url, path, shot)
    assert visit.problems == []
    assert visit.console_errors == []
    assert browser.PAGES[path] in visit.text
    assert shot.stat().st_size > 20_000  # a drawn page, not a blank one


def test_landing_page_states_the_ratio(app: tuple[str, object], lake: Path) -> None:
    url, context = app
    ratio = expected_ratio(lake)
    text = browser.visit(context, url, "").text
    assert "campaign browser-1" in text
    assert f"tmpfs {ratio:.2g}× disk IOPS [" in text
    assert "p99 latency" in text


def test_one_verdict_on_every_page_and_no_deploy_button(app: tuple[str, object]) -> None:
    """The landing sentence and the Compare page (any metric selection) give the tmpfs
    row the same verdict; Streamlit runs with the viewer toolbar (no Deploy button)."""
    url, context = app
    home = browser.visit(context, url, "").text
    found = re.search(r"tmpfs \S+ disk IOPS \[[^\]]*\], (\w+)", home)
    assert found, home
    verdict = found.group(1)
    assert verdict in ("better", "worse", "equivalent", "inconclusive")
    for query in ("metric=iops&baseline=disk", "metric=iops&baseline=disk&profile=random-reads"):
        compared = browser.visit(context, url, f"Compare?{query}").text
        assert f"tmpfs {mark(verdict)}" in compared
    page = context.new_page()
    try:
        page.goto(url, wait_until="domcontentloaded")
        browser.wait_settled(page, time.monotonic())
        assert page.locator('[data-testid="stToolbar"]').count() == 1  # toolbar drawn ...
        assert page.locator('[data-testid="stAppDeployButton"]').count() == 0  # ... no Deploy
        assert "Deploy" not in page.inner_text("body")
    finally:
        page.close()


def test_selections_live_in_the_url(app: tuple[str, object]) -> None:
    url, context = app
    # (Tables are drawn on a canvas; the chart's SVG text is readable.)
    text = browser.visit(context, url, "Compare?metric=clat_p99_ns&baseline=tmpfs").text
    assert "clat_p99_ns: ratio to tmpfs" in text
    assert "iops: ratio to disk" in browser.visit(context, url, "Compare").text


def test_the_fleet_page_lists_the_runner(app: tuple[str, object]) -> None:
    url, context = app
    text = browser.visit(context, url, "Fleet").text
    assert "1 of 1 runner(s) alive" in text
