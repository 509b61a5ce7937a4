"""Ed25519 manifest signing, in three parts (this package re-exports their public names).

- `fiolake.signing.local_key`: a local Ed25519 key file (single-machine use);
- `fiolake.signing.vault`: Vault/OpenBao transit (sign; read the public keys);
- `fiolake.signing.keyring`: the runner's trusted public keys, cached, refreshed from a source.

Both signers produce the same thing: a raw 64-byte Ed25519 signature over the exact
message bytes (transit ed25519 is pure Ed25519), so verification is offline and identical.
See docs/manifests.md for key files, key ids, rotation and retirement.
"""

from fiolake.signing.base import KeyringUnavailable, Signature, Signer
from fiolake.signing.keyring import DEFAULT_KEYRING, Keyring
from fiolake.signing.local_key import LocalSigner, load_public_key, local_keyid, public_key_path
from fiolake.signing.vault import (
    DEFAULT_TRANSIT_KEY,
    Refresher,
    VaultKeySource,
    VaultSigner,
    vault_key_refresher,
    vault_keyid,
)

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
