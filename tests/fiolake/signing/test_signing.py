"""Signers, key files, the keyring cache, and Vault transit with least-privilege tokens."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import socket
import stat
from pathlib import Path

import hvac
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from fiolake import signing
from fiolake.config import Settings
from fiolake.errors import FiolakeError, ManifestError
from fiolake.signing import (
    Keyring,
    KeyringUnavailable,
    LocalSigner,
    VaultSigner,
    load_public_key,
    vault_key_refresher,
    vault_keyid,
)
from fiolake.signing import keyring as keyring_module

MESSAGE = b"DSSEv1 4 test 5 hello"


def sig_bytes(signature: signing.Signature) -> bytes:
    return base64.b64decode(signature.sig)


# --- local key files -------------------------------------------------------------------


def test_generate_writes_private_0600_and_public_pem(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "signing.key"
    signer = LocalSigner.generate(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    pub = tmp_path / "keys" / "signing.key.pub"
    assert pub.read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----")
    digest = hashlib.sha256(signer.public_key_bytes()).hexdigest()
    assert signer.keyid == "local:" + digest[:16]
    assert load_public_key(pub) == (signer.keyid, signer.public_key_bytes())


def test_generate_refuses_to_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "signing.key"
    LocalSigner.generate(path)
    before = path.read_bytes()
    with pytest.raises(FiolakeError, match="already exists; refusing to overwrite"):
        LocalSigner.generate(path)
    assert path.read_bytes() == before
    # A stray public key file alone also stops it, before anything is written.
    (tmp_path / "other.key.pub").write_text("x")
    with pytest.raises(FiolakeError, match=r"other\.key\.pub already exists"):
        LocalSigner.generate(tmp_path / "other.key")
    assert not (tmp_path / "other.key").exists()


def test_load_round_trip_signs_with_the_same_key(tmp_path: Path) -> None:
    path = tmp_path / "signing.key"
    first = LocalSigner.generate(path)
    again = LocalSigner.load(path)
    assert again.keyid == first.keyid
    ring = Keyring()
    ring.add(first.keyid, first.public_key_bytes())
    assert ring.verify(again.keyid, MESSAGE, sig_bytes(again.sign(MESSAGE)))


def test_load_refuses_a_key_others_can_read(tmp_path: Path) -> None:
    path = tmp_path / "signing.key"
    LocalSigner.generate(path)
    path.chmod(0o644)
    with pytest.raises(FiolakeError) as exc:
        LocalSigner.load(path)
    assert str(exc.value) == (
        f"signing key {path} is readable by others (mode 0644); run: chmod 600 {path}"
    )


def test_load_refuses_other_key_types_and_garbage(tmp_path: Path) -> None:
    path = tmp_path / "ec.key"
    pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path.write_bytes(pem)
    path.chmod(0o600)
    with pytest.raises(FiolakeError, match=r"ec\.key is not an Ed25519 key \(found EC"):
        LocalSigner.load(path)
    path.write_text("hello")
    with pytest.raises(FiolakeError, match="is not an unencrypted PEM private key"):
        LocalSigner.load(path)
    with pytest.raises(FiolakeError, match="cannot read signing key .*missing.key"):
        LocalSigner.load(tmp_path / "missing.key")


# --- keyring ---------------------------------------------------------------------------


@pytest.fixture
def signer(tmp_path: Path) -> LocalSigner:
    return LocalSigner.generate(tmp_path / "signing.key")


def test_keyring_verifies_and_rejects(signer: LocalSigner, tmp_path: Path) -> None:
    ring = Keyring()
    ring.add(signer.keyid, signer.public_key_bytes(), persist=False)  # a pinned key file
    sig = sig_bytes(signer.sign(MESSAGE))
    assert ring.verify(signer.keyid, MESSAGE, sig) is True
    assert ring.verify(signer.keyid, MESSAGE + b"!", sig) is False
    other = LocalSigner.generate(tmp_path / "other.key")
    with pytest.raises(ManifestError, match=f"^unknown signing key {other.keyid} "):
        ring.verify(other.keyid, MESSAGE, sig_bytes(other.sign(MESSAGE)))


def test_a_runner_without_a_source_for_a_key_cannot_judge_it(signer: LocalSigner) -> None:
    ring = Keyring()
    ring.add(signer.keyid, signer.public_key_bytes(), persist=False)
    vault_id = vault_keyid("manifests", 1, bytes(32))
    with pytest.raises(KeyringUnavailable, match="^no trust source for vault key .* VAULT_ADDR"):
        ring.verify(vault_id, MESSAGE, bytes(64))
    source = KeySource({})
    source.covers = lambda keyid: keyid.startswith("vault:")  # type: ignore[attr-defined]
    with pytest.raises(KeyringUnavailable, match="FIOLAKE_TRUSTED_KEY$"):
        Keyring(refresher=source).verify(signer.keyid, MESSAGE, bytes(64))


def test_key_ids_are_bound_to_key_material(signer: LocalSigner) -> None:
    with pytest.raises(FiolakeError, match="does not match its key"):
        Keyring().add("local:0000000000000000", signer.public_key_bytes())
    with pytest.raises(FiolakeError, match="does not match its key"):
        Keyring().add("vault:manifests:v1:0000000000000000", signer.public_key_bytes())
    with pytest.raises(FiolakeError, match="32 bytes, not 31"):
        Keyring().add(vault_keyid("manifests", 1, bytes(31)), bytes(31))
    a, b = bytes(32), bytes(range(32))
    assert vault_keyid("manifests", 1, a) != vault_keyid("manifests", 1, b)
    assert vault_keyid("manifests", 1, a).startswith("vault:manifests:v1:")


class KeySource:
    """A key source as a runner sees it: the current set of keys, changeable by the test."""

    def __init__(self, keys: dict[str, bytes], source: str = "vault https://vault-a k"):
        self.keys = dict(keys)
        self.source = source
        self.calls: list[str] = []
        self.down = False

    def __call__(self, wanted: str) -> dict[str, bytes]:
        self.calls.append(wanted)
        if self.down:
            raise FiolakeError("cannot reach Vault at https://127.0.0.1:1")
        return dict(self.keys)


def vkey(signer: LocalSigner, version: int, name: str = "k") -> tuple[str, bytes]:
    """A Vault-style key id for a local key pair (tests sign with LocalSigner)."""
    raw = signer.public_key_bytes()
    return vault_keyid(name, version, raw), raw


def vsig(signer: LocalSigner) -> bytes:
    return sig_bytes(signer.sign(MESSAGE))


def test_keyring_cache_is_kept_per_trust_source(signer: LocalSigner, tmp_path: Path) -> None:
    cache = tmp_path / "cache" / "keyring.json"
    a, b = LocalSigner.generate(tmp_path / "a"), LocalSigner.generate(tmp_path / "b")
    src_a = KeySource(dict([vkey(a, 1)]), "vault https://a:8300 transit/keys/k")
    src_b = KeySource(dict([vkey(b, 1)]), "vault https://b:8300 transit/keys/k")
    assert Keyring.from_file(cache, src_a).keyids() == []  # no cache yet
    ring_a = Keyring.from_file(cache, src_a)
    ring_a.add(signer.keyid, signer.public_key_bytes(), persist=False)
    ring_a.refresh()
    Keyring.from_file(cache, src_b).refresh()
    doc = json.loads(cache.read_text())
    assert doc["format"] == 2
    assert {k: list(v["keys"]) for k, v in doc["sources"].items()} == {
        src_a.source: [vkey(a, 1)[0]],  # the pinned key is never cached
        src_b.source: [vkey(b, 1)[0]],
    }
    # Each source sees only its own keys, even with the same key name and version.
    assert Keyring.from_file(cache, src_a).keyids() == [vkey(a, 1)[0]]
    assert Keyring.from_file(cache, src_b).keyids() == [vkey(b, 1)[0]]
    assert Keyring.from_file(cache).keyids() == []  # pinned keys only: no cached keys apply


def test_a_first_format_cache_is_ignored_and_a_corrupt_one_is_named(tmp_path: Path) -> None:
    cache = tmp_path / "keyring.json"
    cache.write_text(
        json.dumps({"keys": {"vault:manifests:v1": base64.b64encode(bytes(32)).decode()}})
    )
    source = KeySource({})
    assert Keyring.from_file(cache, source).keyids() == []
    cache.write_text("{not json")
    with pytest.raises(FiolakeError) as exc:
        Keyring.from_file(cache, source)
    assert str(exc.value).startswith(f"keyring cache {cache} is unreadable (")
    assert str(exc.value).endswith(") — delete it; keys are fetched again")


def test_a_recreated_key_with_the_same_name_and_version_is_fetched(tmp_path: Path) -> None:
    """The first stack's v1 is cached; a second stack's v1 is another key: no stale verdict."""
    first, second = LocalSigner.generate(tmp_path / "a"), LocalSigner.generate(tmp_path / "b")
    cache = tmp_path / "keyring.json"
    source = KeySource(dict([vkey(first, 1)]))
    Keyring.from_file(cache, source).refresh()
    source.keys = dict([vkey(second, 1)])  # the stack was re-created
    ring = Keyring.from_file(cache, source)
    assert ring.keyids() == [vkey(first, 1)[0]]
    assert ring.verify(vkey(second, 1)[0], MESSAGE, vsig(second))
    assert ring.keyids() == [vkey(second, 1)[0]]


def test_a_failing_signature_refreshes_once_before_the_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good, bad = LocalSigner.generate(tmp_path / "a"), LocalSigner.generate(tmp_path / "b")
    keyid, raw = vkey(good, 1)
    source = KeySource({keyid: raw})
    ring = Keyring(refresher=source)
    ring.refresh()
    assert source.calls == [""]
    assert ring.verify(keyid, MESSAGE, vsig(bad)) is False  # tampered: a refresh, then False
    assert source.calls == ["", keyid]
    del source.keys[keyid]
    assert ring.verify(keyid, MESSAGE, vsig(good)) is True  # cached and good: no refresh
    for _ in range(5):  # more tampered ones within the minute: the verdict stands, no reads
        assert ring.verify(keyid, MESSAGE, vsig(bad)) is False
    assert source.calls == ["", keyid]
    monkeypatch.setattr(keyring_module, "PER_KEY_REFRESH_S", 0.0)  # a minute later
    with pytest.raises(ManifestError, match="retired by policy"):
        ring.verify(keyid, MESSAGE, vsig(bad))  # the refresh finds the key gone
    source.down = True
    ring = Keyring(refresher=source)
    ring.add(keyid, raw)
    ring.refreshed_at = 1e18  # fresh: no stale refresh first
    with pytest.raises(KeyringUnavailable):
        ring.verify(keyid, MESSAGE, vsig(bad))  # cannot refresh: no verdict


def test_unknown_keyid_refreshes_once_then_retries(tmp_path: Path) -> None:
    v1, v2 = LocalSigner.generate(tmp_path / "a"), LocalSigner.generate(tmp_path / "b")
    source = KeySource(dict([vkey(v1, 1)]))
    cache = tmp_path / "keyring.json"
    ring = Keyring.from_file(cache, refresher=source)
    ring.refresh()
    assert ring.keyids() == [vkey(v1, 1)[0]]

    source.keys.update([vkey(v2, 2)])
    assert ring.verify(vkey(v2, 2)[0], MESSAGE, vsig(v2))
    assert source.calls == ["", vkey(v2, 2)[0]]
    cached = json.loads(cache.read_text())["sources"][source.source]["keys"]
    assert sorted(cached) == sorted([vkey(v1, 1)[0], vkey(v2, 2)[0]])

    # A bogus key id is looked up once, then refused from memory for a while.
    bogus = vault_keyid("k", 9, bytes(32))
    for _ in range(3):
        with pytest.raises(ManifestError, match=f"^unknown signing key {bogus} "):
            ring.verify(bogus, MESSAGE, bytes(64))
    assert source.calls == ["", vkey(v2, 2)[0], bogus]


def test_refresh_drops_retired_versions_but_not_pinned_keys(tmp_path: Path) -> None:
    v1, v2 = LocalSigner.generate(tmp_path / "a"), LocalSigner.generate(tmp_path / "b")
    local = LocalSigner.generate(tmp_path / "local")
    source = KeySource(dict([vkey(v1, 1), vkey(v2, 2)]))
    ring = Keyring(refresher=source)
    ring.add(local.keyid, local.public_key_bytes(), persist=False)
    ring.refresh()
    assert ring.verify(vkey(v1, 1)[0], MESSAGE, vsig(v1))

    del source.keys[vkey(v1, 1)[0]]  # min_decryption_version moved past v1
    ring.refresh()
    assert ring.keyids() == sorted([local.keyid, vkey(v2, 2)[0]])
    with pytest.raises(ManifestError) as exc:
        ring.verify(vkey(v1, 1)[0], MESSAGE, vsig(v1))
    assert str(exc.value).startswith(f"unknown signing key {vkey(v1, 1)[0]} (retired by policy, ")


def test_source_down_is_transient_not_a_refusal(signer: LocalSigner) -> None:
    source = KeySource({})
    source.down = True
    ring = Keyring(refresher=source)
    keyid, raw = vkey(signer, 1)
    ring.add(keyid, raw)
    # The stale-cache refresh fails quietly: cached keys keep working offline.
    assert ring.verify(keyid, MESSAGE, vsig(signer))
    # An unknown key while the source is down cannot be judged yet.
    with pytest.raises(KeyringUnavailable, match="^cannot refresh signing keys: cannot reach"):
        ring.verify(vault_keyid("k", 3, bytes(32)), MESSAGE, bytes(64))
    assert source.calls == [""]  # no second wait on a source that just failed


def test_stale_cache_is_refreshed_before_verifying(tmp_path: Path) -> None:
    v1, v2 = LocalSigner.generate(tmp_path / "a"), LocalSigner.generate(tmp_path / "b")
    cache = tmp_path / "keyring.json"
    source = KeySource(dict([vkey(v1, 1)]))
    old = Keyring(refresher=source)
    old.refresh()
    old.refreshed_at = 0.0  # long ago
    old.save(cache)
    source.keys = dict([vkey(v2, 2)])  # v1 retired meanwhile
    source.calls.clear()
    ring = Keyring.from_file(cache, refresher=source)
    with pytest.raises(ManifestError, match="retired by policy"):
        ring.verify(vkey(v1, 1)[0], MESSAGE, vsig(v1))
    assert source.calls == [""]  # the stale refresh, and no second one for the lookup


# --- configuration from the environment ------------------------------------------------


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "FIOLAKE_SIGNER is not set — set it to 'vault' (Vault transit) or 'local'"),
        ({"FIOLAKE_SIGNER": "gpg"}, "FIOLAKE_SIGNER is 'gpg' — set it to 'vault'"),
        ({"FIOLAKE_SIGNER": "local"}, "FIOLAKE_SIGNING_KEY is not set — FIOLAKE_SIGNER=local"),
        ({"FIOLAKE_SIGNER": "vault"}, "VAULT_ADDR is not set — FIOLAKE_SIGNER=vault"),
        (
            {"FIOLAKE_SIGNER": "vault", "VAULT_ADDR": "https://127.0.0.1:8200"},
            "VAULT_TOKEN is not set — FIOLAKE_SIGNER=vault signs with Vault transit",
        ),
    ],
)
def test_signer_from_env_names_what_is_missing(env: dict[str, str], message: str) -> None:
    with pytest.raises(FiolakeError) as exc:
        Settings.from_env(env).signer()
    assert str(exc.value).startswith(message)


def test_local_signer_and_trusted_key_from_env(signer: LocalSigner, tmp_path: Path) -> None:
    env = {
        "FIOLAKE_SIGNER": "local",
        "FIOLAKE_SIGNING_KEY": str(tmp_path / "signing.key"),
        "FIOLAKE_TRUSTED_KEY": str(tmp_path / "signing.key.pub"),
        "FIOLAKE_KEYRING": str(tmp_path / "ring.json"),
    }
    loaded = Settings.from_env(env).signer()
    ring = Settings.from_env(env).keyring()
    assert ring.keyids() == [signer.keyid]
    assert ring.verify(signer.keyid, MESSAGE, sig_bytes(loaded.sign(MESSAGE)))
    ring.save(tmp_path / "ring.json")
    assert not (tmp_path / "ring.json").exists()  # pinned keys are never cached


def test_keyring_from_env_needs_some_source(tmp_path: Path) -> None:
    with pytest.raises(FiolakeError, match="^no trusted signing keys — set FIOLAKE_TRUSTED_KEY"):
        Settings.from_env({"FIOLAKE_KEYRING": str(tmp_path / "none.json")}).keyring()
    with pytest.raises(FiolakeError, match="^VAULT_TOKEN is not set — VAULT_ADDR is set"):
        Settings.from_env({"VAULT_ADDR": "https://127.0.0.1:8200"}).keyring()


def test_unreachable_vault_is_a_clear_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connection refused
        addr = f"http://127.0.0.1:{port}"
        with pytest.raises(FiolakeError, match=f"^cannot reach Vault at {addr} to sign") as got:
            VaultSigner(addr, "token").sign(MESSAGE)
        assert str(got.value).endswith(
            " — check that Vault/OpenBao runs there and VAULT_ADDR names it "
            "(the local stack: `fiolake stack up`)"
        )
        with pytest.raises(FiolakeError, match=f"^cannot reach Vault at {addr} to read"):
            vault_key_refresher(addr, "token")("vault:manifests:v1")


# --- with the real OpenBao ---------------------------------------------------------------


def _vault(stack, token: str) -> hvac.Client:  # noqa: ANN001
    return hvac.Client(url=stack.vault_addr, token=token, verify=stack.vault_cacert or True)


@pytest.mark.stack
def test_vault_signature_verifies_offline(stack) -> None:  # noqa: ANN001
    signer = VaultSigner(
        stack.vault_addr,
        stack.roles["publisher"].vault_token,
        stack.transit_key,
        stack.vault_cacert,
    )
    signature = signer.sign(MESSAGE)
    assert signature.keyid.startswith(f"vault:{stack.transit_key}:v")
    assert len(sig_bytes(signature)) == 64
    runner = vault_key_refresher(
        stack.vault_addr, stack.roles["runner"].vault_token, stack.transit_key, stack.vault_cacert
    )
    ring = Keyring()
    for keyid, key in runner(signature.keyid).items():
        ring.add(keyid, key)  # from here on, no Vault involved
    assert ring.verify(signature.keyid, MESSAGE, sig_bytes(signature))
    assert not ring.verify(signature.keyid, MESSAGE + b"x", sig_bytes(signature))


@pytest.mark.stack
def test_vault_tokens_are_least_privilege(stack) -> None:  # noqa: ANN001
    key = stack.transit_key
    publisher, runner = stack.roles["publisher"].vault_token, stack.roles["runner"].vault_token
    with pytest.raises(FiolakeError) as exc:
        VaultSigner(stack.vault_addr, runner, key, stack.vault_cacert).sign(MESSAGE)
    assert str(exc.value) == (
        f"Vault refused to sign with transit key '{key}' (permission denied) — "
        f"give the token a policy with `update` on transit/sign/{key}"
    )
    # Public keys are not secret: the publisher reads them to name its signatures' keys.
    assert vault_key_refresher(stack.vault_addr, publisher, key, stack.vault_cacert)("")
    analyst = stack.roles["analyst"].vault_token
    with pytest.raises(FiolakeError) as exc:
        vault_key_refresher(stack.vault_addr, analyst, key, stack.vault_cacert)("")
    assert str(exc.value) == (
        f"Vault refused to read transit key '{key}' (permission denied) — "
        f"give the token a policy with `read` on transit/keys/{key}"
    )


@pytest.mark.stack
def test_an_unknown_transit_key_names_the_setting_to_check(stack) -> None:  # noqa: ANN001
    admin = stack.roles["admin"].vault_token  # may read any key: what is missing is the key
    with pytest.raises(FiolakeError) as exc:
        vault_key_refresher(stack.vault_addr, admin, "no-such-key", stack.vault_cacert)("")
    assert str(exc.value) == (
        f"Vault cannot read transit key 'no-such-key': no such key or mount at "
        f"{stack.vault_addr} — check FIOLAKE_TRANSIT_KEY and that the transit engine is "
        "mounted (the local stack: `fiolake stack up` creates both)"
    )


@pytest.mark.stack
def test_a_transit_key_of_another_type_names_the_type_to_create(stack) -> None:  # noqa: ANN001
    root = _vault(stack, stack.root_token)
    name = f"ecdsa-{secrets.token_hex(4)}"
    root.secrets.transit.create_key(name, key_type="ecdsa-p256")
    with pytest.raises(FiolakeError) as exc:
        vault_key_refresher(stack.vault_addr, stack.root_token, name, stack.vault_cacert)("")
    assert str(exc.value) == (
        f"transit key '{name}' is ecdsa-p256, not ed25519 — create a key with type=ed25519 "
        "and name it in FIOLAKE_TRANSIT_KEY"
    )


@pytest.fixture
def rotating_key(stack):  # noqa: ANN001, ANN201
    """A transit key of its own (rotating the shared one would disturb other tests),
    with a sign-only and a read-only token scoped to it."""
    root = _vault(stack, stack.root_token)
    name = f"rotation-{secrets.token_hex(4)}"
    root.secrets.transit.create_key(name, key_type="ed25519")
    root.sys.create_or_update_policy(
        f"{name}-sign",
        f'path "transit/sign/{name}" {{ capabilities = ["update"] }}\n'
        f'path "transit/keys/{name}" {{ capabilities = ["read"] }}',
    )
    root.sys.create_or_update_policy(
        f"{name}-read", f'path "transit/keys/{name}" {{ capabilities = ["read"] }}'
    )
    tokens = {
        role: root.auth.token.create(policies=[f"{name}-{role}"], ttl="10m")["auth"]["client_token"]
        for role in ("sign", "read")
    }
    try:
        yield root, name, tokens
    finally:
        for role in ("sign", "read"):
            root.sys.delete_policy(f"{name}-{role}")


@pytest.mark.stack
def test_vault_rotation_and_retirement(stack, rotating_key, tmp_path: Path) -> None:  # noqa: ANN001
    root, name, tokens = rotating_key
    ca = stack.vault_cacert
    publisher = VaultSigner(stack.vault_addr, tokens["sign"], name, ca)
    refresher = vault_key_refresher(stack.vault_addr, tokens["read"], name, ca)
    cache = tmp_path / "keyring.json"

    s1 = publisher.sign(MESSAGE)
    assert s1.keyid.startswith(f"vault:{name}:v1:")
    runner = Keyring.from_file(cache, refresher)
    runner.refresh()
    assert runner.keyids() == [s1.keyid]

    root.secrets.transit.rotate_key(name)
    s2 = publisher.sign(MESSAGE)
    assert s2.keyid.startswith(f"vault:{name}:v2:")
    # Only v1 is cached; seeing v2 makes the runner fetch it, then verify.
    assert runner.verify(s2.keyid, MESSAGE, sig_bytes(s2))
    assert runner.keyids() == [s1.keyid, s2.keyid]
    assert runner.verify(s1.keyid, MESSAGE, sig_bytes(s1))  # v1 still trusted

    # Retire v1: transit drops it from keys/<name>, so the next refresh drops it too.
    root.secrets.transit.update_key_configuration(name, min_decryption_version=2)
    runner.refresh()
    assert runner.keyids() == [s2.keyid]
    with pytest.raises(ManifestError) as exc:
        runner.verify(s1.keyid, MESSAGE, sig_bytes(s1))
    assert (
        str(exc.value) == f"unknown signing key {s1.keyid} (retired by policy, trusted: {s2.keyid})"
    )
    # The cache forgot v1 as well: a restarted runner cannot be talked back into it.
    sections = json.loads(cache.read_text())["sources"]
    assert [list(v["keys"]) for v in sections.values()] == [[s2.keyid]]
    restarted = Keyring.from_file(cache, refresher)
    with pytest.raises(ManifestError, match=f"^unknown signing key {s1.keyid}"):
        restarted.verify(s1.keyid, MESSAGE, sig_bytes(s1))


def test_a_cache_that_cannot_be_written_leaves_the_refreshed_keys_usable(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    signer = LocalSigner.generate(tmp_path / "a")
    keyid, raw = vkey(signer, 1)
    where = tmp_path / "a-directory"  # the cache path names a directory: the write fails
    where.mkdir()
    ring = Keyring(refresher=KeySource({keyid: raw}), path=where)
    ring.refresh()
    assert ring.verify(keyid, MESSAGE, vsig(signer)) is True
    assert f"cannot write keyring cache {where}: cannot write {where}" in caplog.text
    assert sorted(p.name for p in where.iterdir()) == []  # no temporary file left behind
