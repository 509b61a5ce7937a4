"""The runner's trusted Ed25519 public keys: verify offline, refresh from a key source."""

from __future__ import annotations

import base64
import json
import logging
import time
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from fiolake.atomic import write_atomic
from fiolake.errors import FiolakeError, ManifestError
from fiolake.signing.base import (
    KeyringUnavailable,
    fingerprint_of,
    key_fingerprint,
    names_a_fingerprint,
)
from fiolake.signing.vault import Refresher

log = logging.getLogger(__name__)

CACHE_FORMAT = 2  # sections per trust source; format 1 (one flat key set) is ignored
# When Vault is down, don't retry a refresh on every verification.
RETRY_REFRESH_AFTER_S = 30.0
# A key id causes at most one refresh per this long, whatever the cause (an id the source
# did not know, or a signature that fails under a cached key): a flood of tampered
# manifests costs one Vault read per key id per minute, not one per manifest. Key ids
# carry their key's fingerprint, so a refresh can only change a verdict by retiring the
# key; that is noticed within this bound (and hourly by REFRESH_AFTER_S).
PER_KEY_REFRESH_S = 60.0
# Retirement (min_decryption_version) reaches runners on their next refresh; this bounds it.
REFRESH_AFTER_S = 3600.0


def _signed_by(key: bytes, message: bytes, sig: bytes) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(key).verify(sig, message)
    except InvalidSignature:
        return False
    return True


class Keyring:
    """Trusted Ed25519 public keys by key id; verifies offline, refreshes from a source.

    Every key id ends in its key's fingerprint (`add` checks it), so a cached key can
    never stand in for another with the same name and version. Keys come from one
    refresher (the trust source, e.g. a Vault transit key: it replaces its whole set on
    each refresh, so retired versions drop out) and from pinned key files (`persist=False`).
    """

    def __init__(self, refresher: Refresher | None = None, path: Path | None = None):
        self.refresher = refresher
        self.path = path  # cache file to rewrite after a refresh
        self.refreshed_at: float | None = None  # wall clock of the last successful refresh
        self._keys: dict[str, bytes] = {}
        self._pinned: set[str] = set()  # added by configuration, never written to the cache
        self._retired: set[str] = set()  # dropped by a refresh in this process
        self._asked_for: dict[str, float] = {}  # key id -> monotonic time of its last refresh
        self._failed_at = -RETRY_REFRESH_AFTER_S
        self._failure = ""
        self._refreshes = 0

    @property
    def source(self) -> str | None:
        """The refresher's trust source (the cache section this keyring owns), if any."""
        return getattr(self.refresher, "source", None) if self.refresher else None

    def add(self, keyid: str, public_key: bytes, *, persist: bool = True) -> None:
        """Trust `public_key` under `keyid`; `persist=False` keeps it out of the cache file."""
        if len(public_key) != 32:
            raise FiolakeError(
                f"key {keyid}: Ed25519 public keys are 32 bytes, not {len(public_key)}"
            )
        if fingerprint_of(keyid) != key_fingerprint(public_key):
            raise FiolakeError(
                f"key id {keyid} does not match its key (fingerprint {key_fingerprint(public_key)})"
            )
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
        for k in list(self._keys):
            if k not in fresh and k not in self._pinned:
                del self._keys[k]
                self._retired.add(k)
        for k, v in fresh.items():
            self.add(k, v)
        self.refreshed_at = time.time()
        self._refreshes += 1
        if self.path is not None:
            try:
                self.save(self.path)
            except (OSError, FiolakeError) as exc:  # a cache only: the keys are still good
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

    def _source_covers(self, keyid: str) -> bool:
        covers = getattr(self.refresher, "covers", None)
        return self.refresher is not None and (covers is None or covers(keyid))

    def _covered(self, keyid: str) -> bool:
        """Whether this keyring can judge `keyid`: its source is the authority for such
        ids, or pinned key files are (local ids)."""
        return self._source_covers(keyid) or (keyid.startswith("local:") and bool(self._pinned))

    def _unknown(self, keyid: str) -> ManifestError:
        why = "retired by policy, " if keyid in self._retired else ""
        known = ", ".join(self.keyids()) or "none"
        return ManifestError(f"unknown signing key {keyid} ({why}trusted: {known})")

    def _look_up(self, keyid: str, *, just_refreshed: bool) -> bytes:
        if keyid in self._keys:
            return self._keys[keyid]
        if not self._covered(keyid):
            # Not the key's fault: this runner has no source that could vouch for it.
            kind = keyid.split(":", 1)[0]
            raise KeyringUnavailable(
                f"no trust source for {kind} key {keyid} on this runner — configure "
                + ("VAULT_ADDR/VAULT_TOKEN" if kind == "vault" else "FIOLAKE_TRUSTED_KEY")
            )
        if not names_a_fingerprint(keyid):
            # An id of the first format (`vault:<key>:v<N>`): it binds no key material,
            # so no refresh could ever vouch for it. Definitely bad, whatever Vault says.
            raise ManifestError(
                f"signing key id {keyid} names no key fingerprint (signed by a fiolake "
                "before key ids were bound to keys) — re-publish the job: "
                "fiolake publish --rerun <campaign> --status rejected"
            )
        if self._source_covers(keyid):
            if time.monotonic() - self._failed_at < RETRY_REFRESH_AFTER_S:
                # Don't make every verification wait for a Vault that just failed.
                raise KeyringUnavailable(f"{self._failure} (will retry shortly)")
            if just_refreshed:
                self._asked_for[keyid] = time.monotonic()  # that refresh counts for this id
            elif self._may_refresh_for(keyid):
                self._refresh_for(keyid)
        key = self._keys.get(keyid)
        if key is None:  # unknown after a successful refresh (or to the pinned files): bad
            raise self._unknown(keyid)
        return key

    def _may_refresh_for(self, keyid: str) -> bool:
        asked = self._asked_for.get(keyid)
        return asked is None or time.monotonic() - asked >= PER_KEY_REFRESH_S

    def _refresh_for(self, keyid: str) -> None:
        """Refresh on behalf of `keyid` (counted against its PER_KEY_REFRESH_S once done:
        a refresh that failed is bounded by RETRY_REFRESH_AFTER_S instead)."""
        self.refresh(keyid)
        self._asked_for[keyid] = time.monotonic()

    def verify(self, keyid: str, message: bytes, sig: bytes) -> bool:
        """True if `sig` is `keyid`'s signature of `message`.

        A signature that fails against a cached key gets one refresh from the source
        before the verdict, unless this key id had one within PER_KEY_REFRESH_S (then the
        verdict stands). Unknown key after a successful refresh → ManifestError; source
        down or no source for such keys → KeyringUnavailable (not the manifest's fault).
        """
        refreshes = self._refreshes
        self._refresh_if_stale()
        key = self._look_up(keyid, just_refreshed=self._refreshes != refreshes)
        if _signed_by(key, message, sig):
            return True
        if keyid in self._pinned or self.refresher is None or self._refreshes != refreshes:
            return False
        if not self._may_refresh_for(keyid):
            return False
        self._refresh_for(keyid)
        refreshed = self._keys.get(keyid)
        if refreshed is None:
            raise self._unknown(keyid)
        return _signed_by(refreshed, message, sig)

    @classmethod
    def from_file(cls, path: Path, refresher: Refresher | None = None) -> Keyring:
        """Load this refresher's section of the JSON cache at `path` (missing file or
        section = empty keyring); saves go back there. A cache of the first format (one
        key set for every source) is ignored: its keys are fetched again."""
        path = Path(path).expanduser()
        ring = cls(refresher, path)
        try:
            doc = json.loads(path.read_text())
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            if doc.get("format") != CACHE_FORMAT:
                log.info("ignoring keyring cache %s of an older format", path)
                return ring
            section = doc["sources"].get(ring.source) if ring.source else None
            if section:
                for keyid, b64 in section["keys"].items():
                    ring.add(keyid, base64.b64decode(b64, validate=True))
                ring.refreshed_at = section.get("refreshed_at")
        except FileNotFoundError:
            return ring
        except (OSError, ValueError, KeyError, TypeError, AttributeError, FiolakeError) as exc:
            raise FiolakeError(
                f"keyring cache {path} is unreadable ({exc}) — delete it; keys are fetched again"
            ) from exc
        return ring

    def save(self, path: Path) -> None:
        """Write this source's cached (non-pinned) keys into the JSON cache, atomically,
        keeping other sources' sections: {"format": 2, "sources": {source: {"keys": ...}}}."""
        if self.source is None:
            return  # pinned keys only: nothing worth caching
        path = Path(path).expanduser()
        try:
            doc = json.loads(path.read_text())
            sources = doc["sources"] if doc.get("format") == CACHE_FORMAT else {}
            if not isinstance(sources, dict):
                sources = {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            sources = {}
        keys = {k: base64.b64encode(v).decode() for k, v in sorted(self._keys.items())}
        section: dict[str, object] = {
            "keys": {k: v for k, v in keys.items() if k not in self._pinned}
        }
        if self.refreshed_at is not None:
            section["refreshed_at"] = self.refreshed_at
        sources[self.source] = section
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"format": CACHE_FORMAT, "sources": sources}, indent=2) + "\n"
        write_atomic(path, text.encode())
