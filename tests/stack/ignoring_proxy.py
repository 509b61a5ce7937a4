"""A header-ignoring S3 store for tests: a TLS pass-through proxy in front of the test
MinIO that drops `If-None-Match` and `If-Match` from every request (or, with `cut`, a
store whose answers to some PUTs are lost on the way back: a dropped connection).

That is what Google Cloud Storage's S3 API, Garage 2.0 and Ceph's dbstore do (200 and an
overwrite); none of them runs here, so this proxy plays them. SigV4 signs those headers,
so the proxy signs each request again (botocore's S3SigV4Auth) with the secret of the
access key the client used; it serves MinIO's own certificate (its SAN is 127.0.0.1).
"""

from __future__ import annotations

import re
import ssl
import threading
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from fiolake.stack.env import StackEnv

DROPPED = frozenset({"if-none-match", "if-match"})
# Re-made by the signer or by requests itself.
_RESIGNED = {"authorization", "x-amz-date", "x-amz-content-sha256", "host", "content-length",
             "connection", "accept-encoding"}  # fmt: skip
_HOP = {"connection", "transfer-encoding", "content-length", "keep-alive"}


@dataclass(frozen=True)
class Misbehaviour:
    """What the proxy does wrong: drop the headers in `drop` (lower case) from requests
    whose path holds `where`; answer `refuse` (e.g. 501) to every conditional PUT instead
    of forwarding it; answer `refuse_if_match` (e.g. 412) to every PUT with If-Match, even
    the current ETag (a store whose ETags do not round-trip); hang up without an answer on
    PUTs whose path holds `cut` (after forwarding them: the write lands) or `lose` (before:
    the write never reaches the store, as while it restarts)."""

    drop: frozenset[str] = DROPPED
    where: str = ""
    refuse: int = 0
    refuse_if_match: int = 0
    cut: str = ""
    lose: str = ""


_REFUSAL = (
    '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NotImplemented</Code><Message>'
    "A header you provided implies functionality that is not implemented</Message></Error>"
)

_FAILED = (
    '<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code><Message>'
    "At least one of the pre-conditions you specified did not hold</Message></Error>"
)


def _handler(
    upstream: str, ca: str, secrets: dict[str, str], region: str, how: Misbehaviour,
    seen: list[str],
) -> type:  # fmt: skip
    session = requests.Session()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass  # quiet: pytest shows the test's own output

        def _forward(self) -> None:
            seen.append(f"{self.command} {self.path}")
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            auth = self.headers.get("Authorization", "")
            found = re.search(r"Credential=([^/]+)/", auth)
            key = found.group(1) if found else ""
            if how.lose and self.command == "PUT" and how.lose in self.path:
                self.close_connection = True  # never forwarded: the store did not see it
                return
            conditional = any(k.lower() in DROPPED for k in self.headers)
            if how.refuse and conditional and self.command == "PUT":
                self._answer(how.refuse, _REFUSAL.encode(), {"Content-Type": "application/xml"})
                return
            if how.refuse_if_match and "If-Match" in self.headers and self.command == "PUT":
                self._answer(how.refuse_if_match, _FAILED.encode(),
                             {"Content-Type": "application/xml"})  # fmt: skip
                return
            drop = how.drop if how.where in self.path else frozenset()
            headers = {k: v for k, v in self.headers.items()
                       if k.lower() not in drop | _RESIGNED}  # fmt: skip
            request = AWSRequest(self.command, upstream + self.path, headers=headers, data=body)
            if key in secrets:
                S3SigV4Auth(Credentials(key, secrets[key]), "s3", region).add_auth(request)
            prepared = request.prepare()
            resp = session.request(self.command, prepared.url, headers=dict(prepared.headers),
                                   data=body, verify=ca, stream=True)  # fmt: skip
            data = resp.raw.read(decode_content=False)
            if how.cut and self.command == "PUT" and how.cut in self.path:
                self.close_connection = True  # the write landed; its answer is lost
                return
            self._answer(resp.status_code, data, resp.headers)

        def _answer(self, status: int, data: bytes, headers: Mapping[str, str]) -> None:
            self.send_response(status)
            for name, value in headers.items():
                if name.lower() not in _HOP:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    return Handler


@contextmanager
def ignoring_proxy(
    upstream: str, ca: Path, cert: Path, key: Path, secrets: dict[str, str],
    how: Misbehaviour = Misbehaviour(), region: str = "us-east-1",
    seen: list[str] | None = None,
) -> Iterator[str]:  # fmt: skip
    """Serve the proxy on a free 127.0.0.1 port, misbehaving as `how` says (default: drop
    both headers from every request); yields its https:// endpoint. Each request that
    reaches the proxy is appended to `seen` as "METHOD /path?query"."""
    handler = _handler(upstream, str(ca), secrets, region, how, [] if seen is None else seen)
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(str(cert), str(key))
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def in_front_of(
    stack: StackEnv, how: Misbehaviour = Misbehaviour(), seen: list[str] | None = None
) -> AbstractContextManager[str]:
    """`ignoring_proxy` in front of `stack`'s MinIO, with its certificate and every role's
    keys (the proxy signs again with the secret of the key a client used)."""
    certs = stack.state_dir / "minio-certs"
    keys = {creds.access_key: creds.secret_key for creds in stack.roles.values()}
    return ignoring_proxy(stack.endpoint, stack.ca_bundle, certs / "public.crt",
                          certs / "private.key", keys, how, seen=seen)  # fmt: skip
