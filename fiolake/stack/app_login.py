"""OpenBao as the app's sign-in: its OIDC provider, a client for the app, and users.

`fiolake stack app-login` (and compose's `init --app-login`) call `configure_app_login`
with the root token. It is idempotent: every run converges OpenBao on what it is given.

    userpass/                     one user per reader (password given by the caller)
    identity entity + alias       the user's identity, its name the ID token's username
    groups fiolake-viewers, fiolake-analysts   the role of each user (exactly the given set)
    oidc key "fiolake-app"        signs the ID tokens (RS256, rotated daily)
    scopes "groups", "user"       ID-token claims: groups (names), preferred_username
    client "fiolake-app"          confidential; the app's /oauth2callback as redirect URI
    provider "fiolake"            issuer https://<bao>/v1/identity/oidc/provider/fiolake

The provider's authorization endpoint is OpenBao's web UI (its server config enables
`ui`): a reader signs in there with user name and password and is sent back to the app.
Signed-in users get only OpenBao's `default` policy (look up their own token, and the
provider's authorize endpoint) for 15 minutes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hvac.exceptions

from fiolake.errors import UsageProblem
from fiolake.stack.openbao import client

PROVIDER = "fiolake"
CLIENT = "fiolake-app"
KEY = "fiolake-app"
ASSIGNMENT = "fiolake-app-readers"
USERPASS = "userpass"
GROUPS = {"viewer": "fiolake-viewers", "analyst": "fiolake-analysts"}  # role -> group
GROUP_CLAIM = "groups"
SCOPES = {
    "groups": '{"groups": {{identity.entity.groups.names}}}',
    "user": '{"preferred_username": {{identity.entity.name}}}',
}
USER_TOKEN_TTL = "15m"
# How long a sign-in to the app lasts (the app honours the ID token's `exp`): a working day.
ID_TOKEN_TTL = "8h"


@dataclass(frozen=True)
class AppClient:
    """What the app needs to send readers to OpenBao and check what comes back."""

    client_id: str
    client_secret: str
    server_metadata_url: str
    scope: str


def _read(api: Any, path: str) -> dict[str, Any] | None:
    """The data at `path`, or None when there is none (404, or 204 with no body)."""
    try:
        found = api.get(path)
    except hvac.exceptions.InvalidPath:
        return None
    return found["data"] if isinstance(found, dict) and found.get("data") else None


def _userpass_accessor(api: Any) -> str:
    mounts = api.get("/v1/sys/auth")["data"]
    if f"{USERPASS}/" not in mounts:
        api.post(f"/v1/sys/auth/{USERPASS}", json={"type": "userpass"})
        mounts = api.get("/v1/sys/auth")["data"]
    return str(mounts[f"{USERPASS}/"]["accessor"])


def _entity(api: Any, name: str, accessor: str) -> str:
    """The entity of `name` (created with its userpass alias if new); its id."""
    found = _read(api, f"/v1/identity/entity/name/{name}")
    if found is None:
        entity_id = str(api.post("/v1/identity/entity", json={"name": name})["data"]["id"])
    else:
        entity_id = str(found["id"])
    aliases = (found or {}).get("aliases") or []
    if not any(a.get("mount_accessor") == accessor for a in aliases):
        api.post(
            "/v1/identity/entity-alias",
            json={"name": name, "canonical_id": entity_id, "mount_accessor": accessor},
        )
    return entity_id


def _check_users(users: Mapping[str, tuple[str, str]]) -> None:
    for name, (role, password) in users.items():
        if role not in GROUPS:
            raise UsageProblem(f"user {name!r} has role {role!r} — use one of {', '.join(GROUPS)}")
        if not name or not all(c.isalnum() or c in "-_.@" for c in name):
            raise UsageProblem(f"user name {name!r} — use letters, digits and - _ . @ only")
        if len(password) < 12:
            raise UsageProblem(f"the password of {name!r} is shorter than 12 characters")


def configure_app_login(
    addr: str,
    ca: Path | None,
    root_token: str,
    *,
    redirect_uris: list[str],
    users: Mapping[str, tuple[str, str]],
) -> AppClient:
    """Set up OpenBao's OIDC provider for the app; `users` maps name -> (role, password).

    The groups end up holding exactly `users` (a user given another role moves); users
    left out keep their userpass login but lose their group, so they have no role."""
    _check_users(users)
    api = client(addr, ca, root_token).adapter
    accessor = _userpass_accessor(api)
    members: dict[str, list[str]] = {group: [] for group in GROUPS.values()}
    entity_ids = []
    for name, (role, password) in sorted(users.items()):
        api.post(
            f"/v1/auth/{USERPASS}/users/{name}",
            json={
                "password": password,
                "token_ttl": USER_TOKEN_TTL,
                "token_max_ttl": USER_TOKEN_TTL,
            },
        )
        entity_id = _entity(api, name, accessor)
        entity_ids.append(entity_id)
        members[GROUPS[role]].append(entity_id)
    for group, ids in members.items():
        api.post(f"/v1/identity/group/name/{group}", json={"member_entity_ids": ids})
    api.post(
        f"/v1/identity/oidc/key/{KEY}",
        json={
            "allowed_client_ids": ["*"],
            "rotation_period": "24h",
            "verification_ttl": "24h",
            "algorithm": "RS256",
        },
    )
    group_ids = [api.get(f"/v1/identity/group/name/{g}")["data"]["id"] for g in GROUPS.values()]
    api.post(f"/v1/identity/oidc/assignment/{ASSIGNMENT}", json={"group_ids": group_ids})
    for scope, template in SCOPES.items():
        api.post(f"/v1/identity/oidc/scope/{scope}", json={"template": template})
    api.post(
        f"/v1/identity/oidc/client/{CLIENT}",
        json={
            "redirect_uris": redirect_uris,
            "assignments": [ASSIGNMENT],
            "key": KEY,
            "id_token_ttl": ID_TOKEN_TTL,
            "access_token_ttl": ID_TOKEN_TTL,
            "client_type": "confidential",
        },
    )
    app = api.get(f"/v1/identity/oidc/client/{CLIENT}")["data"]
    api.post(
        f"/v1/identity/oidc/provider/{PROVIDER}",
        json={"allowed_client_ids": [app["client_id"]], "scopes_supported": list(SCOPES)},
    )
    metadata = f"{addr}/v1/identity/oidc/provider/{PROVIDER}/.well-known/openid-configuration"
    return AppClient(
        client_id=str(app["client_id"]),
        client_secret=str(app["client_secret"]),
        server_metadata_url=metadata,
        scope="openid " + " ".join(SCOPES),
    )
