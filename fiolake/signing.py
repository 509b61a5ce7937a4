"""Ed25519 signers (local key file, Vault/OpenBao transit) and the runner's keyring.

Both signers produce the same thing: a raw 64-byte Ed25519 signature over the exact
message bytes (transit ed25519 is pure Ed25519), so verification is offline and identical.
See docs/manifests.md for key files, key ids, rotation and retirement.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from fiolake.errors import FiolakeError, ManifestError

log = logging.getLogger(__name__)

DEFAULT_TRANSIT_KEY = "manifests"
DEFAULT_KEYRING = Path("~/.cache/fiolake/keyring.json")
# When Vault is down, don't retry a refresh on every verification.
RETRY_REFRESH_AFTER_S = 30.0
# A key id the source did not know is not asked about again for this long, so a flood of
# manifests naming the same bogus key costs one Vault read, not one per manifest.
NEGATIVE_CACHE_S = 60.0
# Retirement (min_decryption_version) reaches runners on their next refresh; this bounds it.
REFRESH_AFTER_S = 3600.0

Refresher = Callable[[str], dict[str, bytes]]


class KeyringUnavailable(FiolakeError):
    """Keys could not be fetched (Vault down, no permission): retry later, don't reject."""


@dataclass(frozen=True)
class Signature:
    """One signature: who signed (`keyid`) and base64 of the 64-byte Ed25519 signature."""

    keyid: str
    sig: str


class Signer(Protocol):
    def sign(self, message: bytes) -> Signature: ...


def local_keyid(public_key: bytes) -> str:
    """Key id of a local Ed25519 key: `local:` + first 16 hex digits of sha256(raw key)."""
    return "local:" + hashlib.sha256(public_key).hexdigest()[:16]


def public_key_path(private_key_path: Path) -> Path:
    """Where `LocalSigner.generate` writes the public half: `<private path>.pub`."""
    return private_key_path.with_name(private_key_path.name + ".pub")


def _raw_public(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _write_new(path: Path, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


class LocalSigner:
    """An Ed25519 private key in a PEM (PKCS#8, unencrypted, mode 0600) file."""

    def __init__(self, private_key: Ed25519PrivateKey):
        self._key = private_key
        self.keyid = local_keyid(self.public_key_bytes())

    @classmethod
    def generate(cls, path: Path) -> LocalSigner:
        """Create a new key at `path` (0600) and its public key at `path.pub`; never overwrite."""
        path = Path(path)
        pub_path = public_key_path(path)
        for p in (path, pub_path):
            if p.exists():
                raise FiolakeError(f"{p} already exists; refusing to overwrite a key file")
        signer = cls(Ed25519PrivateKey.generate())
        private_pem = signer._key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        public_pem = signer._key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_new(path, private_pem, 0o600)
            _write_new(pub_path, public_pem, 0o644)
        except FileExistsError as exc:
            raise FiolakeError(f"{exc.filename} already exists; refusing to overwrite") from exc
        return signer

    @classmethod
    def load(cls, path: Path) -> LocalSigner:
        """Load a private key written by `generate`; refuse files others can read."""
        path = Path(path)
        try:
            mode = path.stat().st_mode & 0o777
            data = path.read_bytes()
        except OSError as exc:
            raise FiolakeError(f"cannot read signing key {path}: {exc.strerror}") from exc
        if mode & 0o077:
            raise FiolakeError(
                f"signing key {path} is readable by others (mode {mode:04o}); run: chmod 600 {path}"
            )
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise FiolakeError(f"{path} is not an unencrypted PEM private key: {exc}") from exc
        if not isinstance(key, Ed25519PrivateKey):
            raise FiolakeError(f"{path} is not an Ed25519 key (found {type(key).__name__})")
        return cls(key)

    def public_key_bytes(self) -> bytes:
        """The raw 32-byte public key."""
        return _raw_public(self._key.public_key())

    def sign(self, message: bytes) -> Signature:
        return Signature(self.keyid, base64.b64encode(self._key.sign(message)).decode())


def load_public_key(path: Path) -> tuple[str, bytes]:
    """Read a PEM Ed25519 public key file → (local key id, raw 32 bytes)."""
    path = Path(path)
    try:
        key = serialization.load_pem_public_key(path.read_bytes())
    except OSError as exc:
        raise FiolakeError(f"cannot read trusted key {path}: {exc.strerror}") from exc
    except ValueError as exc:
        raise FiolakeError(f"{path} is not a PEM public key: {exc}") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise FiolakeError(f"{path} is not an Ed25519 public key (found {type(key).__name__})")
    raw = _raw_public(key)
    return local_keyid(raw), raw


# --- Vault / OpenBao transit -----------------------------------------------------------


def _vault_client(addr: str, token: str, ca_cert: str | Path | None) -> Any:
    import hvac  # the local signer must work without talking to Vault

    return hvac.Client(url=addr, token=token, verify=str(ca_cert) if ca_cert else True, timeout=10)


@contextmanager
def _vault_errors(action: str, addr: str, need: str) -> Iterator[None]:
    """Turn hvac/requests exceptions into a message naming the problem and the fix."""
    import hvac.exceptions
    import requests

    try:
        yield
    except hvac.exceptions.Forbidden as exc:
        msg = f"Vault refused to {action} (permission denied): the token needs {need}"
        raise FiolakeError(msg) from exc
    except hvac.exceptions.InvalidPath as exc:
        raise FiolakeError(f"Vault cannot {action}: no such key or mount at {addr}") from exc
    except requests.exceptions.SSLError as exc:
        msg = f"TLS to Vault at {addr} failed ({exc}); set VAULT_CACERT to its CA file"
        raise FiolakeError(msg) from exc
    except requests.exceptions.RequestException as exc:
        raise FiolakeError(f"cannot reach Vault at {addr} to {action}: {exc}") from exc
    except hvac.exceptions.VaultError as exc:
        raise FiolakeError(f"Vault failed to {action}: {exc}") from exc


def vault_keyid(key_name: str, version: int) -> str:
    return f"vault:{key_name}:v{version}"


class VaultSigner:
    """Signs through transit `sign/<key>`; the publisher's token needs nothing else."""

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

    def sign(self, message: bytes) -> Signature:
        action = f"sign with transit key {self.key_name!r}"
        need = f"`update` on {self.mount}/sign/{self.key_name}"
        with _vault_errors(action, self.addr, need):
            resp = self._client.secrets.transit.sign_data(
                self.key_name,
                hash_input=base64.b64encode(message).decode(),
                mount_point=self.mount,
            )
        return self._parse(resp["data"]["signature"])

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
        return Signature(vault_keyid(self.key_name, version), base64.b64encode(raw).decode())


class VaultKeySource:
    """Refresher over transit `keys/<key>`: every version not retired by policy."""

    def __init__(
        self, addr: str, token: str, key_name: str, ca_cert: str | Path | None, mount: str
    ):
        self.addr, self.key_name, self.mount = addr, key_name, mount
        self.namespace = f"vault:{key_name}:"  # the key ids this source is authoritative for
        self._client = _vault_client(addr, token, ca_cert)

    def __call__(self, wanted_keyid: str) -> dict[str, bytes]:
        action = f"read transit key {self.key_name!r}"
        with _vault_errors(action, self.addr, f"`read` on {self.mount}/keys/{self.key_name}"):
            resp = self._client.secrets.transit.read_key(self.key_name, mount_point=self.mount)
        data = resp["data"]
        if data.get("type") != "ed25519":
            raise FiolakeError(f"transit key {self.key_name!r} is {data.get('type')}, not ed25519")
        # OpenBao already omits versions below min_decryption_version; filter anyway so a
        # server that lists them cannot resurrect a retired key.
        floor = max(int(data.get("min_decryption_version") or 0), 1)
        return {
            vault_keyid(self.key_name, int(v)): base64.b64decode(k["public_key"])
            for v, k in data["keys"].items()
            if int(v) >= floor
        }


def vault_key_refresher(
    addr: str,
    token: str,
    key_name: str = DEFAULT_TRANSIT_KEY,
    ca_cert: str | Path | None = None,
    mount: str = "transit",
) -> Refresher:
    """A refresher returning every version of the transit key that is not retired by policy."""
    return VaultKeySource(addr, token, key_name, ca_cert, mount)


# --- Keyring ---------------------------------------------------------------------------


def _namespace(keyid: str) -> str:
    """`vault:manifests:v2` → `vault:manifests:`; `local:ab12…` → `local:ab12…:` (its own)."""
    return keyid.rsplit(":", 1)[0] + ":" if keyid.startswith("vault:") else keyid + ":"


class Keyring:
    """Trusted Ed25519 public keys by key id; verifies offline, refreshes from a source."""

    def __init__(self, refresher: Refresher | None = None, path: Path | None = None):
        self.refresher = refresher
        self.path = path  # cache file to rewrite after a refresh
        self.refreshed_at: float | None = None  # wall clock of the last successful refresh
        self._keys: dict[str, bytes] = {}
        self._pinned: set[str] = set()  # added by configuration, never written to the cache
        self._retired: set[str] = set()  # dropped by a refresh in this process
        self._not_found: dict[str, float] = {}  # key id -> monotonic time the source lacked it
        self._failed_at = -RETRY_REFRESH_AFTER_S
        self._failure = ""

    def add(self, keyid: str, public_key: bytes, *, persist: bool = True) -> None:
        """Trust `public_key` under `keyid`; `persist=False` keeps it out of the cache file."""
        if len(public_key) != 32:
            raise FiolakeError(
                f"key {keyid}: Ed25519 public keys are 32 bytes, not {len(public_key)}"
            )
        if keyid.startswith("local:") and keyid != local_keyid(public_key):
            raise FiolakeError(f"key id {keyid} does not match its key ({local_keyid(public_key)})")
        self._keys[keyid] = public_key
        self._retired.discard(keyid)
        if not persist:
            self._pinned.add(keyid)

    def keyids(self) -> list[str]:
        """Every trusted key id, sorted."""
        return sorted(self._keys)

    def __contains__(self, keyid: str) -> bool:
        return keyid in self._keys

    def refresh(self, wanted_keyid: str = "") -> None:
        """Replace the source's keys with its current set: new versions in, retired ones out."""
        if self.refresher is None:
            return
        try:
            fresh = self.refresher(wanted_keyid)
        except FiolakeError as exc:
            self._failed_at = time.monotonic()
            self._failure = f"cannot refresh signing keys: {exc}"
            raise KeyringUnavailable(self._failure) from exc
        namespaces = {_namespace(k) for k in fresh}
        namespaces.update(filter(None, [getattr(self.refresher, "namespace", None)]))
        for k in list(self._keys):
            if _namespace(k) in namespaces and k not in fresh and k not in self._pinned:
                del self._keys[k]
                self._retired.add(k)
        for k, v in fresh.items():
            self.add(k, v)
        self.refreshed_at = time.time()
        self._not_found.clear()
        if self.path is not None:
            try:
                self.save(self.path)
            except OSError as exc:  # the cache only saves Vault reads; keys are still good
                log.warning("cannot write keyring cache %s: %s", self.path, exc)

    def _refresh_if_stale(self) -> None:
        if self.refresher is None:
            return
        if self.refreshed_at is not None and time.time() - self.refreshed_at < REFRESH_AFTER_S:
            return
        if time.monotonic() - self._failed_at < RETRY_REFRESH_AFTER_S:
            return
        try:
            self.refresh()
        except KeyringUnavailable as exc:
            # Cached keys stay valid while the source is down: runners verify offline.
            log.warning("%s; using cached keys", exc)

    def _look_up(self, keyid: str) -> bytes:
        if keyid not in self._keys and self.refresher is not None:
            if time.monotonic() - self._failed_at < RETRY_REFRESH_AFTER_S:
                # Don't make every verification wait for a Vault that just failed.
                raise KeyringUnavailable(f"{self._failure} (will retry shortly)")
            asked = self._not_found.get(keyid)
            if asked is None or time.monotonic() - asked >= NEGATIVE_CACHE_S:
                self.refresh(keyid)
                if keyid not in self._keys:
                    self._not_found[keyid] = time.monotonic()
        key = self._keys.get(keyid)
        if key is None:
            why = "retired by policy, " if keyid in self._retired else ""
            known = ", ".join(self.keyids()) or "none"
            raise ManifestError(f"unknown signing key {keyid} ({why}trusted: {known})")
        return key

    def verify(self, keyid: str, message: bytes, sig: bytes) -> bool:
        """True if `sig` is `keyid`'s signature of `message`.

        Unknown key (after asking the refresher) → ManifestError; source down → KeyringUnavailable.
        """
        self._refresh_if_stale()
        key = self._look_up(keyid)
        try:
            Ed25519PublicKey.from_public_bytes(key).verify(sig, message)
        except InvalidSignature:
            return False
        return True

    @classmethod
    def from_file(cls, path: Path, refresher: Refresher | None = None) -> Keyring:
        """Load the JSON cache at `path` (missing file = empty keyring); saves go back there."""
        path = Path(path).expanduser()
        ring = cls(refresher, path)
        try:
            doc = json.loads(path.read_text())
            for keyid, b64 in doc["keys"].items():
                ring.add(keyid, base64.b64decode(b64, validate=True))
            ring.refreshed_at = doc.get("refreshed_at")
        except FileNotFoundError:
            return ring
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise FiolakeError(
                f"keyring cache {path} is unreadable ({exc}); delete it to re-fetch keys"
            ) from exc
        return ring

    def save(self, path: Path) -> None:
        """Write the cached (non-pinned) keys as JSON {"keys": {keyid: base64}}, atomically."""
        path = Path(path).expanduser()
        keys = {k: base64.b64encode(v).decode() for k, v in sorted(self._keys.items())}
        doc = {"keys": {k: v for k, v in keys.items() if k not in self._pinned}}
        if self.refreshed_at is not None:
            doc["refreshed_at"] = self.refreshed_at
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, path)


# --- configuration from the environment ------------------------------------------------


def _need(env: Mapping[str, str], name: str, why: str) -> str:
    value = env.get(name)
    if not value:
        raise FiolakeError(f"{name} is not set; {why}")
    return value


def signer_from_env(env: Mapping[str, str] | None = None) -> Signer:
    """FIOLAKE_SIGNER=vault (VAULT_ADDR, VAULT_TOKEN, …) or local (FIOLAKE_SIGNING_KEY)."""
    env = os.environ if env is None else env
    kind = env.get("FIOLAKE_SIGNER", "")
    if kind == "vault":
        why = "FIOLAKE_SIGNER=vault signs with Vault transit"
        return VaultSigner(
            _need(env, "VAULT_ADDR", why + " and needs its address"),
            _need(env, "VAULT_TOKEN", why + " and needs a token allowed to sign"),
            env.get("FIOLAKE_TRANSIT_KEY") or DEFAULT_TRANSIT_KEY,
            env.get("VAULT_CACERT") or None,
        )
    if kind == "local":
        path = _need(
            env,
            "FIOLAKE_SIGNING_KEY",
            "FIOLAKE_SIGNER=local needs the path of an Ed25519 key file "
            "(create one with LocalSigner.generate)",
        )
        return LocalSigner.load(Path(path).expanduser())
    state = f"is {kind!r}" if kind else "is not set"
    raise FiolakeError(
        f"FIOLAKE_SIGNER {state}; set it to 'vault' (Vault transit) or 'local' (a key file)"
    )


def keyring_from_env(env: Mapping[str, str] | None = None) -> Keyring:
    """Cache FIOLAKE_KEYRING, pinned FIOLAKE_TRUSTED_KEY, and Vault refresh if VAULT_ADDR is set."""
    env = os.environ if env is None else env
    refresher = None
    if env.get("VAULT_ADDR"):
        refresher = vault_key_refresher(
            env["VAULT_ADDR"],
            _need(env, "VAULT_TOKEN", "VAULT_ADDR is set, so keys are read from Vault"),
            env.get("FIOLAKE_TRANSIT_KEY") or DEFAULT_TRANSIT_KEY,
            env.get("VAULT_CACERT") or None,
        )
    ring = Keyring.from_file(Path(env.get("FIOLAKE_KEYRING") or DEFAULT_KEYRING), refresher)
    if env.get("FIOLAKE_TRUSTED_KEY"):
        keyid, raw = load_public_key(Path(env["FIOLAKE_TRUSTED_KEY"]).expanduser())
        ring.add(keyid, raw, persist=False)
    if not ring.keyids() and refresher is None:
        raise FiolakeError(
            "no trusted signing keys: set FIOLAKE_TRUSTED_KEY to a public key file "
            "or VAULT_ADDR/VAULT_TOKEN to fetch keys from Vault transit"
        )
    return ring
