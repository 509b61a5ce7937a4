"""`make test`'s parallel scheduler (tests/scheduling.py) in a real pytest-xdist session:
each group's tests run on one worker, the shared tiers on one worker between them, the
split file's tests each go their own way, and the long groups are handed out first.

A pytester session on three workers, with files named as the groups are; every test
writes which worker ran it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

RECORD = """
import json, os, pathlib

def record(request):
    line = json.dumps([request.node.nodeid, os.environ["PYTEST_XDIST_WORKER"]])
    with open(os.environ["RAN_ON"], "a") as f:
        f.write(line + "\\n")
"""


def _tests(names: list[str], *, param: bool = False) -> str:
    head = "import pytest, time\nfrom conftest import record\n"
    if param:
        return head + (
            '@pytest.mark.parametrize("server", ["minio", "versitygw"])\n'
            "def test_history(request, server):\n"
            "    record(request)\n"
            "    time.sleep(1)\n"
        )
    return head + "".join(f"def test_{n}(request):\n    record(request)\n" for n in names)


def test_groups_stay_on_one_worker_and_long_ones_start_first(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran_on = tmp_path / "ran-on.jsonl"
    monkeypatch.setenv("RAN_ON", str(ran_on))
    pytester.makeconftest(RECORD)
    files = {
        "tests/faults/test_history.py": _tests([], param=True),
        "tests/container/test_ct.py": _tests(["a", "b", "c"]),
        "tests/packaging/test_pk.py": _tests(["a", "b", "c"]),
        # A long group (in _LONG_FIRST) after a plain file: xdist's own order would put
        # the plain file's many tests first.
        "tests/test_plain.py": _tests([f"p{i}" for i in range(8)]),
        "tests/test_bad_input.py": _tests(["a", "b", "c", "d"]),
    }
    for name, text in files.items():
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    result = pytester.runpytest(
        "-p", "tests.scheduling", "-p", "no:cacheprovider", "-n", "3", "--dist", "loadgroup"
    )  # fmt: skip
    result.assert_outcomes(passed=20)
    runs = [json.loads(line) for line in ran_on.read_text().splitlines()]
    worker = dict(runs)

    def workers(prefix: str) -> set[str]:
        return {w for nodeid, w in runs if nodeid.startswith(prefix)}

    assert len(workers("tests/test_plain.py")) == 1
    assert len(workers("tests/test_bad_input.py")) == 1
    assert len(workers("tests/container/") | workers("tests/packaging/")) == 1  # "wheels"
    history = [n for n, _ in runs if n.startswith("tests/faults/")]
    # The two histories were the first two units: two workers, both before any other
    # group's test started on theirs.
    assert len({worker[n] for n in history}) == 2
    for nodeid in history:
        first_on_its_worker = next(n for n, w in runs if w == worker[nodeid])
        assert first_on_its_worker == nodeid
