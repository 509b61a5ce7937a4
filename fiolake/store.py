"""Object storage for the lake: a local directory or an S3 bucket, one interface.

Both back ends honour create-only (`if_none_match`) and compare-and-swap
(`if_match`) writes, so the runner protocol works on a shared local directory
exactly as on MinIO.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Protocol

import botocore.session
from botocore.config import Config
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
    SSLError,
)
from botocore.utils import parse_timestamp

from fiolake.errors import AccessDenied, NotFound, PreconditionFailed, StoreError, StoreUnavailable


@dataclass(frozen=True)
class ObjectInfo:
    """What a read or HEAD tells about an object; `server_time` is the store's clock."""

    key: str
    etag: str
    last_modified: datetime
    server_time: datetime
    size: int


class ObjectStore(Protocol):
    """The operations fiolake needs from a lake store."""

    url: str

    def put(
        self, key: str, data: bytes, *, if_none_match: bool = False, if_match: str | None = None
    ) -> str: ...

    def get(self, key: str) -> tuple[bytes, ObjectInfo]: ...

    def head(self, key: str) -> ObjectInfo | None: ...

    def list(self, prefix: str, *, start_after: str | None = None) -> Iterator[str]: ...

    def list_children(self, prefix: str) -> Iterator[str]: ...

    def server_time(self) -> datetime: ...


def _etag(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


class LocalStore:
    """A lake in a local directory; keys are relative paths below `root`."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root).absolute()
        self.url = str(self.root)

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if self.root.resolve() not in path.parents:
            raise StoreError(f"key {key!r} escapes the lake directory")
        return path

    @contextlib.contextmanager
    def _locked(self, path: Path) -> Iterator[None]:
        # Serialises If-Match writers of one key across processes on this machine.
        lock = path.with_name(f".{path.name}.lock")
        with open(lock, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def put(
        self, key: str, data: bytes, *, if_none_match: bool = False, if_match: str | None = None
    ) -> str:
        """Write `data` atomically; create-only or compare-and-swap when asked."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            if if_none_match:
                try:
                    os.link(tmp, path)  # atomic create-only: fails if the key exists
                except FileExistsError:
                    raise PreconditionFailed(f"{key} already exists") from None
            elif if_match is not None:
                with self._locked(path):
                    try:
                        current = _etag(path.read_bytes())
                    except FileNotFoundError:
                        raise NotFound(f"{key} does not exist") from None
                    if current != if_match:
                        raise PreconditionFailed(f"{key} changed (etag {current} != {if_match})")
                    os.replace(tmp, path)
            else:
                os.replace(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        return _etag(data)

    def _info(self, key: str, path: Path, data: bytes) -> ObjectInfo:
        mtime = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        return ObjectInfo(key, _etag(data), mtime, datetime.now(UTC), len(data))

    def get(self, key: str) -> tuple[bytes, ObjectInfo]:
        """Read an object; raises NotFound."""
        path = self._path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise NotFound(f"{key} does not exist") from None
        return data, self._info(key, path, data)

    def head(self, key: str) -> ObjectInfo | None:
        """Metadata of an object, or None when it does not exist."""
        try:
            return self.get(key)[1]
        except NotFound:
            return None

    def list(self, prefix: str, *, start_after: str | None = None) -> Iterator[str]:
        """Keys under `prefix` (after `start_after`, as S3's StartAfter); never proof of
        absence (HEAD for that)."""
        base = self._path(prefix.rstrip("/")) if prefix.strip("/") else self.root
        if not base.exists():
            return
        for dirpath, _dirs, files in os.walk(base):
            for name in sorted(files):
                if name.startswith("."):
                    continue
                rel = Path(dirpath, name).relative_to(self.root).as_posix()
                if rel.startswith(prefix) and (start_after is None or rel > start_after):
                    yield rel

    def server_time(self) -> datetime:
        """The store's clock: this machine's."""
        return datetime.now(UTC)

    def list_children(self, prefix: str) -> Iterator[str]:
        """Names of the immediate "directories" below `prefix` (which ends in '/'), sorted."""
        base = self._path(prefix.rstrip("/")) if prefix.strip("/") else self.root
        if base.is_dir():
            yield from sorted(p.name for p in base.iterdir() if p.is_dir())


@dataclass(frozen=True)
class S3Settings:
    """How to reach an S3-compatible endpoint; TLS is mandatory."""

    endpoint: str
    ca_bundle: str | None = None
    access_key: str | None = None
    secret_key: str | None = None
    region: str = "us-east-1"

    def __post_init__(self) -> None:
        if not self.endpoint.startswith("https://"):
            raise StoreError(
                f"refusing plain-text endpoint {self.endpoint!r}: use https:// "
                "(fiolake talks to object storage over TLS only)"
            )


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
        return parse_timestamp(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@functools.cache
def _botocore_session() -> botocore.session.Session:
    session = botocore.session.get_session()
    session.get_component("response_parser_factory").set_parser_defaults(
        timestamp_parser=_fast_timestamp
    )
    return session


def s3_client(settings: S3Settings, *, retries: int = 3, timeout_s: float = 10.0):  # noqa: ANN201
    """A boto3 S3 client for `settings` (path-style, TLS verified against the CA bundle)."""
    return _botocore_session().create_client(
        "s3",
        endpoint_url=settings.endpoint,
        aws_access_key_id=settings.access_key,
        aws_secret_access_key=settings.secret_key,
        region_name=settings.region,
        verify=settings.ca_bundle if settings.ca_bundle else True,
        config=Config(
            s3={"addressing_style": "path"},
            retries={"max_attempts": retries, "mode": "standard"},
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


# S3 error codes (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html)
# that no retry can fix, and those that a retry may.
_DENIED_CODES = frozenset(
    {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken",
     "InvalidToken", "AllAccessDisabled", "AccountProblem"}
)  # fmt: skip
_UNAVAILABLE_CODES = frozenset(
    {"InternalError", "ServiceUnavailable", "SlowDown", "RequestTimeout",
     "XMinioServerNotInitialized"}
)  # fmt: skip
_TRANSPORT_ERRORS = (
    EndpointConnectionError,
    ConnectionClosedError,
    ConnectTimeoutError,
    ReadTimeoutError,
)


def _http_date(headers: dict[str, str]) -> datetime:
    value = headers.get("date")
    return parsedate_to_datetime(value) if value else datetime.now(UTC)


class S3Store:
    """A lake in an S3 bucket (optionally below a prefix)."""

    def __init__(self, bucket: str, prefix: str, settings: S3Settings, client=None):  # noqa: ANN001
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.settings = settings
        self.client = client or s3_client(settings)
        self.url = f"s3://{bucket}/{self.prefix}".rstrip("/")

    def _error(self, exc: Exception, key: str) -> Exception:
        if isinstance(exc, SSLError) and "CERTIFICATE_VERIFY_FAILED" not in str(exc):
            # A TLS session cut mid-answer (EOF, reset): the network failed, not trust.
            return StoreUnavailable(f"{key}: cannot reach {self.settings.endpoint}: {exc}")
        if isinstance(exc, SSLError):
            return StoreError(
                f"TLS verification failed for {self.settings.endpoint}: {exc}. "
                "Point FIOLAKE_CA_BUNDLE at the CA that signed the server certificate."
            )
        if isinstance(exc, ClientError):
            code = exc.response.get("Error", {}).get("Code", "")
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code in ("PreconditionFailed", "ConditionalRequestConflict") or status == 412:
                return PreconditionFailed(f"{key}: {code or status}")
            if code in ("NoSuchKey", "404", "NotFound") or status == 404:
                return NotFound(f"{key} does not exist")
            if code in _DENIED_CODES or status == 403:
                return AccessDenied(
                    f"access denied for {key} on {self.url} ({code or status}) — check the "
                    "credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY) and their policy"
                )
            if code in _UNAVAILABLE_CODES or (status is not None and status >= 500):
                return StoreUnavailable(
                    f"{key}: {self.settings.endpoint} answered {code or status}"
                )
            return StoreError(f"{key}: {code or status}: {exc}")
        if isinstance(exc, NoCredentialsError):
            return AccessDenied(
                f"no object-store credentials for {self.url} — set AWS_ACCESS_KEY_ID and "
                'AWS_SECRET_ACCESS_KEY (for the local stack: eval "$(fiolake stack env)")'
            )
        if isinstance(exc, _TRANSPORT_ERRORS):
            return StoreUnavailable(f"{key}: cannot reach {self.settings.endpoint}: {exc}")
        return StoreError(f"{key}: {exc}")

    def put(
        self, key: str, data: bytes, *, if_none_match: bool = False, if_match: str | None = None
    ) -> str:
        """Write an object; create-only or compare-and-swap when asked."""
        kwargs: dict[str, str] = {}
        if if_none_match:
            kwargs["IfNoneMatch"] = "*"
        if if_match is not None:
            kwargs["IfMatch"] = f'"{if_match}"'
        try:
            resp = self.client.put_object(
                Bucket=self.bucket, Key=self.prefix + key, Body=data, **kwargs
            )
        except Exception as exc:  # noqa: BLE001 - mapped to our errors
            raise self._error(exc, key) from exc
        return resp["ETag"].strip('"')

    def get(self, key: str) -> tuple[bytes, ObjectInfo]:
        """Read an object; raises NotFound."""
        try:
            resp = self.client.get_object(Bucket=self.bucket, Key=self.prefix + key)
            data = resp["Body"].read()
        except Exception as exc:  # noqa: BLE001
            raise self._error(exc, key) from exc
        headers = resp["ResponseMetadata"].get("HTTPHeaders", {})
        info = ObjectInfo(
            key, resp["ETag"].strip('"'), resp["LastModified"], _http_date(headers), len(data)
        )
        return data, info

    def head(self, key: str) -> ObjectInfo | None:
        """Metadata of an object, or None when it does not exist."""
        try:
            resp = self.client.head_object(Bucket=self.bucket, Key=self.prefix + key)
        except Exception as exc:  # noqa: BLE001
            err = self._error(exc, key)
            if isinstance(err, NotFound):
                return None
            raise err from exc
        headers = resp["ResponseMetadata"].get("HTTPHeaders", {})
        return ObjectInfo(
            key,
            resp["ETag"].strip('"'),
            resp["LastModified"],
            _http_date(headers),
            resp["ContentLength"],
        )

    def list(self, prefix: str, *, start_after: str | None = None) -> Iterator[str]:
        """Keys under `prefix` (paginated; after `start_after` when given, which costs
        nothing for the keys skipped); never proof of absence."""
        paginator = self.client.get_paginator("list_objects_v2")
        args = {"Bucket": self.bucket, "Prefix": self.prefix + prefix}
        if start_after is not None:
            args["StartAfter"] = self.prefix + start_after
        try:
            for page in paginator.paginate(**args):
                for obj in page.get("Contents", []):
                    yield obj["Key"][len(self.prefix) :]
        except Exception as exc:  # noqa: BLE001
            raise self._error(exc, prefix) from exc

    def server_time(self) -> datetime:
        """The store's clock: the `Date` of its answer to a HEAD of the bucket (1 s
        resolution). Any answer has one, so roles without ListBucket get it from a 403."""
        try:
            resp = self.client.head_bucket(Bucket=self.bucket)
        except ClientError as exc:
            resp = exc.response
        except Exception as exc:  # noqa: BLE001
            raise self._error(exc, self.bucket) from exc
        return _http_date(resp.get("ResponseMetadata", {}).get("HTTPHeaders", {}))

    def list_children(self, prefix: str) -> Iterator[str]:
        """Names of the immediate "directories" below `prefix` (one LIST per 1,000)."""
        paginator = self.client.get_paginator("list_objects_v2")
        start = len(self.prefix + prefix)
        try:
            pages = paginator.paginate(
                Bucket=self.bucket, Prefix=self.prefix + prefix, Delimiter="/"
            )
            for page in pages:
                for common in page.get("CommonPrefixes", []):
                    yield common["Prefix"][start:].rstrip("/")
        except Exception as exc:  # noqa: BLE001
            raise self._error(exc, prefix) from exc


def open_store(lake: str, settings: S3Settings | None = None) -> ObjectStore:
    """The store behind a lake URL: `s3://bucket[/prefix]` or a local directory."""
    if lake.startswith("s3://"):
        if settings is None:
            raise StoreError(
                f"lake {lake} is on S3 but no endpoint is configured: set "
                'FIOLAKE_S3_ENDPOINT (run `eval "$(fiolake stack env)"` for the local stack)'
            )
        bucket, _, prefix = lake[len("s3://") :].partition("/")
        if not bucket:
            raise StoreError(f"lake URL {lake!r} names no bucket: use s3://BUCKET[/PREFIX]")
        return S3Store(bucket, prefix, settings)
    if "://" in lake:
        raise StoreError(f"unsupported lake URL {lake!r}: use a directory or s3://BUCKET/PREFIX")
    return LocalStore(lake)
