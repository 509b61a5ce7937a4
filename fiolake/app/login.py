"""The login gate of the pages: who is reading, in which role, and a way out.

Without a login configuration (`fiolake app` on 127.0.0.1, or `--insecure-no-login`)
everyone is an analyst, as before. With one (`--auth FILE`, passed on as FIOLAKE_APP_AUTH)
a reader who has not signed in sees only a sign-in page, a signed-in reader without a role
sees only that, and the others get their role's pages (`access.hidden_pages`).

A sign-in lasts as long as the provider's ID token (`exp`; OpenBao from `stack app-login`:
8 hours), not as long as Streamlit's 30-day login cookie: then the reader signs in again,
and a reader the provider no longer puts in a group has lost the role.

What is logged (the server's stderr): each session's first page view with the user and
role, sign-outs and expired sign-ins, each refusal (no role, a page above the role), and
who ran which SQL query.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import streamlit as st

from fiolake.app.access import ANALYST, AUTH_ENV, AuthConfig, load_auth_config, sign_in_ended

log = logging.getLogger("fiolake.app.access")
OPEN = "open"  # the identity shown when there is no login
NO_ROLE = "none"  # a reader not signed in, expired, or without a role


@st.cache_resource(show_spinner=False)
def _config(path: str) -> AuthConfig:
    return load_auth_config(Path(path))


def auth_config() -> AuthConfig | None:
    """The login configuration this server was started with, or None (no login)."""
    path = os.environ.get(AUTH_ENV)
    return _config(path) if path else None


def _user_name() -> str:
    user = st.user
    for key in ("email", "preferred_username", "name", "sub"):
        value = user.get(key)
        if value:
            return str(value)
    return "unknown"


def _sign_in_page(note: str = "") -> None:
    st.title("fiolake")
    if note:
        st.info(note)
    st.markdown("Sign in to see the lake.")
    if st.button("Log in", type="primary"):
        st.login()
    st.stop()


def _no_role_page(config: AuthConfig, name: str) -> None:
    claim = config.roles.claim
    log.warning("refused %s: no fiolake role (claim %s = %r)", name, claim, st.user.get(claim))
    st.title("fiolake")
    st.error(
        f"Signed in as {name}, but no fiolake role comes with it: ask whoever runs this "
        f"app to add you to one of: {', '.join(config.roles.analyst + config.roles.viewer)} "
        f"(claim `{claim}`)."
    )
    if st.button("Log out"):
        st.logout()
    st.stop()


def _signed_in() -> bool:
    return bool(st.user.is_logged_in) and sign_in_ended(st.user.to_dict(), time.time()) is None


def current_role() -> str:
    """The reader's role; draws the sign-in page and stops the script when there is none.

    Call it first, before anything reads the lake: the page shows nothing else until it
    returns. The sidebar then names the reader and offers "Log out"."""
    config = auth_config()
    if config is None:
        return ANALYST
    if not st.user.is_logged_in:
        _sign_in_page()
    ended = sign_in_ended(st.user.to_dict(), time.time())
    if ended is not None:
        # fails closed: a token without a usable exp is refused like an expired one
        log.info("sign-in expired: %s (%s)", _user_name(), ended)
        _sign_in_page("Your sign-in has expired: sign in again.")
    name = _user_name()
    role = config.roles.role_for(st.user.to_dict())
    if role is None:
        _no_role_page(config, name)
        raise AssertionError("unreachable: st.stop() ends the script run")
    if st.session_state.get("fiolake_signed_in") != (name, role):
        st.session_state["fiolake_signed_in"] = (name, role)
        log.info("signed in: %s as %s", name, role)
    with st.sidebar:
        st.markdown(f"Signed in as **{name}** · {role}")
        if st.button("Log out"):
            log.info("signed out: %s", name)
            st.logout()
            st.stop()  # nothing more for this run: the reader is on the way out
    return role


def require_reader() -> None:
    """Stop the page unless the reader is signed in with a role (a no-op without a login).

    `current_role` in the entry script already stands in front of every page; this second
    check sits where the lake is opened (`common.get_lake`), so a page reached some other
    way still shows nothing of the lake."""
    if current_reader_role() == NO_ROLE:
        log.warning("refused a page to a reader without a role")
        st.stop()


def require_analyst(page: str) -> None:
    """Stop `page` unless the reader is an analyst: the navigation leaves analysts' pages
    out for viewers, and this holds even if a page is run some other way."""
    if current_reader_role() != ANALYST:
        log.warning("refused %s the %s page", who(), page)
        st.error(f"The {page} page is for analysts.")
        st.stop()


def current_reader_role() -> str:
    """The reader's role from the login as it stands now (analyst when there is no login,
    NO_ROLE for a reader without one)."""
    config = auth_config()
    if config is None:
        return ANALYST
    if not _signed_in():
        return NO_ROLE
    return config.roles.role_for(st.user.to_dict()) or NO_ROLE


def who() -> str:
    """The reader's name for the logs ("open" when there is no login)."""
    return _user_name() if auth_config() is not None and st.user.is_logged_in else OPEN


def log_query(query: str) -> None:
    """Log who runs which SQL query (on one line), not its result."""
    log.info("SQL by %s: %s", who(), " ".join(query.split()))
