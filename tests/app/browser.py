"""The real app in a real browser: `fiolake app` on a free 127.0.0.1 port, Debian's
Chromium driven by Playwright (never a downloaded browser), and "settled" as a user sees
it: no running indicator and no skeleton for a while. Shared by tests/app/test_browser.py
and the benchmark tests/bench/app_pages.py."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

FIOLAKE = Path(sys.executable).parent / "fiolake"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Without these Chromium phones home (updates, sync, QUIC probes) on a closed network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PAGES = {  # URL path -> the page's title
    "": "fiolake",
    "Compare": "Compare backends",
    "Latency": "Latency",
    "Timeseries": "Per-second timeseries",
    "Trends": "Trends",
    "Runs": "Runs",
    "Fleet": "Fleet",
    "SQL": "SQL",
    "Gate": "Regression gate",
    "Saturation": "Saturation: IOPS at a latency SLO",
}
BUSY = (
    '[data-testid="stStatusWidget"], [data-testid="stSkeleton"], '
    '[data-testid="stAppSkeleton"], [data-testid="stSpinner"]'
)
PROBLEMS = '[data-testid="stException"], [data-testid="stAlertContentError"]'
ARTIFACTS = Path(__file__).resolve().parents[2] / "build" / "test-artifacts" / "app"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def serve_app(
    lake: Path | str,
    env: dict[str, str] | None = None,
    args: list[str] | None = None,
    port: int | None = None,
    log: Path | None = None,
) -> Iterator[str]:
    """`fiolake app` (with `args`) on `port` or a free one; yields its base URL, stops it
    (SIGTERM) on exit. `log` receives the server's stderr."""
    port = port or free_port()
    stderr = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [str(FIOLAKE), "app", "--lake", str(lake), "--port", str(port), *(args or [])],
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        env=dict(os.environ, **(env or {})),
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=5) as resp:
                    if resp.read() == b"ok":
                        break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"fiolake app did not start on port {port}") from None
                time.sleep(0.3)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if log:
            stderr.close()  # type: ignore[union-attr]


@contextmanager
def chromium(width: int = 1400, height: int = 1000) -> Iterator[object]:
    """A headless Chromium context (fresh profile dir) from Debian's package."""
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="fiolake-chromium-")
    try:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                profile,
                executable_path=CHROMIUM,
                headless=True,
                args=CHROMIUM_ARGS,
                viewport={"width": width, "height": height},
            )
            try:
                yield context
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


@contextmanager
def chromium_browser() -> Iterator[object]:
    """Debian's headless Chromium as a Playwright Browser, for several isolated contexts
    (one per signed-in reader: cookies are not shared between them)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def fill_openbao_sign_in(page, user: str, password: str) -> None:  # noqa: ANN001
    """On OpenBao's sign-in page (the provider of `fiolake stack app-login`): method
    "Username" (userpass), the reader's name and password, "Sign In"."""
    page.get_by_label("Method").select_option("userpass")
    page.get_by_label("Username").fill(user)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign In").click()


@dataclass
class Visit:
    """One page load: how long until it settled, what went wrong, what it says."""

    path: str
    settle_s: float
    console_errors: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # exception / error elements' text
    text: str = ""


def wait_settled(page, start: float, quiet_s: float = 1.5, timeout_s: float = 120.0) -> float:  # noqa: ANN001
    """Seconds from `start` (monotonic, taken before navigating) until the page showed no
    running indicator and no skeleton, and the app had drawn its title, then stayed so for
    `quiet_s` (the quiet period itself is not counted)."""
    calm_since: float | None = None
    while time.monotonic() - start < timeout_s:
        busy = page.evaluate(
            "([busy]) => !document.querySelector('h1') || !!document.querySelector(busy)",
            [BUSY],
        )
        now = time.monotonic()
        if busy:
            calm_since = None
        elif calm_since is None:
            calm_since = now
        elif now - calm_since >= quiet_s:
            return calm_since - start
        page.wait_for_timeout(50)
    raise TimeoutError(f"page {page.url} did not settle within {timeout_s:.0f} s")


# Opened at /<Page>, Streamlit's frontend first probes /<Page>/_stcore/... for a base path,
# gets 404, and falls back to /_stcore/ (its own behaviour, not an app error).
BASE_PATH_PROBE = re.compile(r"/[^/]+/_stcore/(host-config|health)$")


def _is_error(message) -> bool:  # noqa: ANN001
    if message.type != "error":
        return False
    return not BASE_PATH_PROBE.search((message.location or {}).get("url", ""))


def screenshot(page, path: Path) -> None:  # noqa: ANN001
    """The whole page: Streamlit scrolls inside its main block, not the document, so
    the viewport is stretched to the content's height first."""
    size = page.viewport_size
    tall = page.evaluate(
        '() => Math.max(...[...document.querySelectorAll(\'[data-testid="stMain"], '
        '[data-testid="stMainBlockContainer"]\')].map(e => e.scrollHeight), 0)'
    )
    page.set_viewport_size({"width": size["width"], "height": max(size["height"], tall + 40)})
    page.wait_for_timeout(300)  # let Vega re-lay out at the new size
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(size)


def visit(context, url: str, path: str, shot: Path | None = None) -> Visit:  # noqa: ANN001
    """Open `url/path` in a new tab, wait until it settled, collect errors and text."""
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if _is_error(m) else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        start = time.monotonic()
        page.goto(f"{url}/{path}", wait_until="domcontentloaded")
        settle = wait_settled(page, start)
        problems = [e.inner_text() for e in page.query_selector_all(PROBLEMS)]
        text = page.inner_text("body")
        if shot is not None:
            screenshot(page, shot)
        return Visit(path, settle, errors, problems, text)
    finally:
        page.close()
