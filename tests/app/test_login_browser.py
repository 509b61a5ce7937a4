"""The app as a shared service, in Debian's headless Chromium, signing in through the real
OpenBao's OIDC provider (`fiolake stack app-login`; its web UI is the sign-in page):
logged out there is a sign-in page and no lake data in the DOM, a wrong password stays
at OpenBao, a viewer gets Home and Compare but no SQL page, an analyst runs SQL, logging
out ends the session, and no secret of the server reaches the browser."""

from __future__ import annotations

import json
import re
import shutil
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fiolake.cli import cli
from fiolake.stack.env import StackEnv
from tests.aggregator import lakegen
from tests.app import browser

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium"),
]
READ = ("random-reads", "read")
BACKENDS = {"zeta-nvme": {READ: {"iops": 52_000}}, "omega-ceph": {READ: {"iops": 9_000}}}
LAKE_SECRET = "sentinel-lake-secret-key-7f3a"  # the app's lake credentials (server side)
SIGNED_IN = '[data-testid="stSidebar"] :text("Signed in as")'


class App:
    """The app with a login, where to reach it, and who may sign in."""

    def __init__(self, url: str, lake: Path, auth: Path, log: Path, readers: dict) -> None:
        self.url, self.lake, self.auth, self.log = url, lake, auth, log
        self.readers = readers

    def password(self, name: str) -> str:
        return str(self.readers[name]["password"])


@pytest.fixture(scope="module")
def app(stack: StackEnv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    root = tmp_path_factory.mktemp("login")
    lake = root / "lake"
    lakegen.write_campaign(lakegen.local_store(lake), "night-1", BACKENDS, 3, jitter=0.02)
    port = browser.free_port()
    url = f"http://127.0.0.1:{port}"
    args = ["stack", "app-login", "--state-dir", str(stack.state_dir), "--app-url", url]
    args += ["--user", "vera:viewer", "--user", "ana:analyst", "--format", "json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    readers = {r["name"]: r for r in json.loads(result.stdout)}
    auth = stack.state_dir / "app-login" / "auth.toml"
    log = root / "app.log"
    env = {"AWS_SECRET_ACCESS_KEY": LAKE_SECRET, "AWS_ACCESS_KEY_ID": "fiolake-analyst"}
    serve = ["--address", "0.0.0.0", "--auth", str(auth)]
    with browser.serve_app(lake, env=env, args=serve, port=port, log=log):
        yield App(url, lake, auth, log, readers)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with browser.chromium_browser() as b:
        yield b


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    """A fresh browser profile (no cookies) that accepts the stack's private CA."""
    context = chromium.new_context(
        ignore_https_errors=True, viewport={"width": 1400, "height": 1000}
    )
    try:
        yield context.new_page()
    finally:
        context.close()


def to_openbao(page: Any, app: App) -> None:
    page.goto(f"{app.url}/", wait_until="domcontentloaded")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/ui/vault/"), timeout=60_000)


def sign_in(page: Any, app: App, user: str, password: str) -> None:
    """From the app's sign-in page through OpenBao's (user name and password)."""
    to_openbao(page, app)
    browser.fill_openbao_sign_in(page, user, password)


def signed_in(page: Any, app: App, user: str) -> str:
    sign_in(page, app, user, app.password(user))
    page.wait_for_url(re.compile(re.escape(app.url)), timeout=60_000)
    page.wait_for_selector(SIGNED_IN, timeout=60_000)
    browser.wait_settled(page, time.monotonic())
    return str(page.inner_text('[data-testid="stSidebar"]'))


def lake_data_shown(html: str, app: App) -> list[str]:
    """What of the lake a page's DOM gives away."""
    marks = [*BACKENDS, "Newest comparison", "Committed runs", str(app.lake), "night-1"]
    return [m for m in marks if m in html]


@pytest.mark.parametrize("path", ["", "Compare", "SQL", "Runs"])
def test_logged_out_every_url_is_the_sign_in_page(page: Any, app: App, path: str) -> None:
    page.goto(f"{app.url}/{path}", wait_until="domcontentloaded")
    page.get_by_role("button", name="Log in").wait_for(timeout=60_000)
    browser.wait_settled(page, time.monotonic())
    assert "Sign in to see the lake." in page.inner_text("body")
    assert lake_data_shown(page.content(), app) == []
    assert page.query_selector('[data-testid="stSidebarNav"]') is None, page.inner_text("body")


def test_a_wrong_password_stays_at_openbao(page: Any, app: App) -> None:
    sign_in(page, app, "vera", "not-her-password")
    page.get_by_text("invalid username or password").wait_for(timeout=30_000)
    assert page.url.startswith("https://")  # still OpenBao's page, not the app
    page.goto(f"{app.url}/", wait_until="domcontentloaded")
    page.get_by_role("button", name="Log in").wait_for(timeout=60_000)
    assert lake_data_shown(page.content(), app) == []


def test_a_viewer_gets_home_and_compare_but_no_sql(page: Any, app: App) -> None:
    sidebar = signed_in(page, app, "vera")
    assert "Signed in as vera · viewer" in sidebar
    nav = page.inner_text('[data-testid="stSidebarNav"]').split("\n")
    assert "Compare" in nav and "Home" in nav and "SQL" not in nav
    assert "Newest comparison" in page.inner_text("body")  # Home, with the lake's answer
    page.get_by_role("link", name="Compare").click()
    page.get_by_role("heading", name="Compare backends").wait_for(timeout=60_000)
    page.goto(f"{app.url}/SQL", wait_until="domcontentloaded")  # typed by hand
    page.wait_for_selector(SIGNED_IN, timeout=60_000)
    browser.wait_settled(page, time.monotonic())
    assert page.query_selector('textarea[aria-label="Query"]') is None
    assert page.inner_text("h1") != "SQL"


def test_an_analyst_runs_sql(page: Any, app: App) -> None:
    sidebar = signed_in(page, app, "ana")
    assert "Signed in as ana · analyst" in sidebar
    page.get_by_role("link", name="SQL").click()
    query = page.get_by_label("Query")
    query.wait_for(timeout=60_000)
    query.fill("SELECT count(*) AS runs FROM runs WHERE backend = 'zeta-nvme'")
    page.get_by_role("button", name="Run").click()
    page.get_by_text("1 row(s)").wait_for(timeout=60_000)
    assert "SQL by ana: SELECT count(*) AS runs FROM runs WHERE backend = 'zeta-nvme'" in (
        app.log.read_text()
    )


def test_logout_ends_the_session(page: Any, app: App) -> None:
    signed_in(page, app, "ana")
    page.get_by_role("button", name="Log out").click()
    page.get_by_role("button", name="Log in").wait_for(timeout=60_000)
    page.reload(wait_until="domcontentloaded")  # the cookie is gone, not just the page
    page.get_by_role("button", name="Log in").wait_for(timeout=60_000)
    assert lake_data_shown(page.content(), app) == []
    to_openbao(page, app)  # signing in again asks for the password again (prompt=login)
    page.get_by_role("button", name="Sign In").wait_for(timeout=30_000)
    page.wait_for_timeout(3000)  # OpenBao's own session would send the reader back by now
    assert page.url.startswith("https://") and "/ui/vault/auth" in page.url
    log = app.log.read_text()
    assert "signed out: ana" in log
    assert "refused" not in log  # a sign-out is not a refusal (the run stops at st.logout)


def test_no_secret_of_the_server_reaches_the_browser(page: Any, app: App) -> None:
    signed_in(page, app, "ana")
    auth = tomllib.loads(app.auth.read_text())["auth"]
    secrets = [auth["client_secret"], auth["cookie_secret"], LAKE_SECRET]
    cookies = page.context.cookies(app.url)
    seen = page.content() + json.dumps(cookies)
    seen += json.dumps(page.evaluate("() => ({...localStorage, ...sessionStorage})"))
    assert [s for s in secrets if s in seen] == []
    login_cookies = [c for c in cookies if c["name"].startswith("_streamlit_user")]
    assert login_cookies and all(c["httpOnly"] for c in login_cookies)  # no script reads it


def test_a_sign_in_ends_with_the_id_token(page: Any, app: App, stack: StackEnv) -> None:
    """The app honours the ID token's `exp`, not Streamlit's 30-day cookie: a reader the
    provider stops vouching for is asked to sign in again."""
    import hvac

    from fiolake.stack.app_login import CLIENT, ID_TOKEN_TTL

    bao = hvac.Client(url=stack.vault_addr, token=stack.root_token, verify=str(stack.vault_cacert))
    client = f"/v1/identity/oidc/client/{CLIENT}"
    bao.adapter.post(client, json={"id_token_ttl": "12s"})
    try:
        signed_in(page, app, "vera")
    finally:
        bao.adapter.post(client, json={"id_token_ttl": ID_TOKEN_TTL})
    assert bao.adapter.get(client)["data"]["id_token_ttl"] == 8 * 3600
    page.wait_for_timeout(13_000)
    page.reload(wait_until="domcontentloaded")
    page.get_by_text("Your sign-in has expired: sign in again.").wait_for(timeout=60_000)
    assert lake_data_shown(page.content(), app) == []
    assert "sign-in expired: vera" in app.log.read_text()
