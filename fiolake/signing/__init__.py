"""Ed25519 manifest signing, in three parts (this package re-exports their public names).

- `fiolake.signing.local_key`: a local Ed25519 key file (single-machine use);
- `fiolake.signing.vault`: Vault/OpenBao transit (sign; read the public keys);
- `fiolake.signing.keyring`: the runner's trusted public keys, cached, refreshed from a source.

Both signers produce the same thing: a raw 64-byte Ed25519 signature over the exact
message bytes (transit ed25519 is pure Ed25519), so verification is offline and identical.
See docs/manifests.md for key files, key ids, rotation and retirement.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Public name -> the submodule defining it, imported on first use: `fiolake.config` (read
# by every command) needs only the defaults in `base`, and importing hvac and
# cryptography cost ~50-100 ms of every `fiolake compare` that never signs or verifies.
_HOME = {
    "DEFAULT_KEYRING": "base",
    "DEFAULT_TRANSIT_KEY": "base",
    "KeyringUnavailable": "base",
    "Signature": "base",
    "Signer": "base",
    "Keyring": "keyring",
    "LocalSigner": "local_key",
    "load_public_key": "local_key",
    "local_keyid": "local_key",
    "public_key_path": "local_key",
    "Refresher": "vault",
    "VaultKeySource": "vault",
    "VaultSigner": "vault",
    "vault_key_refresher": "vault",
    "vault_keyid": "vault",
}

if TYPE_CHECKING:
    from fiolake.signing.base import (
        DEFAULT_KEYRING,
        DEFAULT_TRANSIT_KEY,
        KeyringUnavailable,
        Signature,
        Signer,
    )
    from fiolake.signing.keyring import Keyring
    from fiolake.signing.local_key import (
        LocalSigner,
        load_public_key,
        local_keyid,
        public_key_path,
    )
    from fiolake.signing.vault import (
        Refresher,
        VaultKeySource,
        VaultSigner,
        vault_key_refresher,
        vault_keyid,
    )


def __getattr__(name: str) -> Any:
    """The public name `name`, from its submodule (imported now if it was not yet)."""
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_KEYRING",
    "DEFAULT_TRANSIT_KEY",
    "Keyring",
    "KeyringUnavailable",
    "LocalSigner",
    "Refresher",
    "Signature",
    "Signer",
    "VaultKeySource",
    "VaultSigner",
    "load_public_key",
    "local_keyid",
    "public_key_path",
    "vault_key_refresher",
    "vault_keyid",
]
