"""Vault/OpenBao transit: the publisher's signer and the runner's public-key source."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import hvac
import hvac.exceptions
import requests

from fiolake.errors import FiolakeError
from fiolake.signing.base import DEFAULT_TRANSIT_KEY, Signature, key_fingerprint

# Signatures per transit request when publishing many manifests.
BATCH_SIZE = 250

Refresher = Callable[[str], dict[str, bytes]]


def _vault_client(addr: str, token: str, ca_cert: str | Path | None) -> Any:
    return hvac.Client(url=addr, token=token, verify=str(ca_cert) if ca_cert else True, timeout=10)


def _token_is_valid(client: Any) -> bool:
    """Whether Vault still knows the client's token (every token may look itself up)."""
    try:
        client.auth.token.lookup_self()
    except (hvac.exceptions.VaultError, requests.exceptions.RequestException):
        return False
    return True


@contextmanager
def _vault_errors(action: str, addr: str, need: str, client: Any = None) -> Iterator[None]:
    """Turn hvac/requests exceptions into a message naming the problem and the fix.

    Vault answers "permission denied" both to a token without the policy and to one that
    is invalid, expired or revoked; with `client`, a token self-lookup tells them apart."""
    try:
        yield
    except hvac.exceptions.Forbidden as exc:
        if client is not None and not _token_is_valid(client):
            msg = (
                f"Vault refused to {action}: the token is invalid, expired or revoked — "
                'get a fresh VAULT_TOKEN (for the local stack: eval "$(fiolake stack env '
                '--role <role>)")'
            )
        else:
            msg = (
                f"Vault refused to {action} (permission denied) — give the token a policy "
                f"with {need}"
            )
        raise FiolakeError(msg) from exc
    except hvac.exceptions.InvalidPath as exc:
        raise FiolakeError(
            f"Vault cannot {action}: no such key or mount at {addr} — check "
            "FIOLAKE_TRANSIT_KEY and that the transit engine is mounted (the local stack: "
            "`fiolake stack up` creates both)"
        ) from exc
    except requests.exceptions.SSLError as exc:
        msg = f"TLS to Vault at {addr} failed ({exc}) — set VAULT_CACERT to its CA file"
        raise FiolakeError(msg) from exc
    except requests.exceptions.RequestException as exc:
        raise FiolakeError(
            f"cannot reach Vault at {addr} to {action}: {exc} — check that Vault/OpenBao "
            "runs there and VAULT_ADDR names it (the local stack: `fiolake stack up`)"
        ) from exc
    except hvac.exceptions.VaultError as exc:
        raise FiolakeError(f"Vault failed to {action}: {exc}") from exc


def vault_keyid(key_name: str, version: int, public_key: bytes) -> str:
    """`vault:<key>:v<N>:<fingerprint>`: a re-created key of the same name and version (a
    new stack) gets a new id, so no cached key can stand in for it."""
    return f"vault:{key_name}:v{version}:{key_fingerprint(public_key)}"


def _read_public_keys(client: Any, addr: str, key_name: str, mount: str) -> dict[int, bytes]:
    """Every version of the transit key not retired by policy: {version: raw public key}."""
    action = f"read transit key {key_name!r}"
    with _vault_errors(action, addr, f"`read` on {mount}/keys/{key_name}", client):
        resp = client.secrets.transit.read_key(key_name, mount_point=mount)
    data = resp["data"]
    if data.get("type") != "ed25519":
        raise FiolakeError(
            f"transit key {key_name!r} is {data.get('type')}, not ed25519 — create a key "
            "with type=ed25519 and name it in FIOLAKE_TRANSIT_KEY"
        )
    # OpenBao already omits versions below min_decryption_version; filter anyway so a
    # server that lists them cannot resurrect a retired key.
    floor = max(int(data.get("min_decryption_version") or 0), 1)
    return {
        int(v): base64.b64decode(k["public_key"])
        for v, k in data["keys"].items()
        if int(v) >= floor
    }


class VaultSigner:
    """Signs through transit `sign/<key>`; reads `keys/<key>` (public keys) once, to name
    each signature's key by its fingerprint."""

    def __init__(
        self,
        addr: str,
        token: str,
        key_name: str = DEFAULT_TRANSIT_KEY,
        ca_cert: str | Path | None = None,
        mount: str = "transit",
    ):
        self.addr, self.key_name, self.mount = addr, key_name, mount
        self._client = _vault_client(addr, token, ca_cert)
        self._public: dict[int, bytes] = {}

    def _keyid(self, version: int) -> str:
        if version not in self._public:  # first signature, or the key was rotated since
            self._public = _read_public_keys(self._client, self.addr, self.key_name, self.mount)
        if version not in self._public:
            raise FiolakeError(
                f"transit key {self.key_name!r} signed with version {version}, which "
                f"{self.mount}/keys/{self.key_name} does not list"
            )
        return vault_keyid(self.key_name, version, self._public[version])

    def sign(self, message: bytes) -> Signature:
        action = f"sign with transit key {self.key_name!r}"
        need = f"`update` on {self.mount}/sign/{self.key_name}"
        with _vault_errors(action, self.addr, need, self._client):
            resp = self._client.secrets.transit.sign_data(
                self.key_name,
                hash_input=base64.b64encode(message).decode(),
                mount_point=self.mount,
            )
        return self._parse(resp["data"]["signature"])

    def sign_batch(self, messages: Sequence[bytes]) -> list[Signature]:
        """Sign many messages with one transit call per BATCH_SIZE (`batch_input`)."""
        out: list[Signature] = []
        action = f"sign with transit key {self.key_name!r}"
        need = f"`update` on {self.mount}/sign/{self.key_name}"
        for start in range(0, len(messages), BATCH_SIZE):
            chunk = messages[start : start + BATCH_SIZE]
            batch = [{"input": base64.b64encode(m).decode()} for m in chunk]
            with _vault_errors(action, self.addr, need, self._client):
                resp = self._client.secrets.transit.sign_data(
                    self.key_name, batch_input=batch, mount_point=self.mount
                )
            results = resp["data"]["batch_results"]
            failed = [r["error"] for r in results if r.get("error")]
            if failed or len(results) != len(chunk):
                raise FiolakeError(f"Vault failed to {action} in a batch: {failed[:1] or results}")
            out += [self._parse(r["signature"]) for r in results]
        return out

    def _parse(self, value: str) -> Signature:
        # transit returns "vault:v<N>:<base64>"; the version becomes part of our key id.
        parts = value.split(":")
        try:
            if len(parts) != 3 or parts[0] != "vault" or not parts[1].startswith("v"):
                raise ValueError
            version = int(parts[1][1:])
            raw = base64.b64decode(parts[2], validate=True)
        except (ValueError, binascii.Error):
            raise FiolakeError(f"unexpected transit signature format {value[:40]!r}") from None
        if len(raw) != 64:
            raise FiolakeError(
                f"transit key {self.key_name!r} returned a {len(raw)}-byte signature; "
                "it must be an ed25519 key (type=ed25519, derived=false)"
            )
        return Signature(self._keyid(version), base64.b64encode(raw).decode())


class VaultKeySource:
    """Refresher over transit `keys/<key>`: every version not retired by policy."""

    def __init__(
        self, addr: str, token: str, key_name: str, ca_cert: str | Path | None, mount: str
    ):
        self.addr, self.key_name, self.mount = addr, key_name, mount
        # The trust source: keyring caches are kept per source, never shared between two
        # Vaults (or two keys) that happen to use the same key names.
        self.source = f"vault {addr.rstrip('/')} {mount}/keys/{key_name}"
        self._client = _vault_client(addr, token, ca_cert)

    def covers(self, keyid: str) -> bool:
        """Whether this source is the authority for `keyid` (every Vault key id)."""
        return keyid.startswith("vault:")

    def __call__(self, wanted_keyid: str) -> dict[str, bytes]:
        keys = _read_public_keys(self._client, self.addr, self.key_name, self.mount)
        return {vault_keyid(self.key_name, v, raw): raw for v, raw in keys.items()}


def vault_key_refresher(
    addr: str,
    token: str,
    key_name: str = DEFAULT_TRANSIT_KEY,
    ca_cert: str | Path | None = None,
    mount: str = "transit",
) -> Refresher:
    """A refresher returning every version of the transit key that is not retired by policy."""
    return VaultKeySource(addr, token, key_name, ca_cert, mount)
