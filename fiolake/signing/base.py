"""What a signature is and what a signer does; shared by the local and Vault signers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from fiolake.errors import FiolakeError


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
