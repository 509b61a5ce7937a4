"""Who may see the app: the login configuration file, its roles, and when a login is due.

Pure (no Streamlit): `fiolake app` validates the file with it before starting the server,
`fiolake stack app-login` writes one, and the pages (`fiolake.app.login`) read the same
file in the server process, so one module owns the format.

The file is Streamlit's own secrets file (TOML) with one section of fiolake's beside
Streamlit's `[auth]`:

    [auth]                      # Streamlit's OIDC login (st.login), one provider
    redirect_uri = "https://fiolake.example.org/oauth2callback"
    cookie_secret = "…"         # signs the login cookie; 32+ random characters
    client_id = "…"
    client_secret = "…"
    server_metadata_url = "https://idp.example.org/.well-known/openid-configuration"
    client_kwargs = { scope = "openid groups" }

    [fiolake]
    ca_file = "/etc/fiolake/idp-ca.crt"   # optional: the CA of a private provider

    [fiolake.roles]
    claim = "groups"                      # the ID-token claim that names the groups
    analyst = ["fiolake-analysts"]        # every page, SQL included
    viewer = ["fiolake-viewers"]          # every page but SQL; "*": anyone signed in

Streamlit reads `[auth]` itself (`--secrets.files`); the secrets never leave the server:
the browser holds only Streamlit's signed, HTTP-only login cookie.
"""

from __future__ import annotations

import ipaddress
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fiolake.errors import UsageProblem

AUTH_ENV = "FIOLAKE_APP_AUTH"  # the file's path, set by `fiolake app --auth`
VIEWER, ANALYST = "viewer", "analyst"
ROLES = (VIEWER, ANALYST)
ANALYST_PAGES = frozenset({"SQL"})  # pages (URL paths) viewers do not get
ANYONE = "*"
MIN_COOKIE_SECRET = 32
REQUIRED_AUTH_KEYS = (
    "redirect_uri", "cookie_secret", "client_id", "client_secret", "server_metadata_url",
)  # fmt: skip
HOW_TO = 'docs/deploy.md "Sharing the app"'


@dataclass(frozen=True)
class RoleMap:
    """Which values of which ID-token claim make a viewer or an analyst."""

    claim: str
    analyst: tuple[str, ...]
    viewer: tuple[str, ...]

    def role_for(self, claims: Mapping[str, Any]) -> str | None:
        """The role of a signed-in user with these ID-token claims; None: no access.

        The claim may be a string or a list of strings (groups); the analyst list is
        checked first, so a member of both groups is an analyst."""
        raw = claims.get(self.claim)
        values = {raw} if isinstance(raw, str) else {str(v) for v in raw or ()}
        for role, allowed in ((ANALYST, self.analyst), (VIEWER, self.viewer)):
            if ANYONE in allowed or values & set(allowed):
                return role
        return None


@dataclass(frozen=True)
class AuthConfig:
    """A validated login configuration file."""

    path: Path
    roles: RoleMap
    ca_file: Path | None


def sign_in_ended(claims: Mapping[str, Any], now: float) -> str | None:
    """Why the sign-in these ID-token claims came from no longer counts, or None while it
    does. A sign-in lasts as long as the provider's ID token (its `exp`, seconds since the
    epoch), not as long as Streamlit's login cookie (30 days), so a reader taken out of a
    group loses the role within the token's lifetime. It fails closed: a token without a
    usable `exp` (missing, not a finite number) does not sign in at all."""
    exp = claims.get("exp")
    if exp is None:
        return "its ID token has no exp (expiry time)"
    if isinstance(exp, bool) or not isinstance(exp, int | float) or not math.isfinite(exp):
        return f"its ID token's exp is {exp!r}, not a time in seconds since the epoch"
    if exp <= now:
        return f"its ID token expired at exp={exp:g}"
    return None


def expired(claims: Mapping[str, Any], now: float) -> bool:
    """True when the sign-in no longer counts (`sign_in_ended` says why)."""
    return sign_in_ended(claims, now) is not None


def hidden_pages(role: str) -> frozenset[str]:
    """URL paths of the pages `role` may not open."""
    return ANALYST_PAGES if role == VIEWER else frozenset()


def is_local_address(address: str) -> bool:
    """True when `address` is reachable from this machine only (loopback, localhost)."""
    if address.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def _problem(path: Path, what: str) -> UsageProblem:
    return UsageProblem(f"login configuration {path}: {what} — see {HOW_TO}")


def _absolute_url(path: Path, key: str, value: object) -> str:
    parts = urlsplit(str(value))
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise _problem(path, f"[auth] {key} must be an absolute http(s) URL, not {value!r}")
    return str(value)


def _check_auth(path: Path, auth: object) -> None:
    if not isinstance(auth, dict):
        raise _problem(path, "no [auth] section (Streamlit's OIDC settings)")
    missing = [k for k in REQUIRED_AUTH_KEYS if not auth.get(k)]
    if missing:
        raise _problem(path, f"[auth] lacks {', '.join(missing)}")
    redirect = _absolute_url(path, "redirect_uri", auth["redirect_uri"])
    if not urlsplit(redirect).path.endswith("/oauth2callback"):
        raise _problem(path, f"[auth] redirect_uri must end in /oauth2callback, not {redirect!r}")
    _absolute_url(path, "server_metadata_url", auth["server_metadata_url"])
    if len(str(auth["cookie_secret"])) < MIN_COOKIE_SECRET:
        raise _problem(
            path,
            f"[auth] cookie_secret is shorter than {MIN_COOKIE_SECRET} characters "
            '(make one with `python3 -c "import secrets; print(secrets.token_urlsafe(32))"`)',
        )


def _names(path: Path, roles: dict, role: str) -> tuple[str, ...]:
    value = roles.get(role, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _problem(path, f"[fiolake.roles] {role} must be a list of claim values")
    return tuple(value)


def _role_map(path: Path, section: object) -> RoleMap:
    roles = section.get("roles") if isinstance(section, dict) else None
    if not isinstance(roles, dict):
        raise _problem(
            path, "no [fiolake.roles] section (which claim values make a viewer or analyst)"
        )
    unknown = set(roles) - {"claim", *ROLES}
    if unknown:
        raise _problem(
            path,
            f"[fiolake.roles] has unknown key(s) {', '.join(sorted(unknown))}: "
            "use claim, viewer, analyst",
        )
    claim = roles.get("claim", "groups")
    if not isinstance(claim, str) or not claim:
        raise _problem(path, "[fiolake.roles] claim must name an ID-token claim (e.g. groups)")
    role_map = RoleMap(claim, _names(path, roles, ANALYST), _names(path, roles, VIEWER))
    if not role_map.analyst and not role_map.viewer:
        raise _problem(path, "[fiolake.roles] gives no one a role: list viewer or analyst values")
    return role_map


def load_auth_config(path: Path) -> AuthConfig:
    """Read and check a login configuration file; UsageProblem says what is wrong."""
    path = Path(path).absolute()
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise _problem(path, "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _problem(path, f"cannot be read ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise _problem(path, f"is not valid TOML ({exc})") from None
    _check_auth(path, data.get("auth"))
    section = data.get("fiolake", {})
    ca = section.get("ca_file") if isinstance(section, dict) else None
    ca_file = Path(ca) if ca else None
    if ca_file is not None and not ca_file.is_file():
        raise _problem(path, f"[fiolake] ca_file {ca_file} does not exist")
    return AuthConfig(path, _role_map(path, section), ca_file)


# TOML basic strings: these need escaping, as must every other control character.
_TOML_ESCAPES = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f",
                 "\r": "\\r"}  # fmt: skip


def _toml_string(value: str) -> str:
    """`value` as a TOML basic string (TOML 1.0 §String): backslash, quote and every
    control character (U+0000–U+001F, U+007F) escaped, so any text reads back as given."""
    out = []
    for char in value:
        if char in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def render_auth_config(
    *,
    redirect_uri: str,
    cookie_secret: str,
    client_id: str,
    client_secret: str,
    server_metadata_url: str,
    scope: str,
    roles: RoleMap,
    ca_file: Path | None = None,
) -> str:
    """The text of a login configuration file (`load_auth_config` reads it back)."""
    q = _toml_string

    def names(values: tuple[str, ...]) -> str:
        return "[" + ", ".join(q(v) for v in values) + "]"

    lines = [
        "# fiolake app --auth THIS_FILE: the OIDC login (docs/deploy.md). Secret: keep 0600.",
        "[auth]",
        f"redirect_uri = {q(redirect_uri)}",
        f"cookie_secret = {q(cookie_secret)}",
        f"client_id = {q(client_id)}",
        f"client_secret = {q(client_secret)}",
        f"server_metadata_url = {q(server_metadata_url)}",
        # prompt=login: a sign-in after a logout asks for the password again.
        f'client_kwargs = {{ scope = {q(scope)}, prompt = "login" }}',
        "",
        "[fiolake]",
        *([f"ca_file = {q(str(ca_file))}"] if ca_file else []),
        "",
        "[fiolake.roles]",
        f"claim = {q(roles.claim)}",
        f"analyst = {names(roles.analyst)}",
        f"viewer = {names(roles.viewer)}",
        "",
    ]
    return "\n".join(lines)
