"""Session fixtures shared by every test package.

`stack` starts one real MinIO (TLS) + OpenBao for the whole session on free loopback
ports, in a temporary state directory, and purges it at the end. Tests that use it
are marked `@pytest.mark.stack`.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from fiolake.stack import StackEnv, stack_down, stack_up


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def free_ports(count: int) -> list[int]:
    """`count` distinct free ports (held open together so they differ)."""
    socks = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            socks.append(sock)
        return [s.getsockname()[1] for s in socks]
    finally:
        for sock in socks:
            sock.close()


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StackEnv]:
    """A running MinIO + OpenBao stack (builds the MinIO binary once if it is missing)."""
    state_dir = tmp_path_factory.mktemp("stack")
    minio_port, console_port, bao_port, bao_cluster_port = free_ports(4)
    try:
        yield stack_up(
            state_dir,
            minio_port=minio_port,
            console_port=console_port,
            bao_port=bao_port,
            bao_cluster_port=bao_cluster_port,
        )
    finally:
        stack_down(state_dir, purge=True)
