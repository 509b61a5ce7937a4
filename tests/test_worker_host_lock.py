"""Module fixtures run before the per-test host lock is set (tests/conftest.py): they get
the worker's own lock, never the machine's default, which every worker would share (a
module's fio sweep on one worker held up another's fixture until its timeout)."""

from __future__ import annotations

import os

import pytest

from fiolake.runner.host.lock import DEFAULT_PATH


@pytest.fixture(scope="module")
def lock_seen_by_a_module_fixture() -> str | None:
    return os.environ.get("FIOLAKE_HOST_LOCK")


def test_a_module_fixture_gets_the_workers_lock_and_a_test_its_own(
    lock_seen_by_a_module_fixture: str | None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    base = str(tmp_path_factory.getbasetemp())
    module_lock = lock_seen_by_a_module_fixture
    assert module_lock is not None and module_lock != str(DEFAULT_PATH)
    assert module_lock.startswith(base)
    assert os.environ["FIOLAKE_HOST_LOCK"].startswith(base)
    assert os.environ["FIOLAKE_HOST_LOCK"] != module_lock
