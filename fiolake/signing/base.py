"""What a signature is and what a signer does; shared by the local and Vault signers."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from fiolake.errors import FiolakeError

# Defaults every Settings needs, kept here with no heavy imports: `fiolake.config` reads
# them on every command, most of which never sign or verify (see fiolake.signing).
DEFAULT_KEYRING = Path("~/.cache/fiolake/keyring.json")
DEFAULT_TRANSIT_KEY = "manifests"

FINGERPRINT_RE = r"[0-9a-f]{16}"


def key_fingerprint(public_key: bytes) -> str:
    """First 16 hex digits of sha256 over the raw public key: the last part of every key id,
    so an id can only ever name one key (as TUF's key ids do)."""
    return hashlib.sha256(public_key).hexdigest()[:16]


def fingerprint_of(keyid: str) -> str:
    """The fingerprint a key id claims (its last `:` part)."""
    return keyid.rsplit(":", 1)[-1]


def names_a_fingerprint(keyid: str) -> bool:
    """Whether `keyid` ends in a fingerprint. Ids of fiolake before they were bound to key
    material (`vault:<key>:v<N>`) do not: no key can ever be proven to be theirs."""
    return re.fullmatch(FINGERPRINT_RE, fingerprint_of(keyid)) is not None


class KeyringUnavailable(FiolakeError):
    """Keys could not be fetched (Vault down, no permission): retry later, don't reject."""


@dataclass(frozen=True)
class Signature:
    """One signature: who signed (`keyid`) and base64 of the 64-byte Ed25519 signature."""

    keyid: str
    sig: str


class Signer(Protocol):
    """Anything that signs message bytes with Ed25519 (LocalSigner, VaultSigner)."""

    def sign(self, message: bytes) -> Signature: ...

    def sign_batch(self, messages: Sequence[bytes]) -> list[Signature]: ...
