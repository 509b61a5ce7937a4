"""Give the app a sign-in through the stack's OpenBao: its OIDC provider configured for
the app (`fiolake.stack.app_login`) and the app's login file written
(`fiolake.app.access`), for `fiolake stack app-login` and compose's `init --app-url`.

Here, not in either package, because it joins the two: the stack may not import the app.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from fiolake.app.access import RoleMap, render_auth_config
from fiolake.errors import UsageProblem
from fiolake.stack.app_login import GROUP_CLAIM, GROUPS, configure_app_login
from fiolake.stack.process import read_json, write_private, write_private_json

AUTH_FILE, USERS_FILE = "auth.toml", "users.json"


@dataclass(frozen=True)
class Reader:
    """One person who may sign in to the app."""

    name: str
    role: str
    password: str


def parse_user(text: str) -> tuple[str, str]:
    """`NAME:ROLE` -> (name, role); UsageProblem when it is not that."""
    name, sep, role = text.partition(":")
    if not sep or not name or role not in GROUPS:
        raise UsageProblem(
            f"--user {text!r} is not NAME:ROLE — e.g. --user ana:analyst "
            f"(roles: {', '.join(GROUPS)})"
        )
    return name, role


def callback_url(app_url: str) -> str:
    """The app's OIDC redirect URI for the address readers use to reach it."""
    parts = urlsplit(app_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageProblem(
            f"--app-url {app_url!r} is not an absolute URL — give the address readers "
            "open, e.g. http://127.0.0.1:8501 or https://fiolake.example.org"
        )
    return app_url.rstrip("/") + "/oauth2callback"


def set_up_app_login(
    out_dir: Path,
    *,
    bao_addr: str,
    ca: Path | None,
    root_token: str,
    app_url: str,
    users: list[tuple[str, str]],
) -> tuple[Path, list[Reader]]:
    """Configure OpenBao's provider for the app at `app_url` and write OUT_DIR/auth.toml
    (0600); readers kept in OUT_DIR/users.json (0600) keep their passwords and are
    re-applied, so a second call adds people instead of dropping the first ones."""
    redirect = callback_url(app_url)
    saved = read_json(out_dir / USERS_FILE) or {}
    known = dict(saved.get("users", {}))
    for name, role in users:
        known[name] = {
            "role": role,
            "password": known.get(name, {}).get("password") or secrets.token_urlsafe(18),
        }
    if not known:
        raise UsageProblem("no readers: give --user NAME:ROLE (viewer or analyst) at least once")
    cookie_secret = saved.get("cookie_secret") or secrets.token_urlsafe(48)
    app = configure_app_login(
        bao_addr,
        ca,
        root_token,
        redirect_uris=[redirect],
        users={name: (u["role"], u["password"]) for name, u in known.items()},
    )
    out_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_private_json(out_dir / USERS_FILE, {"cookie_secret": cookie_secret, "users": known})
    text = render_auth_config(
        redirect_uri=redirect,
        cookie_secret=cookie_secret,
        client_id=app.client_id,
        client_secret=app.client_secret,
        server_metadata_url=app.server_metadata_url,
        scope=app.scope,
        roles=RoleMap(GROUP_CLAIM, (GROUPS["analyst"],), (GROUPS["viewer"],)),
        ca_file=ca,
    )
    auth = out_dir / AUTH_FILE
    write_private(auth, text)
    readers = [Reader(n, u["role"], u["password"]) for n, u in sorted(known.items())]
    return auth, readers


def readers_json(readers: list[Reader]) -> str:
    """The readers as JSON (what `--format json` prints)."""
    return json.dumps([r.__dict__ for r in readers], indent=2)
