"""Session fixtures shared by every test package.

`stack` starts one real MinIO (TLS) + OpenBao for the whole session on free loopback
ports, in a temporary state directory, and purges it at the end. Every test whose
fixtures reach it is marked `stack` at collection (not at fixture setup), so
`pytest -m "not stack"` (`make test-fast`) never starts MinIO or OpenBao and never needs Go.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from fiolake.stack.env import StackEnv
from fiolake.stack.local import stack_down, stack_up
from fiolake.stack.process import free_ports

# Session-end hygiene (issue 40): fails the run when it left faketime segments, loop
# devices, mounts, containers or processes behind. Keep this line when editing the file.
# versitygw, the second real S3 server, and `s3_server` (MinIO, then versitygw).
# fio_versions: fio releases built from ../shared/fio-src for the fio-version tier, in
# the background from the end of collection when that tier is selected.
# scheduling: how `make test`'s parallel workers share the groups (tests/scheduling.py).
# heavy: the tests over the fast tier's CPU budget, marked from tests/heavy.txt.
pytest_plugins = [
    "tests.hygiene",
    "tests.cpu_ledger",
    "tests.versitygw",
    "tests.fio_versions",
    "tests.scheduling",
    "tests.heavy",
]

# One DuckDB thread per lake connection, in this process and those its tests start, unless
# the caller set otherwise: the workers already use every core, and on lakes of a few runs
# DuckDB's own threads only add their start and hand-over (tests/aggregator/stats/
# test_compare.py: 8.4 → 7.2 s of CPU). The default (one per core) is what the benches,
# which never import this file, measure; a test checks FIOLAKE_DUCKDB_THREADS itself.
os.environ.setdefault("FIOLAKE_DUCKDB_THREADS", "1")

# Hypothesis's per-example deadline (200 ms) measures the machine, not the property: on two
# shared cores a DuckDB connection alone has taken longer (test_a_time_literal_is_that_instant
# failed so at load 5-7 and passed alone). The properties are what the tests assert; pytest's
# own timeout still bounds a test that hangs.
settings.register_profile("fiolake", deadline=None)
settings.load_profile("fiolake")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that needs the real stack, judged from its fixture closure."""
    for item in items:
        if "stack" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.stack)


@pytest.fixture(scope="session", autouse=True)
def _worker_host_lock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Module and session fixtures are set up before `_own_host_lock` below: they get one
    host lock per worker (FIOLAKE_HOST_LOCK), never the machine's default. On the default,
    a module's fio sweep on one worker held up another worker's fixture, whose `fiolake
    run` waited its turn until the 300 s timeout (the container login tier, 2026-11-27)."""
    lock = tmp_path_factory.mktemp("worker-hostlock") / "host.lock"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FIOLAKE_HOST_LOCK", str(lock))
        yield


@pytest.fixture(autouse=True)
def _own_host_lock(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test gets its own host lock (FIOLAKE_HOST_LOCK, inherited by the processes it
    starts): tests on parallel workers, and other fiolake work on this machine, do not
    queue behind each other; tests of the lock itself share one within the test."""
    lock = tmp_path_factory.mktemp("hostlock") / "host.lock"
    monkeypatch.setenv("FIOLAKE_HOST_LOCK", str(lock))


@pytest.fixture(autouse=True)
def _own_snapshot_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test keeps lake snapshots in its own directory (FIOLAKE_SNAPSHOT_CACHE,
    inherited by the processes it starts), never in the user's ~/.cache."""
    cache = tmp_path_factory.mktemp("snapshots")
    monkeypatch.setenv("FIOLAKE_SNAPSHOT_CACHE", str(cache))


@pytest.fixture(autouse=True)
def _own_probe_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Store-probe verdicts (FIOLAKE_PROBE_CACHE) go to this session's own file, never to
    the user's ~/.cache: one probe per store per session, not one per test."""
    cache = tmp_path_factory.getbasetemp() / "store-probe.json"
    monkeypatch.setenv("FIOLAKE_PROBE_CACHE", str(cache))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    return free_ports(1)[0]


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StackEnv]:
    """A running MinIO + OpenBao stack (builds the MinIO binary once if it is missing).

    Roles: stack.roles["runner"|"publisher"|"analyst"|"admin"] hold MinIO keys and an
    OpenBao token; stack.s3_settings(role) and stack.environ(role) configure clients.
    """
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


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local Spark session (Delta Lake enabled) for the whole test session.

    Skips, saying why, when Java or the `spark` extra is missing. The Delta jars come
    from Maven Central on first use (~174 MB, cached in ~/.ivy2.5.2).
    """
    import shutil

    from tests.spark_session import start_spark, stop_spark

    if shutil.which("java") is None:
        pytest.skip("Java is not installed: `make sysdeps` installs openjdk-17-jre-headless")
    try:
        session = start_spark("fiolake-tests")
    except ImportError:
        pytest.skip("pyspark/delta-spark missing: pip install -e '.[spark]' (make venv does)")
    try:
        yield session
    finally:
        stop_spark(session)
