"""The runner's trusted Ed25519 public keys: verify offline, refresh from a key source."""

from __future__ import annotations

import base64
import json
import logging
import os
import time
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from fiolake.errors import FiolakeError, ManifestError
from fiolake.signing.base import KeyringUnavailable
from fiolake.signing.local_key import local_keyid
from fiolake.signing.vault import Refresher

log = logging.getLogger(__name__)

DEFAULT_KEYRING = Path("~/.cache/fiolake/keyring.json")
# When Vault is down, don't retry a refresh on every verification.
RETRY_REFRESH_AFTER_S = 30.0
# A key id the source did not know is not asked about again for this long, so a flood of
# manifests naming the same bogus key costs one Vault read, not one per manifest.
NEGATIVE_CACHE_S = 60.0
# Retirement (min_decryption_version) reaches runners on their next refresh; this bounds it.
REFRESH_AFTER_S = 3600.0


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
