"""Job manifests: canonical JSON payload, DSSE envelope, signing and verification.

A manifest says which fio job to run where, until when, and the exact object key it is
meant to live at. Format, PAE and threat model: docs/manifests.md.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from fiolake import layout
from fiolake.errors import ManifestError
from fiolake.ids import new_job_id
from fiolake.signing import Keyring, KeyringUnavailable, Signature, Signer
from fiolake.timetext import iso_utc

MANIFEST_SCHEMA = 1
PAYLOAD_TYPE = "application/vnd.fiolake.manifest+json; version=1"
# Job files are a few KiB; anything near this is not a manifest we wrote.
MAX_ENVELOPE_BYTES = 1 << 20
# Publisher and runner clocks disagree a little; beyond this a created_at is "future".
CLOCK_SKEW = timedelta(minutes=5)

_STR_FIELDS = (
    "job_id",
    "campaign_id",
    "backend",
    "profile",
    "job_file",
    "job_file_sha256",
    "created_at",
    "expires_at",
    "bucket",
    "key",
)
_OPTIONAL_INT_FIELDS = ("runtime_s", "size_bytes")
# Fields a payload may leave out (then None); each is a string when present.
_OPTIONAL_STR_FIELDS = (
    "rerun_of",
    "expect_mount",
    "expect_fs",
    "precondition",
    "precondition_profile",
    "target",
)
# What `target` may say: the kind of target the job must run on (absent: a directory).
TARGETS = ("dir", "device")
# ... and those that are a positive integer when present (gang jobs, `publish --gang`).
_OPTIONAL_GANG_FIELDS = ("gang", "gang_timeout_s")
# ... and those that are a non-negative integer when present.
_OPTIONAL_COUNT_FIELDS = ("sequence",)
_OPTIONAL_FIELDS = _OPTIONAL_STR_FIELDS + _OPTIONAL_GANG_FIELDS + _OPTIONAL_COUNT_FIELDS


def _utc_text(t: datetime) -> str:
    if t.tzinfo is None:
        raise ValueError("use a timezone-aware datetime")
    return iso_utc(t, "seconds")


def parse_utc(text: str) -> datetime:
    """Parse the manifest time format `YYYY-MM-DDTHH:MM:SSZ` (strict: a signed field has
    one spelling, the one `fiolake.timetext.iso_utc` writes to the second)."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def _canonical(doc: Any) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def job_file_sha256(text: str) -> str:
    """Checksum of a job file as the manifest records it (sha256 of its UTF-8 bytes)."""
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Manifest:
    """One job to run: the fio job file, overrides, validity window and its bound place."""

    job_id: str
    campaign_id: str
    backend: str
    profile: str
    job_file: str
    job_file_sha256: str
    runtime_s: int | None
    size_bytes: int | None
    repetition: int
    created_at: str
    expires_at: str
    bucket: str
    key: str
    schema: int = MANIFEST_SCHEMA
    # The job id this job re-runs (`publish --rerun`); absent from the payload when None,
    # so manifests without it are byte-identical to those of earlier versions.
    rerun_of: str | None = None
    # Where the job must run (`publish --expect-mount/--expect-fs`): a runner whose target
    # is elsewhere leaves the job to another runner instead of measuring the wrong disk.
    expect_mount: str | None = None
    expect_fs: str | None = None
    # A gang job (`publish --gang N`): N runners of the backend run it together, started
    # at one instant by the store's clock (fiolake.gangs); absent for one-runner jobs.
    gang: int | None = None
    # Seconds the gang's runners have to show up before the job ends as failed.
    gang_timeout_s: int | None = None
    # Position of the job in its campaign's plan (`campaigns.plan_campaign`: repetitions
    # interleaved), recorded as runs.sequence; absent from manifests published before it.
    sequence: int | None = None
    # A job to run on the same files first (`publish --precondition`, runner.precondition):
    # its text (checked by the runner's policy like job_file) and its profile name.
    precondition: str | None = None
    precondition_profile: str | None = None
    # 'device': the job must run on a raw block device (`publish --target device`): only a
    # runner started with --device takes it, and a device runner takes no other job.
    # Absent (None) for a directory, so such manifests stay byte-identical to older ones.
    target: str | None = None

    @property
    def on_device(self) -> bool:
        """Whether the job must run on a raw block device."""
        return self.target == "device"

    def payload(self) -> bytes:
        """Canonical JSON (sorted keys, no whitespace, UTF-8): the bytes that get signed."""
        doc = dataclasses.asdict(self)
        for name in _OPTIONAL_FIELDS:
            if doc[name] is None:
                del doc[name]
        return _canonical(doc)

    def place(self) -> str:
        return _place(self.bucket, self.key)


def _place(bucket: str, key: str) -> str:
    return f"{bucket}/{key}" if bucket else f"(local lake)/{key}"


def new_manifest(
    *,
    campaign_id: str,
    backend: str,
    profile: str,
    job_file_text: str,
    runtime_s: int | None,
    size_bytes: int | None,
    repetition: int,
    bucket: str,
    expires_in: timedelta,
    now: datetime | None = None,
    rerun_of: str | None = None,
    expect_mount: str | None = None,
    expect_fs: str | None = None,
    gang: int | None = None,
    gang_timeout_s: int | None = None,
    sequence: int | None = None,
    precondition: tuple[str, str] | None = None,
    target: str = "dir",
) -> Manifest:
    """Build the manifest of one job (its id from `new_job_id`)."""
    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, not {target!r}")
    layout.check_id("campaign id", campaign_id)
    if expires_in <= timedelta(0):
        raise ValueError(f"expires_in must be positive, not {expires_in}")
    if gang is not None and gang < 1:
        raise ValueError(f"gang must be at least 1, not {gang}")
    now = now or datetime.now(UTC)
    job_id = new_job_id(campaign_id, profile, backend, repetition, gang=gang)
    return Manifest(
        job_id=job_id,
        campaign_id=campaign_id,
        backend=backend,
        profile=profile,
        job_file=job_file_text,
        job_file_sha256=job_file_sha256(job_file_text),
        runtime_s=runtime_s,
        size_bytes=size_bytes,
        repetition=repetition,
        created_at=_utc_text(now),
        expires_at=_utc_text(now + expires_in),
        bucket=bucket,
        key=layout.job_key(campaign_id, job_id, backend),
        rerun_of=rerun_of,
        expect_mount=expect_mount,
        expect_fs=expect_fs,
        gang=gang,
        gang_timeout_s=gang_timeout_s if gang is not None else None,
        sequence=sequence,
        precondition=precondition[1] if precondition else None,
        precondition_profile=precondition[0] if precondition else None,
        target=None if target == "dir" else target,
    )


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding: what a signature actually covers."""
    t = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


def envelope_bytes(
    payload: bytes, signatures: list[Signature], payload_type: str = PAYLOAD_TYPE
) -> bytes:
    """The DSSE envelope as canonical JSON: payloadType, base64 payload, signatures."""
    return _canonical(
        {
            "payloadType": payload_type,
            "payload": base64.b64encode(payload).decode(),
            "signatures": [{"keyid": s.keyid, "sig": s.sig} for s in signatures],
        }
    )


def sign_manifest(manifest: Manifest, signer: Signer) -> bytes:
    """Sign `manifest` and return the envelope bytes to PUT (create-only) at manifest.key."""
    payload = manifest.payload()
    return envelope_bytes(payload, [signer.sign(pae(PAYLOAD_TYPE, payload))])


def sign_manifests(manifests: Sequence[Manifest], signer: Signer) -> list[bytes]:
    """Envelope bytes for each manifest, signed in batches where the signer can."""
    payloads = [m.payload() for m in manifests]
    signatures = signer.sign_batch([pae(PAYLOAD_TYPE, p) for p in payloads])
    return [envelope_bytes(p, [sig]) for p, sig in zip(payloads, signatures, strict=True)]


def _malformed(why: str) -> ManifestError:
    return ManifestError(f"malformed envelope: {why}")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate key in JSON object")
    return dict(pairs)


def _b64(value: Any, what: str) -> bytes:
    if not isinstance(value, str):
        raise _malformed(f"{what} is not a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise _malformed(f"{what} is not valid base64") from None


def _read_envelope(data: bytes) -> tuple[str, bytes, list[tuple[str, bytes]]]:
    if len(data) > MAX_ENVELOPE_BYTES:
        raise _malformed(f"{len(data)} bytes is over the {MAX_ENVELOPE_BYTES}-byte limit")
    try:
        doc = json.loads(data.decode(), object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError) as exc:
        raise _malformed(f"not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise _malformed("not a JSON object")
    for field in ("payloadType", "payload", "signatures"):
        if field not in doc:
            raise _malformed(f"missing {field!r}")
    if not isinstance(doc["payloadType"], str):
        raise _malformed("payloadType is not a string")
    if not isinstance(doc["signatures"], list):
        raise _malformed("signatures is not a list")
    sigs = []
    for i, s in enumerate(doc["signatures"]):
        if not isinstance(s, dict) or not isinstance(s.get("keyid"), str):
            raise _malformed(f"signature {i} has no keyid")
        sigs.append((s["keyid"], _b64(s.get("sig"), f"signature {i}")))
    return doc["payloadType"], _b64(doc["payload"], "payload"), sigs


def _check_signatures(message: bytes, sigs: list[tuple[str, bytes]], keyring: Keyring) -> None:
    """Accept if any signature by a trusted key verifies; else raise the most telling failure."""
    unavailable: KeyringUnavailable | None = None
    bad: list[str] = []
    unknown: list[ManifestError] = []
    for keyid, sig in sigs:
        try:
            if keyring.verify(keyid, message, sig):
                return
            bad.append(keyid)
        except KeyringUnavailable as exc:
            unavailable = unavailable or exc
        except ManifestError as exc:
            unknown.append(exc)
    # A signature we could not check yet may still be good: that is a retry, not a refusal.
    if unavailable is not None:
        raise unavailable
    if bad:
        raise ManifestError(f"bad signature (keyid {bad[0]})")
    raise unknown[0]


def _manifest_from_payload(payload: bytes) -> Manifest:
    try:
        doc = json.loads(payload.decode(), object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError) as exc:
        raise _malformed(f"payload is not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise _malformed("payload is not a JSON object")
    schema = doc.get("schema")
    if schema != MANIFEST_SCHEMA:
        raise ManifestError(f"unsupported manifest schema {schema}")
    names = {f.name for f in dataclasses.fields(Manifest)}
    required = names - set(_OPTIONAL_FIELDS)
    if not required <= set(doc) <= names:
        missing, extra = sorted(required - set(doc)), sorted(set(doc) - names)
        raise _malformed(f"payload fields differ (missing {missing}, unexpected {extra})")
    for name in _OPTIONAL_STR_FIELDS:
        if name in doc and not isinstance(doc[name], str):
            raise _malformed(f"{name} is not a string")
    if doc.get("target", "dir") not in TARGETS:
        raise _malformed(f"target is not one of {', '.join(TARGETS)}")
    for name in _OPTIONAL_GANG_FIELDS:
        value = doc.get(name, 1)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise _malformed(f"{name} is not a positive integer")
    for name in _OPTIONAL_COUNT_FIELDS:
        value = doc.get(name, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise _malformed(f"{name} is not a non-negative integer")
    for name in _STR_FIELDS:
        if not isinstance(doc[name], str):
            raise _malformed(f"{name} is not a string")
    for name in _OPTIONAL_INT_FIELDS + ("repetition",):
        value = doc[name]
        if value is None and name != "repetition":
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise _malformed(f"{name} is not a non-negative integer")
    return Manifest(**doc)


def manifest_in_envelope(data: bytes) -> Manifest:
    """The manifest inside an envelope, its signature NOT checked: for a publisher
    re-publishing jobs it signs again (`publish --rerun`), never for running one."""
    payload_type, payload, _ = _read_envelope(data)
    if payload_type != PAYLOAD_TYPE:
        raise ManifestError(f"wrong payload type {payload_type!r}, expected {PAYLOAD_TYPE!r}")
    return _manifest_from_payload(payload)


def verify_envelope(
    data: bytes,
    *,
    keyring: Keyring,
    bucket: str,
    key: str,
    now: datetime | None = None,
) -> Manifest:
    """Check signature, place, checksum and validity window; return the manifest or raise.

    Raises ManifestError (refuse and record) or KeyringUnavailable (keys could not be
    fetched: retry later).
    """
    payload_type, payload, sigs = _read_envelope(data)
    if payload_type != PAYLOAD_TYPE:
        raise ManifestError(f"wrong payload type {payload_type!r}, expected {PAYLOAD_TYPE!r}")
    if not sigs:
        raise ManifestError("unsigned manifest")
    _check_signatures(pae(payload_type, payload), sigs, keyring)

    m = _manifest_from_payload(payload)
    try:
        # The first key layout had no backend in the key; its manifests stay valid there.
        own_keys = (
            layout.job_key(m.campaign_id, m.job_id, m.backend),
            layout.job_key(m.campaign_id, m.job_id),
        )
        own_key = own_keys[0]
    except ValueError as exc:
        raise _malformed(str(exc)) from None
    if m.key not in own_keys:
        raise _malformed(f"key {m.key!r} is not the job key of its ids ({own_key!r})")
    if (m.bucket, m.key) != (bucket, key):
        raise ManifestError(
            f"bound to another place: manifest is for {m.place()}, found at {_place(bucket, key)}"
        )
    if job_file_sha256(m.job_file) != m.job_file_sha256:
        raise ManifestError("job file checksum mismatch")

    try:
        created, expires = parse_utc(m.created_at), parse_utc(m.expires_at)
    except ValueError as exc:
        raise _malformed(f"bad timestamp ({exc})") from None
    now = now or datetime.now(UTC)
    if now >= expires:
        raise ManifestError(f"expired at {m.expires_at}")
    if created > now + CLOCK_SKEW:
        raise ManifestError(f"not valid yet (created_at {m.created_at} in the future)")
    return m
