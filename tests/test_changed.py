"""`make test-changed` chooses the tests a change can reach (tests/changed.py)."""

from __future__ import annotations

from pathlib import Path

from tests.changed import ROOT, select


def _one(name: str) -> str:
    (found,) = (ROOT / "tests").rglob(name)
    return str(found.relative_to(ROOT))


def test_a_module_reached_only_through_the_cli_chooses_the_tests_of_its_command() -> None:
    chosen = select(["fiolake/aggregator/stats/gate.py"])
    assert _one("test_gate_config.py") in chosen  # runs `fiolake gate`, imports no gate module
    assert _one("test_host_lock.py") not in chosen  # the runner's lock never reaches the gate
    assert _one("test_svg.py") not in chosen


def test_a_changed_conftest_chooses_every_test_below_it() -> None:
    chosen = select(["tests/runner/conftest.py"])
    below = {str(p.relative_to(ROOT)) for p in (ROOT / "tests/runner").rglob("test_*.py")}
    assert below <= set(chosen)
    # Last run's failures are always chosen too (a failed run in this tree leaves some).
    extra = set(chosen) - _last_failed_files()
    assert not [p for p in extra if p.startswith("tests/aggregator/")]


def test_a_changed_test_file_is_chosen_and_the_root_settings_choose_everything() -> None:
    lock_tests = _one("test_host_lock.py")
    assert lock_tests in select([lock_tests])
    assert select(["pyproject.toml"]) == ["-"]
    assert select(["docs/usage.md"]) == sorted(_last_failed_files())


def _last_failed_files() -> set[str]:
    from tests.changed import last_failed

    return {p for p in last_failed() if Path(ROOT, p).is_file()}
