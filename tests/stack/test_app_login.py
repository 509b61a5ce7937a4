"""`fiolake stack app-login` against the real OpenBao: the provider it configures answers
OpenID discovery over TLS, a reader's code flow (OpenBao's API, as its web UI drives it)
yields an ID token whose claims make the reader's role, a wrong password gets nothing,
and running it again keeps passwords while moving and adding readers."""

from __future__ import annotations

import json
import secrets
import stat
from pathlib import Path
from typing import Any

import hvac
import hvac.exceptions
import pytest
import requests
from click.testing import CliRunner

from fiolake.app.access import ANALYST, VIEWER, load_auth_config
from fiolake.cli import cli
from fiolake.stack.env import StackEnv

pytestmark = pytest.mark.stack
APP = "http://127.0.0.1:18599"  # nothing listens: the code comes back in the redirect


def app_login(stack: StackEnv, *users: str) -> list[dict[str, str]]:
    args = ["stack", "app-login", "--state-dir", str(stack.state_dir), "--app-url", APP]
    for user in users:
        args += ["--user", user]
    result = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def id_token_claims(stack: StackEnv, user: str, password: str) -> dict[str, Any]:
    """Sign `user` in (userpass) and run the authorization-code flow the web UI runs; the
    ID token's claims, its signature checked against the provider's published keys."""
    from joserfc import jwt
    from joserfc.jwk import KeySet

    config = load_auth_config(stack.state_dir / "app-login" / "auth.toml")
    auth = _auth_section(config.path)
    ca = str(stack.vault_cacert)
    bao = hvac.Client(url=stack.vault_addr, verify=ca)
    bao.auth.userpass.login(user, password)
    meta = requests.get(auth["server_metadata_url"], verify=ca, timeout=10).json()
    nonce = secrets.token_urlsafe(12)
    code = bao.adapter.post(
        "/v1/identity/oidc/provider/fiolake/authorize",
        json={"client_id": auth["client_id"], "redirect_uri": auth["redirect_uri"],
              "response_type": "code", "scope": auth["client_kwargs"]["scope"],
              "state": "s", "nonce": nonce},
    )["code"]  # fmt: skip
    tokens = requests.post(
        meta["token_endpoint"],
        data={"grant_type": "authorization_code", "code": code,
              "redirect_uri": auth["redirect_uri"]},
        auth=(auth["client_id"], auth["client_secret"]),
        verify=ca,
        timeout=10,
    ).json()  # fmt: skip
    keys = KeySet.import_key_set(requests.get(meta["jwks_uri"], verify=ca, timeout=10).json())
    token = jwt.decode(tokens["id_token"], keys)  # raises unless the signature checks out
    jwt.JWTClaimsRegistry(
        iss={"essential": True, "value": meta["issuer"]},
        aud={"essential": True, "value": auth["client_id"]},
        nonce={"essential": True, "value": nonce},
    ).validate(token.claims)  # and unless it is for this app, now, with this nonce
    return dict(token.claims)


def _auth_section(path: Path) -> dict[str, Any]:
    import tomllib

    return tomllib.loads(path.read_text())["auth"]


def test_the_provider_answers_discovery_over_tls(stack: StackEnv) -> None:
    readers = app_login(stack, "vera:viewer", "ana:analyst")
    assert {(r["name"], r["role"]) for r in readers} >= {("vera", VIEWER), ("ana", ANALYST)}
    login_dir = stack.state_dir / "app-login"
    for name in ("auth.toml", "users.json"):  # secrets: the owner's only
        assert stat.S_IMODE((login_dir / name).stat().st_mode) == 0o600
    config = load_auth_config(login_dir / "auth.toml")
    assert config.ca_file == stack.vault_cacert
    auth = _auth_section(config.path)
    assert auth["redirect_uri"] == f"{APP}/oauth2callback"
    meta = requests.get(auth["server_metadata_url"], verify=str(config.ca_file), timeout=10)
    assert meta.json()["issuer"] == f"{stack.vault_addr}/v1/identity/oidc/provider/fiolake"
    # The sign-in page is OpenBao's web UI, enabled by the stack's server config.
    assert meta.json()["authorization_endpoint"].startswith(f"{stack.vault_addr}/ui/")
    ui = requests.get(f"{stack.vault_addr}/ui/", verify=str(config.ca_file), timeout=10)
    assert ui.status_code == 200 and "OpenBao" in ui.text


def test_the_id_token_makes_each_readers_role(stack: StackEnv) -> None:
    readers = {r["name"]: r for r in app_login(stack, "vera:viewer", "ana:analyst")}
    roles = load_auth_config(stack.state_dir / "app-login" / "auth.toml").roles
    for name, role in (("vera", VIEWER), ("ana", ANALYST)):
        claims = id_token_claims(stack, name, readers[name]["password"])
        assert claims["preferred_username"] == name
        assert roles.role_for(claims) == role, claims


def test_a_wrong_password_gets_no_token(stack: StackEnv) -> None:
    app_login(stack, "vera:viewer")
    bao = hvac.Client(url=stack.vault_addr, verify=str(stack.vault_cacert))
    with pytest.raises(hvac.exceptions.InvalidRequest, match="invalid username or password"):
        bao.auth.userpass.login("vera", "not-the-password")


def test_running_again_keeps_passwords_moves_and_adds_readers(stack: StackEnv) -> None:
    first = {r["name"]: r for r in app_login(stack, "vera:viewer", "ana:analyst")}
    again = {r["name"]: r for r in app_login(stack, "vera:analyst", "nora:viewer")}
    assert {n: again[n]["password"] for n in first} == {n: first[n]["password"] for n in first}
    assert (again["vera"]["role"], again["ana"]["role"], again["nora"]["role"]) == (
        ANALYST, ANALYST, VIEWER,
    )  # fmt: skip
    roles = load_auth_config(stack.state_dir / "app-login" / "auth.toml").roles
    vera = id_token_claims(stack, "vera", again["vera"]["password"])
    assert roles.role_for(vera) == ANALYST  # moved: no longer in the viewers' group
    assert vera["groups"] == ["fiolake-analysts"]
    app_login(stack, "vera:viewer")  # leave the shared stack as the other tests expect
