"""A small TCP proxy in front of MinIO that drops or delays responses on command.

TLS passes through untouched (the proxy sees only ciphertext; MinIO's certificate names
127.0.0.1, which is where the proxy listens too). Faults act on the server-to-client
direction only, so a request reaches MinIO and its answer is what gets lost or late:
the ambiguous outcome a client must settle by reading back.
"""

from __future__ import annotations

import random
import socket
import threading
import time

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
            for sock in (src, dst):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()

    def close(self) -> None:
        """Stop accepting (open connections end with their peers)."""
        self._closed.set()
        self._listener.close()
