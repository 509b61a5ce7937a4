"""Fixtures for runner protocol tests: a lake (local dir or the real MinIO), signing, runners."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fiolake.signing import LocalSigner, public_key_path
from tests.hygiene import remove_faketime_segments

NULL_JOB = """\
; no I/O at all: exercises the protocol, not the disk
[n]
ioengine=null
rw=randread
bs=4k
size=1M
"""
SLOW_JOB = """\
; runs long enough to be interrupted
[s]
ioengine=null
rw=read
bs=4k
size=1M
runtime={runtime}
time_based=1
rate_iops=100
"""


@dataclass
class LakeEnv:
    """Environments for publisher and runner processes against one lake."""

    kind: str
    publisher: dict[str, str]
    runner: dict[str, str]
    admin: dict[str, str]
    tmp: Path
    procs: list[subprocess.Popen] = field(default_factory=list)
    wrapped: list[subprocess.Popen] = field(default_factory=list)  # under `wrapper`

    def cli(self, role: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        env = {**os.environ, **getattr(self, role)}
        return subprocess.run(
            [sys.executable, "-m", "fiolake", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def publish(self, job_file: Path, *args: str) -> str:
        done = self.cli("publisher", "publish", str(job_file), *args)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def start_runner(
        self, name: str, backend: str, *args: str, wrapper: tuple[str, ...] = ()
    ) -> subprocess.Popen:
        """A runner process (under `wrapper`, e.g. faketime, when given)."""
        target = self.tmp / f"target-{name}"
        log = open(self.tmp / f"runner-{name}.log", "w")  # noqa: SIM115 - closed with the process
        # A runner killed mid-run leaves its output directory (runner.rundirs) in TMPDIR:
        # the lake's own, where the next runner sweeps it, not the machine's /tmp.
        (self.tmp / "tmp").mkdir(exist_ok=True)
        env = {**os.environ, **self.runner, "TMPDIR": str(self.tmp / "tmp")}
        proc = subprocess.Popen(
            [
                *wrapper,
                sys.executable,
                "-m",
                "fiolake",
                "runner",
                "--backend",
                backend,
                "--create-dir",
                "--dir",
                str(target),
                "--runner-id",
                name,
                "--spool-dir",
                str(self.tmp / f"spool-{name}"),
                *args,
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # stop_all ends what a wrapper started, too
        )
        self.procs.append(proc)
        if wrapper:
            self.wrapped.append(proc)
        return proc

    def runner_log(self, name: str) -> str:
        return (self.tmp / f"runner-{name}.log").read_text()

    def exit_code(self, proc: subprocess.Popen, timeout: float) -> int:
        """`proc`'s exit code; fails the test with every runner's log when it runs on
        (a member hung is often another's doing)."""
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            logs = "\n".join(
                f"--- {log.name} (last 4000 characters):\n{log.read_text()[-4000:]}"
                for log in sorted(self.tmp.glob("runner-*.log"))
            )
            pytest.fail(f"a runner still ran after {timeout:g} s (pid {proc.pid})\n{logs}")

    def stop_all(self) -> None:
        for proc in self.procs:
            # the whole group: a wrapper's (faketime's) runner too, and a stopped one
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGCONT)
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for proc in self.wrapped:  # a killed `faketime` leaves its segments (tests.hygiene)
            remove_faketime_segments(proc.pid)


def _local_signing(tmp: Path) -> tuple[dict[str, str], dict[str, str]]:
    key = tmp / "signing.key"
    LocalSigner.generate(key)
    publisher = {"FIOLAKE_SIGNER": "local", "FIOLAKE_SIGNING_KEY": str(key)}
    runner = {
        "FIOLAKE_TRUSTED_KEY": str(public_key_path(key)),
        "FIOLAKE_KEYRING": str(tmp / "keyring.json"),
    }
    return publisher, runner


@pytest.fixture
def local_lake(tmp_path: Path) -> Iterator[LakeEnv]:
    """A local directory lake signed with a local Ed25519 key."""
    publisher, runner = _local_signing(tmp_path)
    lake = {"FIOLAKE_LAKE": str(tmp_path / "lake")}
    env = LakeEnv("local", {**lake, **publisher}, {**lake, **runner}, lake, tmp_path)
    try:
        yield env
    finally:
        env.stop_all()


@pytest.fixture
def minio_lake(stack, tmp_path: Path) -> Iterator[LakeEnv]:
    """The real MinIO (TLS) lake under a fresh prefix, manifests signed by Vault transit."""
    prefix = f"t{time.monotonic_ns()}"

    def role(name: str) -> dict[str, str]:
        env = stack.environ(name)
        env["FIOLAKE_LAKE"] = f"{stack.lake}/{prefix}"
        env["FIOLAKE_KEYRING"] = str(tmp_path / f"keyring-{name}.json")
        env["FIOLAKE_PROBE_CACHE"] = "off"  # every runner start probes: the log shows each
        return env

    env = LakeEnv(
        "minio",
        {**role("publisher"), "FIOLAKE_SIGNER": "vault"},
        role("runner"),
        role("admin"),
        tmp_path,
    )
    try:
        yield env
    finally:
        env.stop_all()


@pytest.fixture
def versitygw_lake(versitygw, tmp_path: Path) -> Iterator[LakeEnv]:  # noqa: ANN001
    """A lake on versitygw (TLS), the second real S3 server, signed with a local key."""
    publisher, runner = _local_signing(tmp_path)
    lake = {**versitygw.environ(), "FIOLAKE_PROBE_CACHE": "off",
            "FIOLAKE_LAKE": f"s3://{versitygw.bucket}/t{time.monotonic_ns()}"}  # fmt: skip
    env = LakeEnv("versitygw", {**lake, **publisher}, {**lake, **runner}, lake, tmp_path)
    try:
        yield env
    finally:
        env.stop_all()


@pytest.fixture(
    params=[
        "local",
        pytest.param("minio", marks=pytest.mark.stack),
        pytest.param("versitygw", marks=pytest.mark.stack),
    ]
)
def lake_env(request: pytest.FixtureRequest) -> LakeEnv:
    """Every kind of lake: the protocol must behave the same on each."""
    lake: LakeEnv = request.getfixturevalue(f"{request.param}_lake")
    return lake


def sql(lake: Path, query: str) -> list[dict]:
    """Rows of `fiolake sql QUERY` on `lake`, as dicts."""
    import json

    from click.testing import CliRunner

    from fiolake.cli import cli

    result = CliRunner().invoke(cli, ["sql", query, "--lake", str(lake), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def wait_for(predicate, timeout: float, what: str, interval: float = 0.2):  # noqa: ANN001, ANN201
    """Poll until `predicate()` is truthy; fail naming `what` on timeout."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def lock_is_held(path: Path) -> bool:
    """Whether someone holds the host lock at `path`: one non-blocking try, let go at once
    (no waiter is left behind to take it later)."""
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
