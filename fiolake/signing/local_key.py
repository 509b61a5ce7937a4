"""A local Ed25519 key file: the signer for single-machine use, and pinned public keys."""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from fiolake.errors import FiolakeError
from fiolake.signing.base import Signature, key_fingerprint

# How to fix "already exists": keygen never overwrites, so a key is never lost by accident.
_KEEP = " — choose another PATH, or move the old key and its .pub away first"


def local_keyid(public_key: bytes) -> str:
    """Key id of a local Ed25519 key: `local:` + its fingerprint."""
    return "local:" + key_fingerprint(public_key)


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
                raise FiolakeError(f"{p} already exists; refusing to overwrite a key file{_KEEP}")
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
            raise FiolakeError(
                f"{exc.filename} already exists; refusing to overwrite a key file{_KEEP}"
            ) from exc
        return signer

    @classmethod
    def load(cls, path: Path) -> LocalSigner:
        """Load a private key written by `generate`; refuse files others can read."""
        path = Path(path)
        try:
            mode = path.stat().st_mode & 0o777
            data = path.read_bytes()
        except OSError as exc:
            raise FiolakeError(
                f"cannot read signing key {path}: {exc.strerror} — point FIOLAKE_SIGNING_KEY at "
                "an Ed25519 key file (create one with `fiolake keygen PATH`)"
            ) from exc
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

    def sign_batch(self, messages: Sequence[bytes]) -> list[Signature]:
        """Sign each message (local signing is fast; no batching needed)."""
        return [self.sign(m) for m in messages]


def load_public_key(path: Path) -> tuple[str, bytes]:
    """Read a PEM Ed25519 public key file → (local key id, raw 32 bytes)."""
    path = Path(path)
    try:
        key = serialization.load_pem_public_key(path.read_bytes())
    except OSError as exc:
        raise FiolakeError(
            f"cannot read trusted key {path}: {exc.strerror} — point FIOLAKE_TRUSTED_KEY at "
            "the signer's public key file (<key>.pub)"
        ) from exc
    except ValueError as exc:
        raise FiolakeError(f"{path} is not a PEM public key: {exc}") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise FiolakeError(f"{path} is not an Ed25519 public key (found {type(key).__name__})")
    raw = _raw_public(key)
    return local_keyid(raw), raw
