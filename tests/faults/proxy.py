"""Small proxies in front of MinIO: one drops or delays responses on command
(`FaultyProxy`), one answers 503 on command (`UnavailableProxy`).

TLS passes through untouched (the proxy sees only ciphertext; MinIO's certificate names
127.0.0.1, which is where the proxy listens too). Faults act on the server-to-client
direction only, so a request reaches MinIO and its answer is what gets lost or late:
the ambiguous outcome a client must settle by reading back.
"""

from __future__ import annotations

import random
import socket
import ssl
import threading
import time
from pathlib import Path

from fiolake.stack.bootstrap_tls import ensure_bootstrap_tls

CHUNK = 65536


class FaultyProxy:
    """Forward 127.0.0.1:<port> to `upstream_port`; `mode` is pass | drop | delay."""

    def __init__(self, upstream_port: int, *, drop_p: float = 0.3, delay_s: tuple = (0.5, 3.0)):
        self.upstream = ("127.0.0.1", upstream_port)
        self.mode = "pass"
        self.drop_p = drop_p
        self.delay_s = delay_s
        self.dropped = 0
        self.delayed = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._closed = threading.Event()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True, name="proxy-accept").start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            server = socket.create_connection(self.upstream, timeout=5)
        except OSError:
            client.close()  # MinIO down: the client sees a refused/closed connection
            return
        server.settimeout(None)
        threading.Thread(target=self._pump, args=(client, server, False), daemon=True).start()
        self._pump(server, client, True)

    def _pump(self, src: socket.socket, dst: socket.socket, response: bool) -> None:
        try:
            while True:
                data = src.recv(CHUNK)
                if not data:
                    break
                if response and self.mode == "drop" and random.random() < self.drop_p:
                    with self._lock:
                        self.dropped += 1
                    break  # the answer is lost: close both ends
                if response and self.mode == "delay":
                    with self._lock:
                        self.delayed += 1
                    time.sleep(random.uniform(*self.delay_s))
                dst.sendall(data)
        except OSError:
            pass
        finally:
            _close_both(src, dst)

    def close(self) -> None:
        """Stop accepting (open connections end with their peers)."""
        self._closed.set()
        self._listener.close()


SERVICE_UNAVAILABLE = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>ServiceUnavailable</Code>'
    b"<Message>Please reduce your request rate.</Message></Error>"
)


class UnavailableProxy:
    """HTTPS in front of MinIO that answers every request `503 ServiceUnavailable` while
    `unavailable` is set, and forwards otherwise.

    The mode is taken per connection, when it is accepted. A refused connection is TLS
    terminated here (an HTTP status cannot be forged inside MinIO's own TLS: clients
    must trust this proxy's CA, `ca`, as well as MinIO's) and closed after its 503, so a
    client's next try opens a new one and meets whatever the mode is then. Any other
    connection is passed through untouched, as `FaultyProxy` does, and the client's TLS
    is MinIO's own. It used to be terminated here too and re-encrypted towards MinIO,
    one SSL socket read and written from two threads; after the 503s, handshakes and
    requests through it stalled ~10 s at a time (test_minio_answering_503_for_a_minute,
    2026-11-27: a 51 s store probe; 1.1 s with the pass-through).
    """

    def __init__(self, upstream_port: int, tls_dir: Path):
        self.ca, cert, key = ensure_bootstrap_tls(tls_dir, ["127.0.0.1"])
        self._server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._server.load_cert_chain(cert, key)
        self.upstream = ("127.0.0.1", upstream_port)
        self.unavailable = threading.Event()
        self.refused = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True, name="503-proxy").start()

    @property
    def endpoint(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                raw, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        if not self.unavailable.is_set():
            try:
                upstream = socket.create_connection(self.upstream, timeout=10)
            except OSError:
                raw.close()
                return
            upstream.settimeout(None)
            threading.Thread(target=_pump, args=(raw, upstream), daemon=True).start()
            _pump(upstream, raw)
            return
        try:
            raw.settimeout(10)
            client = self._server.wrap_socket(raw, server_side=True)
        except OSError:
            raw.close()
            return
        self._refuse(client)

    def _refuse(self, client: ssl.SSLSocket) -> None:
        try:
            head = b""
            while b"\r\n\r\n" not in head and len(head) < CHUNK:
                data = client.recv(CHUNK)
                if not data:
                    return
                head += data
            client.sendall(
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/xml\r\n"
                b"Retry-After: 1\r\nConnection: close\r\n"
                + b"Content-Length: %d\r\n\r\n" % len(SERVICE_UNAVAILABLE)
                + SERVICE_UNAVAILABLE
            )
            with self._lock:
                self.refused += 1
        except OSError:
            pass
        finally:
            client.close()

    def close(self) -> None:
        self._listener.close()


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(CHUNK):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        _close_both(src, dst)


def _close_both(*socks: socket.socket) -> None:
    """End a proxied connection: both sides, whatever state either is in."""
    for sock in socks:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()
