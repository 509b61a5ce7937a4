"""Signed S3 reads (GET, HEAD, ListObjectsV2) over the standard library, without botocore.

Why by hand: every command that opens an S3 lake makes three or four small requests
(the generations, the record's ETag, the commit log since the last compaction) before
DuckDB reads a byte. Through botocore those cost its import and its client — loading
the S3 service model and endpoint rules — 0.3-0.5 s of a 2-core machine's CPU in every
process, more than the requests themselves (a `gate` of one night spent 0.51 s of its
1.5 s making the client; issue 44). No lighter well-kept S3 client fits: the minio and
requests-based ones import urllib3 (0.1 s) and bring their own error vocabulary, and
Rust object_store bindings take no CA bundle file. AWS Signature Version 4 is a short,
fully specified algorithm (the AWS "Signature Version 4 signing process" page); the test
checks it against botocore's own signer.

This module answers only the happy path. Every request it cannot answer plainly — a
status other than 2xx (or 404 on a HEAD), a network or TLS failure, a proxy to go
through, credentials not given as keys — raises `Unanswered`, and the store asks
botocore instead, which retries as configured and turns the failure into fiolake's
typed errors (`fiolake.s3client.s3_error`). So errors read exactly as before, and
writes never come here.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import os
import ssl
import threading
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from urllib.parse import quote, unquote_plus, urlsplit

from fiolake.s3client import S3Settings

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_S3_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
_PROXY_VARIABLES = ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")


class Unanswered(Exception):
    """This reader could not answer the request plainly: ask botocore."""


@dataclass(frozen=True)
class Answer:
    """One response: status, headers (lower-case names) and body."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def date(self, name: str) -> datetime:
        """A header holding an HTTP date (`Date`, `Last-Modified`), as an aware datetime."""
        value = self.headers.get(name)
        try:
            stamp = parsedate_to_datetime(value or "")
        except (TypeError, ValueError) as exc:
            raise Unanswered(f"{name} header {value!r}: {exc}") from exc
        return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)

    def size(self) -> int:
        """The Content-Length header."""
        value = self.headers.get("content-length", "")
        if not value.isdigit():
            raise Unanswered(f"content-length header {value!r}")
        return int(value)


def _uri_encode(text: str, *, slash: bool) -> str:
    # SigV4: every byte but A-Z a-z 0-9 - _ . ~ percent-encoded (and '/' in an S3 path).
    return quote(text, safe="/~" if slash else "~")


def _query_string(query: Mapping[str, str]) -> str:
    return "&".join(
        f"{_uri_encode(k, slash=False)}={_uri_encode(v, slash=False)}" for k, v in query.items()
    )


def signature_v4(
    settings: S3Settings,
    method: str,
    host: str,
    path: str,
    query: Mapping[str, str],
    when: datetime,
) -> dict[str, str]:
    """The headers that sign an empty-bodied S3 request with AWS Signature Version 4:
    `x-amz-date`, `x-amz-content-sha256`, `x-amz-security-token` (with a session token)
    and `Authorization`. `path` is already URI-encoded; `query` is not."""
    amz_date = when.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    headers = {"host": host, "x-amz-content-sha256": EMPTY_SHA256, "x-amz-date": amz_date}
    if settings.session_token:
        headers["x-amz-security-token"] = settings.session_token
    names = sorted(headers)
    canonical_query = _query_string(dict(sorted(query.items())))
    canonical = "\n".join(
        [
            method,
            path,
            canonical_query,
            "".join(f"{n}:{headers[n].strip()}\n" for n in names),
            ";".join(names),
            EMPTY_SHA256,
        ]
    )
    scope = f"{day}/{settings.region}/s3/aws4_request"
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    key = f"AWS4{settings.secret_key}".encode()
    for part in (day, settings.region, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={settings.access_key}/{scope}, "
        f"SignedHeaders={';'.join(names)}, Signature={signature}"
    )
    del headers["host"]  # http.client sends it from the connection
    return headers


def usable(settings: S3Settings) -> bool:
    """Whether this reader may serve `settings`: keys given, a plain https://host[:port]
    endpoint, and no proxy configured (botocore honours proxies; this reader does not)."""
    if not (settings.access_key and settings.secret_key):
        return False  # a profile, instance role or SSO: botocore's credential chain
    if any(os.environ.get(name) for name in _PROXY_VARIABLES):
        return False
    parts = urlsplit(settings.endpoint)
    return parts.scheme == "https" and parts.path in ("", "/") and not parts.query


class S3Reader:
    """Signed reads of one bucket; one keep-alive TLS connection per thread."""

    def __init__(
        self,
        settings: S3Settings,
        bucket: str,
        *,
        timeout_s: float = 10.0,
        page_size: int | None = None,  # keys a listing asks per page; the store's default
    ):
        self.settings, self.bucket, self.timeout_s = settings, bucket, timeout_s
        self.page_size = page_size
        # http.client leaves the default port out of Host; the signature must sign that Host
        netloc = urlsplit(settings.endpoint).netloc.removesuffix(":443")
        self.host = f"{bucket}.{netloc}" if settings.virtual_hosted else netloc
        self.base = "/" if settings.virtual_hosted else f"/{_uri_encode(bucket, slash=True)}/"
        self._context: ssl.SSLContext | None = None
        self._local = threading.local()

    def _connection(self) -> http.client.HTTPSConnection:
        conn: http.client.HTTPSConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._context is None:
                self._context = ssl.create_default_context(cafile=self.settings.ca_bundle)
            conn = http.client.HTTPSConnection(
                self.host, context=self._context, timeout=self.timeout_s
            )
            self._local.conn = conn
        return conn

    def _forget_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            conn.close()

    def target(self, key: str, query: Mapping[str, str]) -> tuple[str, str]:
        """The URI-encoded path of `key`, and that path with its query string."""
        path = self.base + _uri_encode(key, slash=True)
        if not query:
            return path, path
        return path, f"{path}?{_query_string(query)}"

    def request(self, method: str, key: str, query: Mapping[str, str] | None = None) -> Answer:
        """Send one signed request for `key` (bucket-relative; "" for the bucket) and read
        its whole answer. A kept-alive connection the server has since closed is opened
        again once; any other failure is `Unanswered`."""
        query = dict(query or {})
        path, target = self.target(key, query)
        for attempt in (1, 2):
            fresh = getattr(self._local, "conn", None) is None
            headers = signature_v4(self.settings, method, self.host, path, query, datetime.now(UTC))
            try:
                conn = self._connection()
                conn.request(method, target, headers=headers)
                response = conn.getresponse()
                body = response.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as exc:
                self._forget_connection()
                if fresh or attempt == 2:
                    raise Unanswered(str(exc)) from exc
                continue  # the server closed an idle kept-alive connection: once more
            except (OSError, http.client.HTTPException, ValueError) as exc:
                self._forget_connection()
                raise Unanswered(str(exc)) from exc
            if response.will_close:
                self._forget_connection()
            names = {name.lower(): value for name, value in response.getheaders()}
            return Answer(response.status, names, body)
        raise AssertionError("unreachable")  # pragma: no cover

    def get(self, key: str) -> tuple[bytes, str, datetime, datetime]:
        """An object's bytes, ETag (unquoted), Last-Modified and the server's Date."""
        answer = self._ok(self.request("GET", key))
        if "content-length" in answer.headers and answer.size() != len(answer.body):
            raise Unanswered(f"{key}: {len(answer.body)} of {answer.size()} bytes")
        return answer.body, _etag(answer), answer.date("last-modified"), answer.date("date")

    def head(self, key: str) -> tuple[str, datetime, datetime, int] | None:
        """An object's ETag, Last-Modified, the server's Date and size; None when the
        store answers 404."""
        answer = self.request("HEAD", key)
        if answer.status == 404:
            return None
        self._ok(answer)
        return _etag(answer), answer.date("last-modified"), answer.date("date"), answer.size()

    def server_date(self) -> datetime:
        """The `Date` of the store's answer to a HEAD of the bucket (any status has one)."""
        return self.request("HEAD", "").date("date")

    def list(
        self, prefix: str, *, start_after: str | None = None, delimiter: str | None = None
    ) -> Iterator[tuple[str, str]]:
        """ListObjectsV2 of `prefix`, every page: ("key", name) for each object, and
        ("prefix", name) for each common prefix when `delimiter` is given."""
        query = {"list-type": "2", "prefix": prefix, "encoding-type": "url"}
        if start_after is not None:
            query["start-after"] = start_after
        if delimiter is not None:
            query["delimiter"] = delimiter
        if self.page_size is not None:
            query["max-keys"] = str(self.page_size)
        while True:
            answer = self._ok(self.request("GET", "", query))
            try:
                root = ElementTree.fromstring(answer.body)
            except ElementTree.ParseError as exc:
                raise Unanswered(f"listing {prefix}: {exc}") from exc
            url_encoded = root.findtext(f"{_S3_NS}EncodingType") == "url"
            for element in root:
                if element.tag == f"{_S3_NS}Contents":
                    yield "key", _name(element.findtext(f"{_S3_NS}Key"), url_encoded)
                elif element.tag == f"{_S3_NS}CommonPrefixes":
                    yield "prefix", _name(element.findtext(f"{_S3_NS}Prefix"), url_encoded)
            token = root.findtext(f"{_S3_NS}NextContinuationToken")
            if root.findtext(f"{_S3_NS}IsTruncated") != "true":
                return
            if not token:
                raise Unanswered(f"listing {prefix}: truncated without a continuation token")
            query = {k: v for k, v in query.items() if k != "start-after"}
            query["continuation-token"] = token

    @staticmethod
    def _ok(answer: Answer) -> Answer:
        if not 200 <= answer.status < 300:
            raise Unanswered(f"HTTP {answer.status}")
        return answer


def _etag(answer: Answer) -> str:
    etag = answer.headers.get("etag")
    if not etag:
        raise Unanswered("no ETag header")
    return etag.strip('"')


def _name(text: str | None, url_encoded: bool) -> str:
    if text is None:
        raise Unanswered("a listing entry without a name")
    # botocore decodes url-encoded listings the same way (unquote_plus)
    return unquote_plus(text) if url_encoded else text
