"""Talking S3 with botocore: endpoint settings, the client, and S3 errors as fiolake's.

`fiolake.store.S3Store` is the lake's S3 back end; this module holds what it shares with
the code that must speak S3 directly (the stack's bucket set-up, tests): how a client is
built (TLS verified, path-style, plain PUTs) and how botocore's exceptions map to the
typed `fiolake.errors`.
"""

from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from fiolake.errors import (
    AccessDenied,
    ConfigError,
    NotFound,
    PreconditionFailed,
    StoreError,
    StoreFull,
    StoreUnavailable,
)

if TYPE_CHECKING:
    # botocore is imported where a client is made or its errors are read, not here: a
    # command on a local lake never needs it (0.2-0.8 s of `fiolake sql`, issue 44).
    import botocore.session


@dataclass(frozen=True)
class S3Settings:
    """How to reach an S3-compatible endpoint; TLS is mandatory."""

    endpoint: str
    ca_bundle: str | None = None
    access_key: str | None = None
    secret_key: str | None = None
    session_token: str | None = None  # temporary keys (an assumed role, SSO, a profile's)
    region: str = "us-east-1"
    # Path-style (https://host/bucket/key) suits MinIO, versitygw, Ceph and a bare IP;
    # AWS S3 and R2 also take virtual-hosted (https://bucket.host/key).
    virtual_hosted: bool = False

    def __post_init__(self) -> None:
        if not self.endpoint.startswith("https://"):
            raise ConfigError(
                f"refusing plain-text endpoint {self.endpoint!r}: use https:// "
                "(fiolake talks to object storage over TLS only)"
            )

    # The one place that says how each S3 client reaches the store: botocore
    # (`s3_client`), DuckDB's httpfs (`duckdb_secret`) and delta-rs' object_store
    # (`object_store_options`) get the same endpoint, region, addressing and keys.

    def duckdb_secret(self) -> dict[str, str]:
        """DuckDB httpfs `CREATE SECRET (TYPE s3, …)` parameters (values unquoted)."""
        secret = {
            "ENDPOINT": self.endpoint.removeprefix("https://").rstrip("/"),
            "URL_STYLE": "vhost" if self.virtual_hosted else "path",
            "USE_SSL": "true",
            "REGION": self.region,
        }
        if self.access_key:
            secret |= {"KEY_ID": self.access_key, "SECRET": self.secret_key or ""}
        if self.session_token:
            secret["SESSION_TOKEN"] = self.session_token
        return secret

    def object_store_options(self) -> dict[str, str]:
        """delta-rs / Rust object_store storage options (the CA goes separately:
        fiolake.aggregator.lake.delta).

        `AWS_CONDITIONAL_PUT=etag` makes Delta log commits create-only (If-None-Match),
        the same guarantee the store probe checks, with no DynamoDB lock.
        """
        options = {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": self.region,
            "AWS_ALLOW_HTTP": "false",
            "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "true" if self.virtual_hosted else "false",
            "AWS_CONDITIONAL_PUT": "etag",
        }
        if self.access_key:
            options["AWS_ACCESS_KEY_ID"] = self.access_key
            options["AWS_SECRET_ACCESS_KEY"] = self.secret_key or ""
        if self.session_token:
            options["AWS_SESSION_TOKEN"] = self.session_token
        return options


def profile_credentials(profile: str) -> tuple[str, str, str | None]:
    """(access key, secret key, session token) of the AWS profile `profile`, resolved by
    botocore as boto3 would (credentials and config files, assumed roles, SSO), so that
    DuckDB and delta-rs get the keys boto3 would use. ConfigError when there are none."""
    import botocore.session
    from botocore.exceptions import BotoCoreError

    fix = (
        "name a profile of ~/.aws/credentials or ~/.aws/config (AWS_SHARED_CREDENTIALS_FILE, "
        "AWS_CONFIG_FILE), or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
    )
    try:
        found = botocore.session.Session(profile=profile).get_credentials()
    except BotoCoreError as exc:
        raise ConfigError(f"AWS_PROFILE {profile}: {exc} — {fix}") from None
    if found is None:
        raise ConfigError(f"AWS_PROFILE {profile}: the profile holds no credentials — {fix}")
    frozen = found.get_frozen_credentials()
    return frozen.access_key, frozen.secret_key, frozen.token


def _fast_timestamp(value: str) -> datetime:
    """botocore's timestamp parser, minus its cost on ISO 8601 text.

    botocore parses every `LastModified` of a listing with dateutil, about 0.3 ms a
    key: listing 10,000 commit markers spent 3 of its 5 seconds there, in this
    process, not in the store. S3 writes those as ISO 8601, which the standard library
    parses directly; anything else (HTTP dates in headers) goes to botocore's parser.
    """
    try:
        parsed = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        from botocore.utils import parse_timestamp

        stamp: datetime = parse_timestamp(value)
        return stamp
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@functools.cache
def _botocore_session() -> botocore.session.Session:
    import botocore.session

    session = botocore.session.get_session()
    session.get_component("response_parser_factory").set_parser_defaults(
        timestamp_parser=_fast_timestamp
    )
    return session


def s3_client(settings: S3Settings, *, attempts: int = 4, timeout_s: float = 10.0) -> Any:
    """A boto3 S3 client for `settings` (path-style unless virtual-hosted is asked; TLS
    verified against the CA bundle) that sends each request at most `attempts` times.

    `attempts` counts the first try: botocore's own `max_attempts` counts retries only,
    so `max_attempts: 1` sends a request twice, and a conditional create whose answer was
    lost comes back 412 from its own first try."""
    from botocore.config import Config

    return _botocore_session().create_client(
        "s3",
        endpoint_url=settings.endpoint,
        aws_access_key_id=settings.access_key,
        aws_secret_access_key=settings.secret_key,
        aws_session_token=settings.session_token,
        region_name=settings.region,
        verify=settings.ca_bundle if settings.ca_bundle else True,
        config=Config(
            s3={"addressing_style": "virtual" if settings.virtual_hosted else "path"},
            retries={"total_max_attempts": attempts, "mode": "standard"},
            connect_timeout=timeout_s,
            read_timeout=timeout_s,
            signature_version="s3v4",
            # The default (when_supported) streams aws-chunked bodies with a trailing
            # checksum, and MinIO answers those with `Connection: close`: every PUT then
            # pays a new TLS handshake. Plain PUTs keep the connection alive.
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        ),
    )


# versitygw's POSIX back end removes the parent directories a DELETE leaves empty
# (backend/posix removeParents). A PUT that is creating, or linking its object into, one of
# them at that moment fails with 409 ExistingObjectIsDirectory having written nothing
# (backend/mkdir.go MkdirAll; the final link). The same PUT a moment later succeeds. A
# fiolake key never names a directory, so the code on a PUT means this race, unless it
# persists (then another key really has this one as its folder).
DIRECTORY_RACE = "ExistingObjectIsDirectory"
_DIRECTORY_RACE_PAUSES_S = (0.01, 0.03, 0.1, 0.3)


def error_code(exc: Exception) -> str:
    """The S3 error code botocore's ClientError carries ("" for any other exception)."""
    response = getattr(exc, "response", None)
    return str(response.get("Error", {}).get("Code", "")) if isinstance(response, dict) else ""


def put_object(client: Any, **request: Any) -> dict[str, Any]:
    """`client.put_object(**request)`, sent again while the store answers versitygw's
    directory race (DIRECTORY_RACE above: nothing was written, so a conditional create
    may be sent again safely); any other answer or error is the caller's."""
    for pause in (*_DIRECTORY_RACE_PAUSES_S, None):
        try:
            answer: dict[str, Any] = client.put_object(**request)
        except Exception as exc:
            if pause is None or error_code(exc) != DIRECTORY_RACE:
                raise
            time.sleep(pause)
            continue
        return answer
    raise AssertionError("unreachable: the last pass returns or raises")


# S3 error codes (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html)
# that no retry can fix, and those that a retry may.
_DENIED_CODES = frozenset(
    {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken",
     "InvalidToken", "AllAccessDisabled", "AccountProblem"}
)  # fmt: skip
# Credentials the store does not accept at all (as opposed to a policy that denies).
_WRONG_KEY_CODES = {
    "SignatureDoesNotMatch": "wrong secret key",
    "InvalidAccessKeyId": "unknown access key",
    "ExpiredToken": "expired session token",
}
_UNAVAILABLE_CODES = frozenset(
    {"InternalError", "ServiceUnavailable", "SlowDown", "RequestTimeout",
     "XMinioServerNotInitialized"}
)  # fmt: skip


# 507 Insufficient Storage: MinIO's drives are (over 99 %) full.
_FULL_CODES = frozenset({"XMinioStorageFull"})
# A write that ran out of room before MinIO's next look at its drives (about once a
# second) fails as 500 InternalError with the drive's ENOSPC in the message: "We
# encountered an internal error, please try again.: cause(no space left on device)".
_NO_SPACE = "no space left on device"


def s3_error(exc: Exception, key: str, *, url: str, endpoint: str, bucket: str) -> Exception:
    """The fiolake error for botocore's `exc` on `key` of the lake at `url` (in `bucket`)."""
    from botocore.exceptions import (
        ClientError,
        ConnectionClosedError,
        ConnectTimeoutError,
        EndpointConnectionError,
        NoCredentialsError,
        ReadTimeoutError,
        SSLError,
    )

    transport = (
        EndpointConnectionError,
        ConnectionClosedError,
        ConnectTimeoutError,
        ReadTimeoutError,
    )
    if isinstance(exc, SSLError) and "CERTIFICATE_VERIFY_FAILED" not in str(exc):
        # A TLS session cut mid-answer (EOF, reset): the network failed, not trust.
        return _unreachable(key, endpoint, exc)
    if isinstance(exc, SSLError):
        why = re.search(r"certificate verify failed: ([^(]+?)\s*\(", str(exc))
        return StoreError(
            f"TLS verification of {endpoint} failed "
            f"({why.group(1) if why else 'certificate verify failed'}) — point "
            "FIOLAKE_CA_BUNDLE at the CA that signed the server's certificate"
        )
    if isinstance(exc, ClientError):
        code = error_code(exc)
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in ("PreconditionFailed", "ConditionalRequestConflict") or status == 412:
            return PreconditionFailed(f"{key}: {code or status}")
        if code == "NoSuchBucket":
            return NotFound(
                f"bucket {bucket} does not exist at {endpoint} — "
                "check the lake URL (FIOLAKE_LAKE/--lake), or create the bucket"
            )
        if code in ("NoSuchKey", "404", "NotFound") or status == 404:
            return NotFound(f"{key} does not exist")
        if code in _WRONG_KEY_CODES:
            return AccessDenied(
                f"{endpoint} refused the credentials ({code}: "
                f"{_WRONG_KEY_CODES[code]}) — check AWS_ACCESS_KEY_ID and "
                'AWS_SECRET_ACCESS_KEY (for the local stack: eval "$(fiolake stack env)")'
            )
        if code in _DENIED_CODES or status == 403:
            return AccessDenied(
                f"access denied for {key} on {url} ({code or status}) — check the "
                "credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY), their policy, "
                f"and that bucket {bucket} exists"
            )
        if code == DIRECTORY_RACE:
            return StoreError(
                f"{key}: {endpoint} answered 409 {code} on every try — a folder stands "
                "where this object goes (another key has it as its prefix, which a "
                "file-system back end such as versitygw's POSIX one cannot hold); remove "
                "that key or point the lake at another prefix"
            )
        said = str(exc.response.get("Error", {}).get("Message", ""))
        if code in _FULL_CODES or status == 507 or _NO_SPACE in said.lower():
            answer = f"{code or status}: {said}" if _NO_SPACE in said.lower() else code or status
            return StoreFull(
                f"{key}: {endpoint} answered {status} ({answer}) — the object store "
                "is out of space: free space on its drives (or remove old runs with "
                "`fiolake lake prune`), then try again (runners keep their results and "
                "retry on their own)"
            )
        if code in _UNAVAILABLE_CODES or (status is not None and status >= 500):
            return StoreUnavailable(
                f"{key}: {endpoint} answered {status} ({code or status}) "
                "— the object store is down or overloaded: try again in a minute "
                "(runners wait and retry on their own)"
            )
        return StoreError(f"{key}: {code or status}: {exc}")
    if isinstance(exc, NoCredentialsError):
        return AccessDenied(
            f"no object-store credentials for {url} — set AWS_ACCESS_KEY_ID and "
            'AWS_SECRET_ACCESS_KEY (for the local stack: eval "$(fiolake stack env)")'
        )
    if isinstance(exc, transport):
        return _unreachable(key, endpoint, exc)
    return StoreError(f"{key}: {exc}")


def _unreachable(key: str, endpoint: str, exc: Exception) -> StoreUnavailable:
    return StoreUnavailable(
        f"{key}: cannot reach {endpoint}: {exc} — check that the object store runs there "
        "and FIOLAKE_S3_ENDPOINT names it (the local stack: `fiolake stack up`); "
        "runners wait and retry on their own"
    )
