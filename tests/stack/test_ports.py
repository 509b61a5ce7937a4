"""`stack up` without port options never collides with another stack on the machine."""

from __future__ import annotations

import socket
from pathlib import Path

from fiolake.stack.local import resolve_ports
from fiolake.stack.ports import DEFAULT_PORTS
from fiolake.stack.process import port_free, write_private_json

NONE_ASKED = dict.fromkeys(DEFAULT_PORTS)


def test_taken_defaults_are_replaced_by_free_ports(tmp_path: Path) -> None:
    held = []
    try:
        for port in DEFAULT_PORTS.values():
            sock = socket.socket()
            try:
                sock.bind(("127.0.0.1", port))
                sock.listen()
                held.append(sock)
            except OSError:
                sock.close()  # already taken by something else: just as good for this test
        ours = {sock.getsockname()[1] for sock in held}
        chosen = resolve_ports(tmp_path / "state", NONE_ASKED)
        # The defaults this test could not hold: another stack on this machine has them
        # (a second stack is what this is for); those it still holds must be avoided too.
        theirs = {p for p in DEFAULT_PORTS.values() if p not in ours and not port_free(p)}
    finally:
        for sock in held:
            sock.close()
    assert set(chosen) == set(DEFAULT_PORTS)
    assert len(set(chosen.values())) == 4
    # Only ports held until now are sure to be taken: one that another stack held a moment
    # ago may have been free when the ports were resolved.
    assert ours | theirs, "every default port was free again: nothing was tested"
    assert not set(chosen.values()) & (ours | theirs)


def test_asked_ports_are_kept_and_free_previous_ones_reused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    with socket.socket() as a, socket.socket() as b:
        a.bind(("127.0.0.1", 0))
        b.bind(("127.0.0.1", 0))
        previous = {"minio_port": a.getsockname()[1], "bao_port": b.getsockname()[1]}
    write_private_json(state / "stack.json", previous)
    chosen = resolve_ports(state, {**NONE_ASKED, "console_port": 45999})
    assert chosen["console_port"] == 45999
    if port_free(previous["minio_port"]) and port_free(previous["bao_port"]):
        assert chosen["minio_port"] == previous["minio_port"]
        assert chosen["bao_port"] == previous["bao_port"]
