"""Manifests: canonical payload, DSSE envelope, and every reason a runner refuses one."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fiolake import layout
from fiolake.config import Settings
from fiolake.errors import ManifestError
from fiolake.ids import new_campaign_id, new_job_id, new_run_id, repetition_of
from fiolake.manifest import (
    PAYLOAD_TYPE,
    Manifest,
    envelope_bytes,
    new_manifest,
    pae,
    sign_manifest,
    verify_envelope,
)
from fiolake.signing import Keyring, LocalSigner, Signature

NOW = datetime(2026, 11, 22, 1, 45, 1, tzinfo=UTC)
BUCKET = "fiolake"
JOB_FILE = "; 4k random read — ünïcode ✓\n[randread]\nrw=randread\nbs=4k\nsize=16m\n"


def make_manifest(**overrides: object) -> Manifest:
    m = new_manifest(
        campaign_id="c-20261122-014501-3fa9",
        backend="local-nvme",
        profile="randread-4k",
        job_file_text=JOB_FILE,
        runtime_s=2,
        size_bytes=16 << 20,
        repetition=0,
        bucket=BUCKET,
        expires_in=timedelta(hours=1),
        now=NOW,
    )
    return dataclasses.replace(m, **overrides)


@pytest.fixture
def signer(tmp_path: Path) -> LocalSigner:
    return LocalSigner.generate(tmp_path / "signing.key")


@pytest.fixture
def keyring(signer: LocalSigner) -> Keyring:
    ring = Keyring()
    ring.add(signer.keyid, signer.public_key_bytes(), persist=False)  # a pinned key file
    return ring


def verify(data: bytes, keyring: Keyring, m: Manifest | None = None, **kw: object) -> Manifest:
    m = m or make_manifest()
    args = {"bucket": m.bucket, "key": m.key, "now": NOW + timedelta(minutes=1)} | kw
    return verify_envelope(data, keyring=keyring, **args)  # type: ignore[arg-type]


def refused(data: bytes, keyring: Keyring, **kw: object) -> str:
    with pytest.raises(ManifestError) as exc:
        verify(data, keyring, **kw)
    return str(exc.value)


def rewrap(data: bytes, **fields: object) -> bytes:
    """The same envelope with some top-level fields replaced (as an attacker would)."""
    doc = json.loads(data)
    doc.update(fields)
    return json.dumps(doc).encode()


# --- building manifests ---------------------------------------------------------------


def test_new_manifest_binds_itself_to_its_job_key() -> None:
    m = make_manifest()
    assert m.job_id == "c-20261122-014501-3fa9-randread-4k-local-nvme-r0"
    assert m.key == layout.job_key(m.campaign_id, m.job_id, m.backend)
    assert m.key == f"jobs/by-backend/local-nvme/c-20261122-014501-3fa9/{m.job_id}.json"
    assert m.bucket == BUCKET
    assert (m.created_at, m.expires_at) == ("2026-11-22T01:45:01Z", "2026-11-22T02:45:01Z")
    assert m.job_file_sha256 == hashlib.sha256(JOB_FILE.encode()).hexdigest()


def test_job_id_is_sanitised_for_object_keys() -> None:
    m = new_manifest(
        campaign_id="c-1",
        backend="ceph-rbd.pool_2",
        profile="../etc/passwd",
        job_file_text="[x]\n",
        runtime_s=None,
        size_bytes=None,
        repetition=3,
        bucket="",
        expires_in=timedelta(minutes=5),
        now=NOW,
    )
    assert m.job_id == "c-1-etc_passwd-ceph-rbd.pool_2-r3"
    assert layout.check_id("job id", m.job_id) == m.job_id
    assert m.key == "jobs/by-backend/ceph-rbd.pool_2/c-1/c-1-etc_passwd-ceph-rbd.pool_2-r3.json"


def test_backend_names_must_be_safe_in_object_keys() -> None:
    with pytest.raises(ValueError, match="^invalid backend 'ceph rbd/pool' — use letters"):
        new_manifest(
            campaign_id="c-1",
            backend="ceph rbd/pool",
            profile="p",
            job_file_text="[x]\n",
            runtime_s=None,
            size_bytes=None,
            repetition=0,
            bucket="",
            expires_in=timedelta(minutes=5),
            now=NOW,
        )


def test_campaign_ids_are_key_safe_and_sort_by_time() -> None:
    a = new_campaign_id(NOW)
    b = new_campaign_id(NOW + timedelta(seconds=1))
    assert re.fullmatch(r"c-20261122-014501-[0-9a-f]{4}", a)
    assert layout.check_id("campaign id", a) == a
    assert sorted([b, a]) == [a, b]


def test_run_ids_are_key_safe_and_sort_by_time() -> None:
    a = new_run_id(NOW)
    b = new_run_id(NOW + timedelta(seconds=1))
    assert re.fullmatch(r"r-20261122T014501-[0-9a-f]{10}", a)
    assert layout.check_id("run id", a) == a
    assert sorted([b, a]) == [a, b]


def test_payload_is_canonical_and_byte_stable() -> None:
    m = make_manifest()
    payload = m.payload()
    assert payload == make_manifest().payload()
    assert payload.startswith(b'{"backend":"local-nvme","bucket":"fiolake","campaign_id":')
    assert b": " not in payload and b", " not in payload
    # Non-ASCII is raw UTF-8, not \u escapes, and survives the round trip.
    assert "ünïcode ✓".encode() in payload and b"\\u" not in payload
    assert Manifest(**json.loads(payload)) == m


def test_pae_matches_the_dsse_spec_example() -> None:
    assert (
        pae("http://example.com/HelloWorld", b"hello world")
        == b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )
    # Lengths count bytes, not characters.
    assert pae("t", "é".encode()) == b"DSSEv1 1 t 2 \xc3\xa9"


def test_envelope_layout(signer: LocalSigner) -> None:
    m = make_manifest()
    doc = json.loads(sign_manifest(m, signer))
    assert list(doc) == ["payload", "payloadType", "signatures"]
    assert doc["payloadType"] == PAYLOAD_TYPE
    assert base64.b64decode(doc["payload"]) == m.payload()
    assert [s["keyid"] for s in doc["signatures"]] == [signer.keyid]
    assert len(base64.b64decode(doc["signatures"][0]["sig"])) == 64


# --- verification ----------------------------------------------------------------------


def test_local_round_trip(signer: LocalSigner, keyring: Keyring) -> None:
    m = make_manifest()
    assert verify(sign_manifest(m, signer), keyring) == m


def test_local_lake_manifest_has_empty_bucket(signer: LocalSigner, keyring: Keyring) -> None:
    m = make_manifest(bucket="")
    assert verify(sign_manifest(m, signer), keyring, m) == m
    msg = refused(sign_manifest(m, signer), keyring, bucket="fiolake")
    assert msg == (
        f"bound to another place: manifest is for (local lake)/{m.key}, found at fiolake/{m.key}"
    )


def test_one_changed_payload_byte_is_a_bad_signature(signer: LocalSigner, keyring: Keyring) -> None:
    data = sign_manifest(make_manifest(), signer)
    payload = bytearray(make_manifest().payload())
    i = payload.index(b'"repetition":0') + len('"repetition":')
    payload[i] = ord("1")
    tampered = rewrap(data, payload=base64.b64encode(bytes(payload)).decode())
    assert refused(tampered, keyring) == f"bad signature (keyid {signer.keyid})"


def test_signature_by_another_key_is_unknown(tmp_path: Path, keyring: Keyring) -> None:
    other = LocalSigner.generate(tmp_path / "other.key")
    msg = refused(sign_manifest(make_manifest(), other), keyring)
    assert msg.startswith(f"unknown signing key {other.keyid} (trusted: local:")


def test_expired(signer: LocalSigner, keyring: Keyring) -> None:
    data = sign_manifest(make_manifest(), signer)
    assert refused(data, keyring, now=NOW + timedelta(hours=1)) == (
        "expired at 2026-11-22T02:45:01Z"
    )


def test_created_in_the_future(signer: LocalSigner, keyring: Keyring) -> None:
    data = sign_manifest(make_manifest(), signer)
    # A few minutes of clock skew are tolerated, more are not.
    assert verify(data, keyring, now=NOW - timedelta(minutes=4)) == make_manifest()
    assert refused(data, keyring, now=NOW - timedelta(minutes=10)) == (
        "not valid yet (created_at 2026-11-22T01:45:01Z in the future)"
    )


def test_copied_to_another_key_or_bucket(signer: LocalSigner, keyring: Keyring) -> None:
    m = make_manifest()
    data = sign_manifest(m, signer)
    elsewhere = layout.job_key(m.campaign_id, "c-other-job", m.backend)
    assert refused(data, keyring, key=elsewhere) == (
        f"bound to another place: manifest is for fiolake/{m.key}, found at fiolake/{elsewhere}"
    )
    assert refused(data, keyring, bucket="other-bucket").startswith(
        f"bound to another place: manifest is for fiolake/{m.key}, found at other-bucket/"
    )


def test_unsigned(signer: LocalSigner, keyring: Keyring) -> None:
    data = envelope_bytes(make_manifest().payload(), [])
    assert refused(data, keyring) == "unsigned manifest"


def test_signature_for_another_payload_type_does_not_replay(
    signer: LocalSigner, keyring: Keyring
) -> None:
    payload = make_manifest().payload()
    other_type = "application/vnd.fiolake.claim+json"
    sig = signer.sign(pae(other_type, payload))
    # Relabelled as a manifest: the PAE differs, so the signature does not match.
    relabelled = envelope_bytes(payload, [sig])
    assert refused(relabelled, keyring) == f"bad signature (keyid {signer.keyid})"
    # Kept under its own type: refused before any signature is looked at.
    honest = envelope_bytes(payload, [sig], payload_type=other_type)
    assert refused(honest, keyring).startswith(f"wrong payload type {other_type!r}")
    # A signature over the bare payload (no PAE) is not accepted either.
    bare = envelope_bytes(payload, [signer.sign(payload)])
    assert refused(bare, keyring) == f"bad signature (keyid {signer.keyid})"


def test_job_file_checksum_mismatch(signer: LocalSigner, keyring: Keyring) -> None:
    m = make_manifest(job_file_sha256="0" * 64)
    assert refused(sign_manifest(m, signer), keyring) == "job file checksum mismatch"


def test_unsupported_schema(signer: LocalSigner, keyring: Keyring) -> None:
    m = make_manifest(schema=2)
    assert refused(sign_manifest(m, signer), keyring) == "unsupported manifest schema 2"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"not json", "malformed envelope: not JSON"),
        (b"[]", "malformed envelope: not a JSON object"),
        (b'{"payloadType":"x","signatures":[]}', "malformed envelope: missing 'payload'"),
        (
            b'{"payloadType":"x","payload":"%%%","signatures":[]}',
            "malformed envelope: payload is not valid base64",
        ),
        (
            b'{"payloadType":"x","payload":"","signatures":[{"sig":"AA=="}]}',
            "malformed envelope: signature 0 has no keyid",
        ),
        (
            b'{"payload":"","payload":"","payloadType":"x","signatures":[]}',
            "malformed envelope: not JSON (duplicate key in JSON object)",
        ),
        (b" " * (1 << 20) + b"{}", "malformed envelope: 1048578 bytes is over"),
    ],
)
def test_malformed_envelopes(data: bytes, reason: str, keyring: Keyring) -> None:
    assert refused(data, keyring).startswith(reason)


def test_signed_payload_that_is_not_a_manifest(signer: LocalSigner, keyring: Keyring) -> None:
    payload = json.dumps({"schema": 1, "job_id": "x"}).encode()
    data = envelope_bytes(payload, [signer.sign(pae(PAYLOAD_TYPE, payload))])
    assert refused(data, keyring).startswith("malformed envelope: payload fields differ")


def test_any_trusted_valid_signature_is_enough(
    tmp_path: Path, signer: LocalSigner, keyring: Keyring
) -> None:
    m = make_manifest()
    message = pae(PAYLOAD_TYPE, m.payload())
    stranger = LocalSigner.generate(tmp_path / "stranger.key")
    data = envelope_bytes(m.payload(), [stranger.sign(message), signer.sign(message)])
    assert verify(data, keyring) == m
    # A bad signature by a trusted key is reported over an unknown one.
    forged = Signature(signer.keyid, stranger.sign(message).sig)
    data = envelope_bytes(m.payload(), [stranger.sign(message), forged])
    assert refused(data, keyring) == f"bad signature (keyid {signer.keyid})"


# --- with the real OpenBao ---------------------------------------------------------------


@pytest.mark.stack
def test_vault_round_trip_from_environment(stack, tmp_path: Path) -> None:  # noqa: ANN001
    publisher_env = {
        "FIOLAKE_SIGNER": "vault",
        "VAULT_ADDR": stack.vault_addr,
        "VAULT_TOKEN": stack.roles["publisher"].vault_token,
        "VAULT_CACERT": str(stack.vault_cacert or ""),
        "FIOLAKE_TRANSIT_KEY": stack.transit_key,
    }
    runner_env = publisher_env | {
        "VAULT_TOKEN": stack.roles["runner"].vault_token,
        "FIOLAKE_KEYRING": str(tmp_path / "keyring.json"),
    }
    m = make_manifest()
    data = sign_manifest(m, Settings.from_env(publisher_env).signer())
    keyid = json.loads(data)["signatures"][0]["keyid"]
    assert re.fullmatch(rf"vault:{stack.transit_key}:v\d+:[0-9a-f]{{16}}", keyid)

    ring = Settings.from_env(runner_env).keyring()
    assert ring.keyids() == []  # nothing cached yet: fetched on first sight of the key id
    assert verify(data, ring) == m
    sections = json.loads((tmp_path / "keyring.json").read_text())["sources"]
    assert [keyid in v["keys"] for v in sections.values()] == [True]

    # A fresh runner of the same trust source starts from the cache: no Vault read needed.
    offline = Settings.from_env(runner_env).keyring()
    assert offline.keyids() == [keyid]
    assert verify(data, offline) == m
    tampered = rewrap(data, payload=base64.b64encode(m.payload().replace(b"r0", b"r1")).decode())
    assert refused(tampered, offline) == f"bad signature (keyid {keyid})"


# --- gang jobs ------------------------------------------------------------------------


def test_gang_fields_are_signed_and_absent_from_solo_payloads(
    signer: LocalSigner, keyring: Keyring
) -> None:
    assert b"gang" not in make_manifest().payload()  # solo manifests keep their bytes
    gang = new_manifest(
        campaign_id="c-20261122-014501-3fa9",
        backend="nfs",
        profile="seq-write",
        job_file_text=JOB_FILE,
        runtime_s=2,
        size_bytes=None,
        repetition=0,
        bucket=BUCKET,
        expires_in=timedelta(hours=1),
        now=NOW,
        gang=4,
        gang_timeout_s=600,
    )
    assert gang.job_id.endswith("-r0-g4")  # gang sizes of one campaign never collide
    assert b'"gang":4' in gang.payload() and b'"gang_timeout_s":600' in gang.payload()
    got = verify(sign_manifest(gang, signer), keyring, gang)
    assert (got.gang, got.gang_timeout_s) == (4, 600)
    # The size is covered by the signature: a runner never runs a gang of another size.
    tampered = dataclasses.replace(gang, gang=1).payload()
    forged = rewrap(sign_manifest(gang, signer), payload=base64.b64encode(tampered).decode())
    assert refused(forged, keyring, bucket=gang.bucket, key=gang.key) == "bad signature (keyid " + (
        signer.keyid + ")"
    )


def test_gang_size_must_be_a_positive_integer(signer: LocalSigner, keyring: Keyring) -> None:
    m = make_manifest()
    doc = json.loads(m.payload()) | {"gang": 0}
    payload = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    sig = signer.sign(pae(PAYLOAD_TYPE, payload))
    assert refused(envelope_bytes(payload, [sig]), keyring) == (
        "malformed envelope: gang is not a positive integer"
    )


# -- job ids: one scheme (new_job_id) for published jobs and `fiolake run`
def test_a_published_job_id_names_its_job() -> None:
    assert new_job_id("c-1", "random reads", "nvme", 2) == "c-1-random_reads-nvme-r2"
    assert new_job_id("c-1", "seq", "nfs", 0, gang=4) == "c-1-seq-nfs-r0-g4"


def test_a_local_run_job_id_is_the_same_scheme_made_unique() -> None:
    # `fiolake run --campaign c-1` twice must not reuse a job id: commits are create-only.
    a, b = (new_job_id("c-1", "seq", "nvme", 0, unique=True) for _ in range(2))
    assert a != b
    assert re.fullmatch(r"c-1-seq-nvme-r0-[0-9a-f]{8}", a)


def test_a_long_campaign_id_gives_a_short_distinct_job_id() -> None:
    long_a, long_b = "c-" + "a" * 125 + "1", "c-" + "a" * 125 + "2"
    ids = {new_job_id(c, "random-reads", "x", 0) for c in (long_a, long_b)}
    assert len(ids) == 2
    for job_id in ids:
        assert len(job_id) <= 128 and layout.check_id("job id", job_id) == job_id
    assert new_job_id(long_a, "random-reads", "x", 0) in ids  # still deterministic
    # the repetition stays readable, so runners still take open jobs lowest first
    assert repetition_of(new_job_id(long_a, "random-reads", "x", 7)) == 7
    assert repetition_of(new_job_id(long_a, "random-reads", "x", 3, gang=4)) == 3


def test_sequence_is_signed_absent_when_unset_and_never_negative(
    signer: LocalSigner, keyring: Keyring
) -> None:
    assert b"sequence" not in make_manifest().payload()  # earlier manifests keep their bytes
    m = make_manifest(sequence=7)
    assert b'"sequence":7' in m.payload()
    assert verify(sign_manifest(m, signer), keyring, m).sequence == 7
    doc = json.loads(m.payload()) | {"sequence": -1}
    payload = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    sig = signer.sign(pae(PAYLOAD_TYPE, payload))
    assert refused(envelope_bytes(payload, [sig]), keyring) == (
        "malformed envelope: sequence is not a non-negative integer"
    )
    assert (repetition_of(m.job_id), repetition_of(f"{m.job_id}-g4"), repetition_of("j-1")) == (
        0,
        0,
        None,
    )
