"""Object storage for the lake: a local directory or an S3 bucket, one interface.

Both back ends honour create-only (`if_none_match`) and compare-and-swap
(`if_match`) writes, so the runner protocol works on a shared local directory
exactly as on MinIO.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import fcntl
import hashlib
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, Protocol

from fiolake.errors import NotFound, PreconditionFailed, StoreError, StoreFull
from fiolake.s3client import S3Settings, error_code, put_object, s3_client, s3_error
from fiolake.s3read import S3Reader, Unanswered, usable


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

    @property
    def url(self) -> str:
        """The lake's URL: a directory, or s3://bucket[/prefix]."""
        ...

    @property
    def settings(self) -> S3Settings | None:
        """How readers outside fiolake (DuckDB, delta-rs) reach it over S3; None when local."""
        ...

    def location(self, key: str) -> str:
        """Where a reader outside fiolake finds `key` (a path, or an s3:// URL)."""
        ...

    def delete(self, key: str) -> None:
        """Remove an object (gone already is fine). Only compaction deletes, and only its
        own superseded objects: results and commit markers are never deleted."""
        ...

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

    settings: S3Settings | None = None

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root).absolute()
        self.url = str(self.root)

    def location(self, key: str) -> str:
        """The file's path below the lake directory (spelled like `url`, unresolved)."""
        return f"{self.url.rstrip('/')}/{key}"

    def delete(self, key: str) -> None:
        """Unlink the object's file; StoreError when the file system refuses."""
        try:
            self._path(key).unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StoreError(f"cannot delete {key}: {exc}") from exc

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
        """Write `data` atomically; create-only or compare-and-swap when asked. A file
        system with no space left raises StoreFull, the key untouched."""
        try:
            return self._put(key, data, if_none_match=if_none_match, if_match=if_match)
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            raise StoreFull(
                f"{key}: no space left on the file system of {self.root} — free space there "
                "(or remove old runs with `fiolake lake prune`), then try again"
            ) from None

    def _put(self, key: str, data: bytes, *, if_none_match: bool, if_match: str | None) -> str:
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
        top = prefix.rstrip("/")
        base = self._path(top) if prefix.strip("/") else self.root
        if base.is_dir():
            yield from self._walk(str(base), f"{top}/" if top else "", prefix, start_after)

    def _walk(self, path: str, head: str, prefix: str, start_after: str | None) -> Iterator[str]:
        # Keys as strings, not pathlib (10 µs a key: 1 s per 100,000 entries listed), in S3's
        # order: a folder's entries sorted by key, a subfolder's as its name and "/".
        names = self._folder(path)
        if start_after is not None:
            names = names[_first_after(names, head, start_after) :]
        for name in names:
            key = head + name
            if name.endswith("/"):
                yield from self._walk(os.path.join(path, name[:-1]), key, prefix, start_after)
            elif key.startswith(prefix):
                yield key

    def _folder(self, path: str) -> Sequence[str]:
        """The entries of one directory as key parts, sorted: files by name (not hidden
        ones: temporary files and locks), subdirectories as "name/" (as `os.walk`: a link
        to a directory is not followed, an unreadable directory lists nothing)."""
        try:
            with os.scandir(path) as entries:
                return sorted(_key_parts(entries))
        except OSError:
            return ()  # e.g. removed while listed: as on S3, a listing proves nothing absent

    def server_time(self) -> datetime:
        """The store's clock: this machine's."""
        return datetime.now(UTC)

    def list_children(self, prefix: str) -> Iterator[str]:
        """Names of the immediate "directories" below `prefix` (which ends in '/'), sorted."""
        base = self._path(prefix.rstrip("/")) if prefix.strip("/") else self.root
        if base.is_dir():
            yield from sorted(p.name for p in base.iterdir() if p.is_dir())


def _key_parts(entries: Iterable[os.DirEntry[str]]) -> Iterator[str]:
    for e in entries:
        if not e.is_dir():
            if not e.name.startswith("."):
                yield e.name
        elif not e.is_symlink():
            yield f"{e.name}/"


def _first_after(names: Sequence[str], head: str, start_after: str) -> int:
    """Where the keys after `start_after` begin among a folder's sorted entries (`head` the
    folder's key prefix): as S3 seeks to StartAfter, every entry before is skipped unread,
    a subfolder included unless `start_after` lies inside it (the commit log's hours before
    the last compaction). Unless `start_after` lies inside the folder, its keys sort all
    before or all after it, as the folder's own prefix does."""
    if not start_after.startswith(head):
        return 0 if head > start_after else len(names)
    rest = start_after[len(head) :]
    at = bisect.bisect_right(names, rest)
    if at and names[at - 1].endswith("/") and rest.startswith(names[at - 1]):
        at -= 1  # the subfolder `start_after` lies in: some of its keys may follow
    return at


def _http_date(headers: dict[str, Any]) -> datetime:
    value = headers.get("date")
    return parsedate_to_datetime(value) if value else datetime.now(UTC)


class S3Store:
    """A lake in an S3 bucket (optionally below a prefix).

    Reads go first to `fiolake.s3read` (signed requests over the standard library); what
    it cannot answer plainly, and every write, goes to a botocore client made on first use,
    so a command that only reads never pays botocore's 0.3-0.5 s (see that module). A
    `client` given here is used for everything: the caller chose it (fewer attempts, a
    fault to inject)."""

    def __init__(self, bucket: str, prefix: str, settings: S3Settings, client: Any = None):
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.settings = settings
        self._client = client
        self.reader = S3Reader(settings, bucket) if client is None and usable(settings) else None
        self.url = f"s3://{bucket}/{self.prefix}".rstrip("/")

    @property
    def client(self) -> Any:
        """The botocore S3 client, made on first use."""
        if self._client is None:
            self._client = s3_client(self.settings)
        return self._client

    def location(self, key: str) -> str:
        """The object's s3:// URL."""
        return f"{self.url.rstrip('/')}/{key}"

    def delete(self, key: str) -> None:
        """DELETE the object (S3 answers success for a missing key too)."""
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self.prefix + key)
        except Exception as exc:  # noqa: BLE001 - mapped to our errors
            # versitygw's POSIX back end answers NoSuchKey to the loser of two DELETEs of
            # one key at once (the file went between its stat and its unlink): gone
            # either way, as S3 says of a missing key.
            if error_code(exc) != "NoSuchKey":
                raise self._error(exc, key) from exc

    def _error(self, exc: Exception, key: str) -> Exception:
        return s3_error(exc, key, url=self.url, endpoint=self.settings.endpoint, bucket=self.bucket)

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
            resp = put_object(
                self.client, Bucket=self.bucket, Key=self.prefix + key, Body=data, **kwargs
            )
        except Exception as exc:  # noqa: BLE001 - mapped to our errors
            raise self._error(exc, key) from exc
        etag: str = resp["ETag"].strip('"')
        return etag

    def get(self, key: str) -> tuple[bytes, ObjectInfo]:
        """Read an object; raises NotFound."""
        if self.reader is not None:
            with contextlib.suppress(Unanswered):
                data, etag, modified, date = self.reader.get(self.prefix + key)
                return data, ObjectInfo(key, etag, modified, date, len(data))
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
        if self.reader is not None:
            with contextlib.suppress(Unanswered):
                found = self.reader.head(self.prefix + key)
                return None if found is None else ObjectInfo(key, *found)
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
        if self.reader is not None:
            full_after = None if start_after is None else self.prefix + start_after
            try:
                for _, name in self.reader.list(self.prefix + prefix, start_after=full_after):
                    start_after = name[len(self.prefix) :]
                    yield start_after
                return
            except Unanswered:
                pass  # botocore lists on from the last key given
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
        if self.reader is not None:
            with contextlib.suppress(Unanswered):
                return self.reader.server_date()
        from botocore.exceptions import ClientError  # only here: local lakes never load it

        try:
            resp = self.client.head_bucket(Bucket=self.bucket)
        except ClientError as exc:
            resp = exc.response
        except Exception as exc:  # noqa: BLE001
            raise self._error(exc, self.bucket) from exc
        return _http_date(resp.get("ResponseMetadata", {}).get("HTTPHeaders", {}))

    def list_children(self, prefix: str) -> Iterator[str]:
        """Names of the immediate "directories" below `prefix` (one LIST per 1,000)."""
        start = len(self.prefix + prefix)
        given: set[str] = set()
        if self.reader is not None:
            try:
                for kind, name in self.reader.list(self.prefix + prefix, delimiter="/"):
                    if kind == "prefix":
                        given.add(name[start:].rstrip("/"))
                        yield name[start:].rstrip("/")
                return
            except Unanswered:
                pass  # botocore lists again; the names given already are not repeated
        paginator = self.client.get_paginator("list_objects_v2")
        try:
            pages = paginator.paginate(
                Bucket=self.bucket, Prefix=self.prefix + prefix, Delimiter="/"
            )
            for page in pages:
                for common in page.get("CommonPrefixes", []):
                    name = common["Prefix"][start:].rstrip("/")
                    if name not in given:
                        yield name
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
