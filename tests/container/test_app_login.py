"""compose.yaml + compose.login.yaml run for real: the app container behind OpenBao's login.

init configures OpenBao as the app's OIDC provider (readers `viewer` and `analyst`), the
app serves with `--auth /stack/app-login/auth.toml`, and Debian's Chromium (Playwright)
signs in through OpenBao's own web UI as a reader would. A run committed from the host
before the app starts gives the lake something to show, so "no lake data before the
sign-in" is a claim that could fail. (docs/deploy.md "Sharing the app" runs these commands.)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.app.browser import chromium_browser, fill_openbao_sign_in, wait_settled
from tests.container.conftest import (
    COMPOSE,
    ROOT,
    Compose,
    compose_project,
    container_log,
    initialised,
    podman,
)

FIOLAKE = str(Path(sys.executable).parent / "fiolake")
NAV = '[data-testid="stSidebarNav"] a'
PLAYED = "fiolake-app-kube-play-pod-0-app"  # podman kube play's name: <pod>-<container>


def needs_chromium(test: Any) -> Any:
    """A test in Debian's Chromium (marker `browser` too); skipped when it is absent."""
    absent = shutil.which("chromium") is None
    skip = pytest.mark.skipif(absent, reason="Chromium is not installed — run `make sysdeps`")
    return pytest.mark.browser(skip(test))


@pytest.fixture(scope="module")
def login_box(images: float, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Compose]:
    """OpenBao, MinIO and init (with the app login) up, one run committed from the host
    with the runner's credentials, then the app (no runners: none are needed here)."""
    with compose_project("compose.yaml", "compose.login.yaml", runners=0) as box:
        box.run("up", "-d", "--no-build", "openbao", "init", "minio")
        box = initialised(box, "env/runner.env", "app-login/auth.toml")
        target = tmp_path_factory.mktemp("target")
        proc = subprocess.run(
            [FIOLAKE, "run", "random-reads", "--dir", str(target), "--backend", "login-demo",
             "--runtime", "1", "--size", "4M"],
            env=box.role_env("runner"), capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        box.run("up", "-d", "--no-build", "--no-deps", "app")
        _wait_healthy(box)
        yield box


def _wait_healthy(box: Compose, container: str = "") -> None:
    deadline = time.monotonic() + 180
    while True:
        try:
            with urllib.request.urlopen(f"{_app(box)}/_stcore/health", timeout=5) as resp:
                if resp.status == 200 and resp.read() == b"ok":
                    return
        except OSError:
            pass
        assert time.monotonic() < deadline, app_log(box, container)
        time.sleep(2)


def _app(box: Compose) -> str:
    return f"http://127.0.0.1:{box.app_port}"


def app_log(box: Compose, container: str = "") -> str:
    """The app container's output (compose's, or `container`): fiolake and Streamlit log
    to stderr."""
    return container_log(box, container or f"{box.project}_app_1")


def _passwords(box: Compose) -> dict[str, str]:
    """The readers' passwords, read as compose.login.yaml's header says."""
    proc = subprocess.run(
        [COMPOSE, "-f", str(ROOT / "compose.yaml"), "-p", box.project,
         "run", "--rm", "--entrypoint", "cat", "init", "/stack/app-login/users.json"],
        env=box.env, cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    users = json.loads(proc.stdout)["users"]
    return {name: user["password"] for name, user in users.items()}


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with chromium_browser() as browser:
        yield browser


@pytest.fixture
def context(chromium: Any) -> Iterator[Any]:
    """A fresh browser profile (no cookies) that accepts OpenBao's certificate, which the
    stack's private CA signed (a reader trusts /stack/ca.crt or accepts the warning)."""
    context = chromium.new_context(
        ignore_https_errors=True, viewport={"width": 1400, "height": 1000}
    )
    try:
        yield context
    finally:
        context.close()


def _open(context: Any, url: str) -> Any:
    page = context.new_page()
    start = time.monotonic()
    page.goto(url, wait_until="domcontentloaded")
    wait_settled(page, start)
    return page


def sign_in(context: Any, box: Compose, user: str) -> Any:
    """Open the app, press "Log in", sign in on OpenBao's page (method Username), come back
    to the app; the page, settled."""
    page = _open(context, _app(box))
    page.get_by_role("button", name="Log in").click()
    bao = f"https://127.0.0.1:{box.env['FIOLAKE_BAO_PORT']}"
    page.wait_for_url(f"{bao}/ui/vault/identity/oidc/provider/fiolake/authorize?**")
    fill_openbao_sign_in(page, user, _passwords(box)[user])
    page.wait_for_url(f"{_app(box)}/")
    page.get_by_text("Signed in as").wait_for(timeout=60_000)
    wait_settled(page, time.monotonic())
    return page


def _navigation(page: Any) -> list[str]:
    return [link.inner_text().strip() for link in page.query_selector_all(NAV)]


def test_the_app_container_serves_with_the_login(login_box: Compose) -> None:
    with urllib.request.urlopen(f"{_app(login_box)}/_stcore/health", timeout=5) as resp:
        assert resp.status == 200  # open to probes: no login for the health check
    logs = app_log(login_box)
    assert f"fiolake app on {_app(login_box)} (lake s3://fiolake, OIDC login)" in logs


@needs_chromium
def test_a_reader_who_has_not_signed_in_sees_no_lake(login_box: Compose, context: Any) -> None:
    page = _open(context, _app(login_box))
    assert page.get_by_role("button", name="Log in").is_visible()
    text = page.inner_text("body")
    assert "Sign in to see the lake." in text
    assert "Newest comparison" not in text and "Lake:" not in text, text


@needs_chromium
def test_the_analyst_signs_in_through_openbao_and_gets_sql(
    login_box: Compose, context: Any
) -> None:
    page = sign_in(context, login_box, "analyst")
    text = page.inner_text("body")
    assert "Signed in as analyst · analyst" in text
    assert "Newest comparison" in text and "login-demo" in text  # the lake, now shown
    assert {"Home", "Runs", "SQL"} <= set(_navigation(page))
    logs = app_log(login_box)
    assert "fiolake.app.access INFO signed in: analyst as analyst" in logs


@needs_chromium
def test_the_viewer_gets_every_page_but_sql(login_box: Compose, context: Any) -> None:
    page = sign_in(context, login_box, "viewer")
    assert "Signed in as viewer · viewer" in page.inner_text("body")
    navigation = _navigation(page)
    assert {"Home", "Compare", "Runs"} <= set(navigation) and "SQL" not in navigation
    sql = _open(page.context, f"{_app(login_box)}/SQL")  # by its URL: not for viewers either
    text = sql.inner_text("body")
    assert "Signed in as viewer · viewer" in text and "Read-only: SELECT" not in text, text


@needs_chromium
def test_a_page_opened_by_its_url_asks_for_the_sign_in_too(
    login_box: Compose, context: Any
) -> None:
    """Streamlit runs a `pages/` directory's scripts by their URL, before the entry
    script's gate, when that script stops ahead of st.navigation: none may exist."""
    page = _open(context, f"{_app(login_box)}/Runs")
    text = page.inner_text("body")
    assert "Sign in to see the lake." in text
    assert _navigation(page) == [], _navigation(page)
    assert "Lake:" not in text and "login-demo" not in text, text


def _kube_app(box: Compose, etc: Path) -> dict:
    """infra/k8s/app.yaml's Deployment as podman can play it here: the Secrets' and the
    ConfigMap's contents from init (in hostPaths, the login file as the kubelet would
    leave it: 0440 root:10001), host networking on the port the login was made for."""
    import yaml

    docs = {d["kind"]: d for d in yaml.safe_load_all((ROOT / "infra/k8s/app.yaml").read_text())}
    deployment = docs["Deployment"]
    deployment["metadata"] = {"name": "fiolake-app-kube-play"}
    pod = deployment["spec"]["template"]["spec"]
    pod["hostNetwork"] = True  # MinIO and OpenBao listen on the host's 127.0.0.1
    (app,) = pod["containers"]
    app["args"] = [str(box.app_port) if a == "8501" else a for a in app["args"]]
    app.pop("ports")  # podman refuses port mappings with host networking
    for probe in ("readinessProbe", "livenessProbe"):
        app[probe]["httpGet"]["port"] = box.app_port  # was the port's name, "http"
    app.pop("envFrom")  # the Secret's keys, as `kubectl create secret --from-env-file` fills it
    given = {e["name"] for e in app["env"]}
    for line in (box.stack_dir / "env" / "analyst.env").read_text().splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        if name not in given:
            app["env"].append({"name": name, "value": value.strip("'")})
    (etc / "ca").mkdir()
    shutil.copy(box.stack_dir / "ca.crt", etc / "ca" / "ca.crt")
    (etc / "app-login").mkdir()
    # The step the manifest's header asks for: the provider's CA at the pod's path.
    auth = (box.stack_dir / "app-login" / "auth.toml").read_text()
    assert 'ca_file = "/stack/ca.crt"' in auth
    login = etc / "app-login" / "auth.toml"
    login.write_text(auth.replace('"/stack/ca.crt"', '"/etc/fiolake/ca/ca.crt"'))
    os.chown(login, 0, 10001)
    login.chmod(0o440)
    for volume in pod["volumes"]:
        if volume["name"] in ("ca", "app-login"):
            volume.pop("configMap", None)
            volume.pop("secret", None)
            volume["hostPath"] = {"path": str(etc / volume["name"]), "type": "Directory"}
    return deployment


@needs_chromium
def test_kube_play_runs_the_k8s_app_behind_the_login(
    login_box: Compose, context: Any, tmp_path: Path
) -> None:
    import yaml

    manifest = tmp_path / "app.yaml"
    manifest.write_text(yaml.safe_dump(_kube_app(login_box, tmp_path)))
    podman("stop", "-t", "10", f"{login_box.project}_app_1", timeout=60)  # frees the port
    try:
        podman("kube", "play", str(manifest), timeout=300)
        _wait_healthy(login_box, PLAYED)
        anonymous = _open(context, _app(login_box))
        assert "Sign in to see the lake." in anonymous.inner_text("body")
        page = sign_in(context, login_box, "analyst")
        text = page.inner_text("body")
        assert "Signed in as analyst · analyst" in text and "Newest comparison" in text, text
        assert podman("inspect", "--format", "{{.HostConfig.ReadonlyRootfs}}", PLAYED) == "true\n"
        log = app_log(login_box, PLAYED)  # the pod's container served it, not compose's
        assert (
            f"fiolake app on http://0.0.0.0:{login_box.app_port} (lake s3://fiolake, OIDC login)"
            in log
        )
        assert "fiolake.app.access INFO signed in: analyst as analyst" in log
    finally:
        podman("kube", "down", str(manifest), check=False, timeout=120)
        podman("start", f"{login_box.project}_app_1", check=False)
