"""The login file of `fiolake app --auth` (fiolake.app.access): what it accepts, what it
refuses with which whole message, which claims make which role, and that the file
`fiolake stack app-login` writes reads back as written."""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fiolake.app.access import (
    ANALYST,
    VIEWER,
    RoleMap,
    expired,
    hidden_pages,
    is_local_address,
    load_auth_config,
    render_auth_config,
    sign_in_ended,
)
from fiolake.errors import UsageProblem

AUTH = """
[auth]
redirect_uri = "https://fiolake.example.org/oauth2callback"
cookie_secret = "0123456789abcdef0123456789abcdef"
client_id = "fiolake"
client_secret = "s3cret"
server_metadata_url = "https://idp.example.org/.well-known/openid-configuration"
"""
ROLES = """
[fiolake.roles]
claim = "groups"
analyst = ["storage-team"]
viewer = ["managers", "platform"]
"""
HOW = ' — see docs/deploy.md "Sharing the app"'


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "auth.toml"
    path.write_text(text)
    return path


def test_a_whole_file_reads_back(tmp_path: Path) -> None:
    config = load_auth_config(write(tmp_path, AUTH + ROLES))
    assert config.roles == RoleMap("groups", ("storage-team",), ("managers", "platform"))
    assert config.ca_file is None
    assert config.path == tmp_path / "auth.toml"


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("[auth\n", "is not valid TOML (Expected ']' at the end of a table declaration "
         "(at line 1, column 6))"),
        (ROLES, "no [auth] section (Streamlit's OIDC settings)"),
        (AUTH.replace('client_secret = "s3cret"\n', "") + ROLES, "[auth] lacks client_secret"),
        (AUTH.replace("https://fiolake.example.org/oauth2callback", "/oauth2callback") + ROLES,
         "[auth] redirect_uri must be an absolute http(s) URL, not '/oauth2callback'"),
        (AUTH.replace("/oauth2callback", "/callback") + ROLES,
         "[auth] redirect_uri must end in /oauth2callback, not "
         "'https://fiolake.example.org/callback'"),
        (AUTH.replace("0123456789abcdef0123456789abcdef", "short") + ROLES,
         "[auth] cookie_secret is shorter than 32 characters (make one with "
         '`python3 -c "import secrets; print(secrets.token_urlsafe(32))"`)'),
        (AUTH, "no [fiolake.roles] section (which claim values make a viewer or analyst)"),
        (AUTH + "[fiolake.roles]\nanalysts = ['x']\n",
         "[fiolake.roles] has unknown key(s) analysts: use claim, viewer, analyst"),
        (AUTH + "[fiolake.roles]\nviewer = 3\n",
         "[fiolake.roles] viewer must be a list of claim values"),
        (AUTH + "[fiolake.roles]\nclaim = ''\nviewer = ['x']\n",
         "[fiolake.roles] claim must name an ID-token claim (e.g. groups)"),
        (AUTH + "[fiolake.roles]\nviewer = []\n",
         "[fiolake.roles] gives no one a role: list viewer or analyst values"),
        (AUTH + "[fiolake]\nca_file = '/nonexistent/ca.crt'\n" + ROLES,
         "[fiolake] ca_file /nonexistent/ca.crt does not exist"),
    ],
    ids=["toml", "no-auth", "lacks", "relative", "callback", "cookie", "no-roles", "unknown",
         "not-list", "claim", "no-one", "ca"],
)  # fmt: skip
def test_a_bad_file_says_what_is_wrong(tmp_path: Path, text: str, what: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(UsageProblem) as caught:
        load_auth_config(path)
    assert str(caught.value) == f"login configuration {path}: {what}{HOW}"


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(UsageProblem, match=r"auth\.toml: no such file — see docs/deploy"):
        load_auth_config(tmp_path / "auth.toml")


@pytest.mark.parametrize(
    ("claims", "role"),
    [
        ({"groups": ["storage-team"]}, ANALYST),
        ({"groups": ["managers"]}, VIEWER),
        ({"groups": ["platform", "storage-team"]}, ANALYST),  # both: the higher role
        ({"groups": "platform"}, VIEWER),  # a single string, as some providers send it
        ({"groups": ["sales"]}, None),
        ({"groups": []}, None),
        ({}, None),  # the claim missing: no role, not an error
        ({"email": "storage-team"}, None),  # another claim does not count
    ],
)
def test_claims_make_roles(claims: dict, role: str | None) -> None:
    roles = RoleMap("groups", ("storage-team",), ("managers", "platform"))
    assert roles.role_for(claims) == role


def test_a_star_lets_anyone_signed_in_view() -> None:
    roles = RoleMap("email", ("ana@example.org",), ("*",))
    assert roles.role_for({"email": "ana@example.org"}) == ANALYST
    assert roles.role_for({"email": "someone@else.org"}) == VIEWER
    assert roles.role_for({}) == VIEWER


@given(st.lists(st.text(max_size=12), max_size=5), st.lists(st.text(max_size=12), max_size=5))
def test_a_role_only_from_a_listed_value(analyst: list[str], values: list[str]) -> None:
    roles = RoleMap("groups", tuple(analyst), ())
    role = roles.role_for({"groups": values})
    listed = "*" in analyst or bool(set(values) & set(analyst))
    assert role == (ANALYST if listed else None)


def test_viewers_lose_only_the_sql_page() -> None:
    assert hidden_pages(VIEWER) == {"SQL"}
    assert hidden_pages(ANALYST) == frozenset()


@pytest.mark.parametrize(
    ("address", "local"),
    [("127.0.0.1", True), ("127.1.2.3", True), ("::1", True), ("[::1]", True),
     ("localhost", True), ("0.0.0.0", False), ("::", False), ("192.0.2.7", False),
     ("fiolake.example.org", False)],
)  # fmt: skip
def test_only_loopback_is_local(address: str, local: bool) -> None:
    assert is_local_address(address) is local


def test_the_written_file_reads_back(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    roles = RoleMap("groups", ('a "quoted" group',), ("viewers", "back\\slash"))
    text = render_auth_config(
        redirect_uri="http://127.0.0.1:8501/oauth2callback",
        cookie_secret="c" * 48,
        client_id="id",
        client_secret="secret",
        server_metadata_url="https://127.0.0.1:8300/v1/identity/oidc/provider/fiolake/"
        ".well-known/openid-configuration",
        scope="openid groups user",
        roles=roles,
        ca_file=ca,
    )
    config = load_auth_config(write(tmp_path, text))
    assert config.roles == roles
    assert config.ca_file == ca


@pytest.mark.parametrize(
    ("claims", "now", "over"),
    [({"exp": 1000}, 999.5, False), ({"exp": 1000}, 1000.0, True), ({"exp": 1000.5}, 2000, True),
     ({}, 0, True), ({"exp": None}, 0, True), ({"exp": "1000"}, 0, True), ({"exp": True}, 0, True),
     ({"exp": float("nan")}, 0, True), ({"exp": float("inf")}, 0, True)],
)  # fmt: skip
def test_a_sign_in_ends_when_its_id_token_does(claims: dict, now: float, over: bool) -> None:
    """Issue 41: it fails closed — a token without a usable exp does not sign in."""
    assert expired(claims, now) is over


def test_a_token_without_exp_says_why_it_does_not_sign_in() -> None:
    assert sign_in_ended({}, 0) == "its ID token has no exp (expiry time)"
    assert sign_in_ended({"exp": "soon"}, 0) == (
        "its ID token's exp is 'soon', not a time in seconds since the epoch"
    )
    assert sign_in_ended({"exp": 1000}, 2000) == "its ID token expired at exp=1000"
    assert sign_in_ended({"exp": 3000}, 2000) is None


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@given(
    st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1)),
    st.timedeltas(min_value=timedelta(days=-3), max_value=timedelta(days=3)),
)
def test_a_sign_in_counts_until_the_moment_its_token_expires(at: datetime, left: timedelta) -> None:
    """The oracle is calendar arithmetic, not the rule: a token whose exp is the instant
    `at` + `left` (whole seconds since the epoch, as a JWT writes it) counts exactly while the
    clock reads before that instant."""
    now = at.replace(tzinfo=UTC)
    ends = now + left
    exp = (ends - EPOCH) // timedelta(seconds=1)  # whole seconds, as a JWT's NumericDate
    still = EPOCH + timedelta(seconds=exp) > now
    assert expired({"exp": exp}, now.timestamp()) is not still


@given(st.text(st.characters(blacklist_categories=("Cs",))))
def test_any_text_reads_back_from_the_login_file(value: str) -> None:
    """Issue 41: a newline, quote, backslash or control character in a value is escaped."""
    text = render_auth_config(
        redirect_uri="https://fiolake.example.org/oauth2callback",
        cookie_secret=value,
        client_id="fiolake",
        client_secret=value,
        server_metadata_url="https://idp.example.org/.well-known/openid-configuration",
        scope="openid groups",
        roles=RoleMap(value or "groups", ("fiolake-analysts",), ()),
    )
    data = tomllib.loads(text)
    assert data["auth"]["client_secret"] == value
    assert data["fiolake"]["roles"]["claim"] == (value or "groups")


def test_a_secret_with_a_newline_reads_back(tmp_path: Path) -> None:
    roles = RoleMap("groups", ("a\nb",), ('say "hi"\\',))
    text = render_auth_config(
        redirect_uri="https://fiolake.example.org/oauth2callback",
        cookie_secret="0123456789abcdef0123456789abcdef\nsecond line\x7f\x00",
        client_id="fiolake",
        client_secret="line one\r\nline two\t",
        server_metadata_url="https://idp.example.org/.well-known/openid-configuration",
        scope="openid groups",
        roles=roles,
    )
    config = load_auth_config(write(tmp_path, text))
    assert config.roles == roles
    auth = tomllib.loads(text)["auth"]
    assert auth["client_secret"] == "line one\r\nline two\t"
    assert auth["cookie_secret"].endswith("\nsecond line\x7f\x00")
