"""Which ports a local stack listens on: the defaults while free, else free ones."""

from __future__ import annotations

from fiolake.stack.process import free_ports, port_free

DEFAULT_PORTS = {
    "minio_port": 9900,
    "console_port": 9901,
    "bao_port": 8300,
    "bao_cluster_port": 8301,
}


def choose_ports(
    requested: dict[str, int | None], previous: dict, *, running: bool
) -> dict[str, int]:
    """The four ports to use: those asked for; else those of the stack already `running`
    in the state dir; else its `previous` ones or the defaults while free; else free
    ports, so a second stack on the same machine never collides with the first."""
    chosen: dict[str, int] = {}
    for key, default in DEFAULT_PORTS.items():
        asked = requested.get(key)
        if asked is not None:
            chosen[key] = asked
        elif running and previous.get(key):
            chosen[key] = previous[key]
        else:
            for candidate in (previous.get(key), default):
                if candidate and candidate not in chosen.values() and port_free(candidate):
                    chosen[key] = candidate
                    break
    missing = [key for key in DEFAULT_PORTS if key not in chosen]
    spare = [p for p in free_ports(len(missing) + 4) if p not in chosen.values()]
    chosen.update(zip(missing, spare, strict=False))
    return chosen
