"""Which job options the host's fio knows: `fio --cmdhelp` (all general options) and
`fio --enghelp=ENGINE` for the engines whose options the policy allows, asked once per
binary: kept in memory and in the build cache (`<cache>/fio-options/`, keyed by the
binary's path, size and mtime, so a fio upgraded in place is asked again) — four fio
starts cost over a second on a loaded host, on every command that checks a job.

The policy (runner.policy.hostfio) refuses an option this fio lacks by name and version,
before fio's own `--parse-only` would refuse it as a bare "Bad option"."""

from __future__ import annotations

import functools
import hashlib
import os
import re
import subprocess

from fiolake.atomic import write_atomic
from fiolake.config import Settings
from fiolake.errors import FioError, FiolakeError
from fiolake.runner.fio.binary import FIO_INSTALL_HINT, FioBinary, ask

CMDHELP_TIMEOUT_S = 30.0
# The allowed engines that have options of their own (the policy allows some of them).
ENGINES_WITH_OPTIONS = ("io_uring", "libaio", "pvsync2")
# `name : description`, indented by its category depth; option names are [a-z0-9_].
_OPTION_LINE = re.compile(r"^\s*([A-Za-z0-9_]+)\s*:")


def host_options(binary: FioBinary) -> frozenset[str]:
    """Every option name `binary --cmdhelp` lists, and the options of the engines in
    ENGINES_WITH_OPTIONS that this fio has (`--enghelp=ENGINE`)."""
    stat = os.stat(binary.path)
    return _options(binary.path, stat.st_size, stat.st_mtime_ns)


def knows_option(binary: FioBinary, name: str) -> bool:
    """Does `binary` accept option `name`? Listed (host_options), or an alias or a
    soft-deprecated option `fio --cmdhelp=NAME` still answers for (the full listing shows
    neither: fio 3.36 made allrandrepeat an alias of randrepeat)."""
    if name in host_options(binary):
        return True
    stat = os.stat(binary.path)
    return _answers(binary.path, stat.st_size, stat.st_mtime_ns, name)


@functools.lru_cache(maxsize=256)
def _answers(path: str, _size: int, _mtime_ns: int, name: str) -> bool:
    out = _run(path, f"--cmdhelp={name}")
    # fio answers an unknown name with "No such command" (and maybe the closest match)
    return out.returncode == 0 and "No such command" not in out.stdout + out.stderr


def parse_cmdhelp(text: str) -> frozenset[str]:
    """The option names of `fio --cmdhelp` output."""
    return frozenset(m.group(1) for line in text.splitlines() if (m := _OPTION_LINE.match(line)))


@functools.lru_cache(maxsize=8)
def _options(path: str, size: int, mtime_ns: int) -> frozenset[str]:
    key = hashlib.sha256(f"{path}\0{size}\0{mtime_ns}".encode()).hexdigest()[:32]
    cached = Settings.from_env().build_cache / "fio-options" / f"{key}.txt"
    try:
        return frozenset(cached.read_text().split())
    except OSError:
        pass
    names = _cmdhelp(path)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(cached, "".join(f"{n}\n" for n in sorted(names)).encode())
    except (OSError, FiolakeError):
        pass  # a read-only home (a confined runner): asked again next time
    return names


def _cmdhelp(path: str) -> frozenset[str]:
    names = _ask(path, "--cmdhelp")
    if not names:
        raise FioError(f"`{path} --cmdhelp` listed no options — {FIO_INSTALL_HINT}")
    for engine in ENGINES_WITH_OPTIONS:
        # an engine this fio was built without lists nothing: its options are then absent
        names |= _ask(path, f"--enghelp={engine}")
    return names


def _ask(path: str, flag: str) -> frozenset[str]:
    out = _run(path, flag)
    return parse_cmdhelp(out.stdout) if out.returncode == 0 else frozenset()


def _run(path: str, flag: str) -> subprocess.CompletedProcess[str]:
    return ask(path, flag, CMDHELP_TIMEOUT_S, env={"PATH": "/usr/bin:/bin"})
