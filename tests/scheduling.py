"""How `make test`'s parallel workers (pytest-xdist, `--dist loadgroup`) share the tests.

Whole groups per worker: the tests of one file go to one worker, so a module fixture (a
fio sweep, a lake, a browser on the app) is made once, and the container tier (one image
build, shared by its files) goes to one worker. xdist's own loadgroup reads `xdist_group`
marks into test ids, which pytest 9 no longer lets it rewrite (every test went its own
way), so the scheduler below groups by path instead, through xdist's own hook. The groups
known to take minutes start first, so they do not finish alone at the end.
"""

from __future__ import annotations

import pytest

# Folders whose files share one worker: the container tier's image build and the
# packaging tests both run `pip wheel` on this tree, whose in-tree build/ they would race
# for (a wheel vanished under images.sh when both ran at once).
_SHARED_GROUPS = {"tests/container/": "wheels", "tests/packaging/": "wheels"}
# Files whose tests each go their own way: the two fault histories (6-12 min each, a
# stack of their own per test) would otherwise run one after the other on one worker.
_SPLIT_FILES = ("tests/faults/test_history.py",)
_LONG_FIRST = (
    "tests/faults/test_history.py",
    "wheels",
    "tests/aggregator/lake/test_spark_s3.py",
    "tests/app/test_login_browser.py",
    "tests/faults/test_confined.py",
    "tests/aggregator/stats/test_saturation_fio.py",
    "tests/app/test_browser.py",
    "tests/aggregator/lake/test_spark.py",
    "tests/runner/distributed/test_protocol.py",
    "tests/test_bad_input.py",
    "tests/runner/test_fio_versions.py",
)


def _group_of(nodeid: str) -> str:
    """The group a test runs in: its file, a tier that shares one expensive setup, or the
    test alone (`_SPLIT_FILES`)."""
    path = nodeid.split("::", 1)[0]
    if path in _SPLIT_FILES:
        return nodeid
    return next((g for prefix, g in _SHARED_GROUPS.items() if path.startswith(prefix)), path)


def _rank(group: str) -> int:
    """Where a group starts: the long ones first (`_LONG_FIRST`), then the rest."""
    first = {g: i for i, g in enumerate(_LONG_FIRST)}
    return first.get(group, first.get(group.split("::", 1)[0], len(first)))


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """With `--dist loadgroup`: whole groups per worker (`_group_of`), long ones first."""
    if config.getvalue("dist") != "loadgroup":
        return None  # test-fast's worksteal, or no xdist
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        _ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return _group_of(nodeid)

        def _assign_work_unit(self, node: object) -> None:
            # The work queue is ordered here, once, before its first unit is handed out.
            # Not by sorting the workers' collections: a worker runs the tests it is sent
            # by their index in its own collection, so a reordered copy sent each group's
            # index to the wrong tests and scattered every group across the workers.
            if not self._ordered:
                self._ordered = True
                units = sorted(self.workqueue.items(), key=lambda unit: _rank(unit[0]))
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

    return GroupScheduling(config, log)  # type: ignore[arg-type]
