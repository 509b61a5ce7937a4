"""fiolake's configuration: one typed object built once from flags and the environment.

Every `FIOLAKE_*`, `AWS_*` and `VAULT_*` variable fiolake reads is read here and nowhere
else (docs/usage.md's configuration table lists the same names; a test keeps them equal).
A command builds one `Settings` with `Settings.from_env(lake=<--lake flag>)` and passes it
(or what it opens: a store, a signer, a keyring) down to the library.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fiolake.errors import ConfigError, FiolakeError, UsageProblem
from fiolake.s3client import S3Settings, profile_credentials
from fiolake.signing.base import DEFAULT_KEYRING, DEFAULT_TRANSIT_KEY
from fiolake.store import ObjectStore, open_store

if TYPE_CHECKING:  # imported where used: most commands never sign (fiolake.signing)
    from fiolake.signing import Keyring, Signer

DEFAULT_LAKE = "./lake"
DEFAULT_SNAPSHOT_CACHE = Path("~/.cache/fiolake/snapshots")
DEFAULT_PROBE_CACHE = Path("~/.cache/fiolake/store-probe.json")

# name -> what it sets; docs/usage.md's configuration table is checked against this.
ENV_VARS: dict[str, str] = {
    "FIOLAKE_LAKE": "lake location: a directory or s3://BUCKET[/PREFIX] (default ./lake)",
    "FIOLAKE_S3_ENDPOINT": "https:// endpoint of the object store (S3 lakes)",
    "AWS_ENDPOINT_URL": "the endpoint when FIOLAKE_S3_ENDPOINT is unset (boto3's own variable)",
    "FIOLAKE_S3_ADDRESSING": "path (default: https://host/bucket/key) or virtual "
    "(https://bucket.host/key, AWS S3 and R2); boto3, DuckDB and delta-rs alike",
    "FIOLAKE_CA_BUNDLE": "CA file that signed the object store's certificate",
    "AWS_ACCESS_KEY_ID": "object-store access key",
    "AWS_SECRET_ACCESS_KEY": "object-store secret key",
    "AWS_SESSION_TOKEN": "object-store session token (temporary keys)",
    "AWS_PROFILE": "AWS profile whose keys are used when AWS_ACCESS_KEY_ID is unset "
    "(boto3, DuckDB and delta-rs alike)",
    "AWS_CA_BUNDLE": "CA file, used when FIOLAKE_CA_BUNDLE is unset",
    "AWS_REGION": "signing region (default us-east-1; AWS_DEFAULT_REGION too)",
    "AWS_DEFAULT_REGION": "signing region when AWS_REGION is unset",
    "FIOLAKE_SIGNER": "how `publish` signs: vault (transit) or local (a key file)",
    "FIOLAKE_SIGNING_KEY": "private key file for FIOLAKE_SIGNER=local",
    "FIOLAKE_TRUSTED_KEY": "public key file a runner trusts (pinned, never cached)",
    "FIOLAKE_KEYRING": "runner's key cache file (default ~/.cache/fiolake/keyring.json)",
    "FIOLAKE_TRANSIT_KEY": "transit key name (default manifests)",
    "VAULT_ADDR": "Vault/OpenBao address (signing; runners fetch public keys)",
    "VAULT_TOKEN": "Vault/OpenBao token",
    "VAULT_CACERT": "CA file that signed Vault's certificate",
    "FIOLAKE_STATE_DIR": "local stack state (default ~/.local/state/fiolake)",
    "FIOLAKE_CACHE_DIR": "where the MinIO binary is built and each fio's option list is kept "
    "(default ~/.cache/fiolake)",
    "FIOLAKE_SNAPSHOT_CACHE": "where readers keep lake snapshots, and the rows of runs not yet "
    "compacted, between processes (default "
    "~/.cache/fiolake/snapshots; off: none)",
    "FIOLAKE_DUCKDB_THREADS": "threads each lake query may use (default: every core); 1 keeps "
    "the aggregator off the cores a fio on the same host measures with",
    "FIOLAKE_PROBE_CACHE": "the store probe's verdicts per endpoint + bucket (default "
    "~/.cache/fiolake/store-probe.json; off: probe at every start)",
    "FIOLAKE_POLICY_DIR": "replacement HCL/IAM policies for `stack up` (default: shipped)",
    "FIOLAKE_HOST_LOCK": "the host-wide fio lock file, as --host-lock (default "
    "/run/lock/fiolake/host.lock)",
    "FIOLAKE_HISTORY": "runner: append every store operation to this JSON-lines file",
    "FIOLAKE_PAUSE_FILE": "fault tests only: a runner stops itself at the step this file names",
}


def _path(value: str | None) -> Path | None:
    return Path(value).expanduser() if value else None


def _ca_bundle(env: Mapping[str, str]) -> str | None:
    """FIOLAKE_CA_BUNDLE, else AWS_CA_BUNDLE; ConfigError when the file is not there (TLS
    would otherwise fail on the first request with botocore's words, exit 1)."""
    var = "FIOLAKE_CA_BUNDLE" if env.get("FIOLAKE_CA_BUNDLE") else "AWS_CA_BUNDLE"
    value = env.get(var) or None
    if value and not Path(value).expanduser().is_file():
        raise ConfigError(
            f"{var}={value}: no such file — point it at the CA certificate (PEM) that "
            'signed the object store\'s certificate (`eval "$(fiolake stack env)"` sets '
            "the local stack's)"
        )
    return value


def _cache(value: str | None, default: Path) -> Path | None:
    if value == "off":
        return None
    return _path(value) or default.expanduser()


def _addressing(value: str | None) -> bool:
    """FIOLAKE_S3_ADDRESSING: True for virtual-hosted, False for path-style (the default)."""
    if value in (None, "", "path"):
        return False
    if value == "virtual":
        return True
    raise UsageProblem(
        f"FIOLAKE_S3_ADDRESSING is {value!r} — set it to 'path' (https://host/bucket/key, "
        "the default) or 'virtual' (https://bucket.host/key: AWS S3, R2)"
    )


def duckdb_threads(env: Mapping[str, str] | None = None) -> int | None:
    """FIOLAKE_DUCKDB_THREADS as a count of threads, None when unset (DuckDB's default:
    one per core). Read at each lake connection: every reader (CLI, app, library) opens
    lakes through `aggregator.lake.connect`, which takes no Settings."""
    value = (os.environ if env is None else env).get("FIOLAKE_DUCKDB_THREADS", "").strip()
    if not value:
        return None
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise ConfigError(
            f"FIOLAKE_DUCKDB_THREADS is {value!r} — set it to a whole number of threads "
            "(1, 2, …), or unset it to use every core"
        )
    return int(value)


def _need(value: str | None, name: str, why: str) -> str:
    if not value:
        raise FiolakeError(f"{name} is not set — {why}")
    return value


@dataclass(frozen=True)
class Settings:
    """Everything fiolake takes from its environment, typed, read once."""

    lake: str = DEFAULT_LAKE
    s3: S3Settings | None = None
    signer_kind: str = ""
    signing_key: Path | None = None
    trusted_key: Path | None = None
    keyring_path: Path = DEFAULT_KEYRING
    transit_key: str = DEFAULT_TRANSIT_KEY
    vault_addr: str | None = None
    vault_token: str | None = None
    vault_cacert: str | None = None
    state_dir: Path | None = None
    cache_dir: Path | None = None
    snapshot_cache: Path | None = None  # None: snapshots are not kept on disk
    probe_cache: Path | None = DEFAULT_PROBE_CACHE.expanduser()  # None: never cached
    policy_dir: Path | None = None
    history: Path | None = None
    pause_file: Path | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, lake: str | None = None) -> Settings:
        """Settings from `env` (default os.environ); `lake` (a --lake flag) wins over it."""
        env = os.environ if env is None else env
        endpoint = env.get("FIOLAKE_S3_ENDPOINT") or env.get("AWS_ENDPOINT_URL")
        s3 = None
        if endpoint:
            keys = (
                env.get("AWS_ACCESS_KEY_ID"),
                env.get("AWS_SECRET_ACCESS_KEY"),
                env.get("AWS_SESSION_TOKEN"),
            )
            if not keys[0] and env.get("AWS_PROFILE"):
                # One place resolves a profile: boto3, DuckDB and delta-rs get its keys.
                keys = profile_credentials(env["AWS_PROFILE"])
            s3 = S3Settings(
                endpoint=endpoint,
                ca_bundle=_ca_bundle(env),
                access_key=keys[0],
                secret_key=keys[1],
                session_token=keys[2] or None,
                region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
                virtual_hosted=_addressing(env.get("FIOLAKE_S3_ADDRESSING")),
            )
        return cls(
            lake=lake or env.get("FIOLAKE_LAKE") or DEFAULT_LAKE,
            s3=s3,
            signer_kind=env.get("FIOLAKE_SIGNER", ""),
            signing_key=_path(env.get("FIOLAKE_SIGNING_KEY")),
            trusted_key=_path(env.get("FIOLAKE_TRUSTED_KEY")),
            keyring_path=_path(env.get("FIOLAKE_KEYRING")) or DEFAULT_KEYRING,
            transit_key=env.get("FIOLAKE_TRANSIT_KEY") or DEFAULT_TRANSIT_KEY,
            vault_addr=env.get("VAULT_ADDR") or None,
            vault_token=env.get("VAULT_TOKEN") or None,
            vault_cacert=env.get("VAULT_CACERT") or None,
            state_dir=_path(env.get("FIOLAKE_STATE_DIR")),
            cache_dir=_path(env.get("FIOLAKE_CACHE_DIR")),
            snapshot_cache=_cache(env.get("FIOLAKE_SNAPSHOT_CACHE"), DEFAULT_SNAPSHOT_CACHE),
            probe_cache=_cache(env.get("FIOLAKE_PROBE_CACHE"), DEFAULT_PROBE_CACHE),
            policy_dir=_path(env.get("FIOLAKE_POLICY_DIR")),
            history=_path(env.get("FIOLAKE_HISTORY")),
            pause_file=_path(env.get("FIOLAKE_PAUSE_FILE")),
        )

    @property
    def build_cache(self) -> Path:
        """fiolake's cache of built programs and what it learnt of them (FIOLAKE_CACHE_DIR,
        else ~/.cache/fiolake): the MinIO binary, each fio's option list."""
        return self.cache_dir or Path.home() / ".cache" / "fiolake"

    @property
    def lake_s3(self) -> S3Settings | None:
        """The S3 settings when the lake is on S3, else None."""
        return self.s3 if self.lake.startswith("s3://") else None

    def store(self) -> ObjectStore:
        """Open the lake (local directory or S3) for reading."""
        return open_store(self.lake, self.lake_s3)

    def writable_store(self, *, recheck: bool = False) -> ObjectStore:
        """Open the lake for a command that writes it: an S3 store must first pass the
        store probe (cached per endpoint + bucket), else StoreRefused (exit 2)."""
        from fiolake.storeprobe import require_safe_store

        store = self.store()
        require_safe_store(store, self.probe_cache, recheck=recheck)
        return store

    def signer(self) -> Signer:
        """FIOLAKE_SIGNER=vault (VAULT_ADDR, VAULT_TOKEN, …) or local (FIOLAKE_SIGNING_KEY)."""
        from fiolake.signing import LocalSigner, VaultSigner

        if self.signer_kind == "vault":
            why = "FIOLAKE_SIGNER=vault signs with Vault transit"
            return VaultSigner(
                _need(self.vault_addr, "VAULT_ADDR", why + " and needs its address"),
                _need(self.vault_token, "VAULT_TOKEN", why + " and needs a token allowed to sign"),
                self.transit_key,
                self.vault_cacert,
            )
        if self.signer_kind == "local":
            if self.signing_key is None:
                raise FiolakeError(
                    "FIOLAKE_SIGNING_KEY is not set — FIOLAKE_SIGNER=local needs the path of "
                    "an Ed25519 key file (create one with `fiolake keygen PATH`)"
                )
            return LocalSigner.load(self.signing_key)
        state = f"is {self.signer_kind!r}" if self.signer_kind else "is not set"
        raise FiolakeError(
            f"FIOLAKE_SIGNER {state} — set it to 'vault' (Vault transit) or 'local' (a key file)"
        )

    def keyring(self) -> Keyring:
        """The runner's keyring: the cache file, a pinned key, Vault refresh if configured."""
        from fiolake.signing import Keyring, load_public_key, vault_key_refresher

        refresher = None
        if self.vault_addr:
            refresher = vault_key_refresher(
                self.vault_addr,
                _need(
                    self.vault_token,
                    "VAULT_TOKEN",
                    "VAULT_ADDR is set, so keys are read from Vault",
                ),
                self.transit_key,
                self.vault_cacert,
            )
        ring = Keyring.from_file(self.keyring_path, refresher)
        if self.trusted_key is not None:
            keyid, raw = load_public_key(self.trusted_key)
            ring.add(keyid, raw, persist=False)
        if not ring.keyids() and refresher is None:
            raise FiolakeError(
                "no trusted signing keys — set FIOLAKE_TRUSTED_KEY to a public key file "
                "or VAULT_ADDR/VAULT_TOKEN to fetch keys from Vault transit"
            )
        return ring
