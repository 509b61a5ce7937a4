"""`import_meanwhile`: the modules a command needs after connecting are imported on a
thread while it connects, and an import that fails there fails in the command as before."""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import threading
from pathlib import Path

import pytest

from fiolake.cli.common import import_meanwhile

CLI = Path(__file__).resolve().parents[2] / "fiolake" / "cli"


def _join_import_threads() -> None:
    for thread in threading.enumerate():
        if thread.name == "fiolake-imports":
            thread.join(timeout=30)


@pytest.fixture
def module_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("meanwhile_probe")]:
        del sys.modules[name]


def test_the_modules_are_imported_on_another_thread(module_dir: Path) -> None:
    (module_dir / "meanwhile_probe_ok.py").write_text(
        "import threading\nLOADED_BY = threading.current_thread().name\n"
    )
    import_meanwhile(["meanwhile_probe_ok"])
    _join_import_threads()
    assert "meanwhile_probe_ok" in sys.modules
    assert sys.modules["meanwhile_probe_ok"].LOADED_BY == "fiolake-imports"


def test_a_failing_import_is_raised_by_the_callers_own_import_not_the_thread(
    module_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    (module_dir / "meanwhile_probe_bad.py").write_text("raise ImportError('no such backend')\n")
    import_meanwhile(["meanwhile_probe_bad"])
    _join_import_threads()
    assert capfd.readouterr().err == ""  # no "Exception in thread" from the thread
    with pytest.raises(ImportError, match="no such backend"):
        importlib.import_module("meanwhile_probe_bad")


def test_nothing_to_import_starts_no_thread() -> None:
    before = threading.active_count()
    import_meanwhile([])
    assert threading.active_count() == before


def test_every_module_the_commands_import_meanwhile_exists() -> None:
    """A renamed module would only make the command slower (the thread drops errors): so
    each name the CLI passes must be one Python can find."""
    names = {
        name
        for path in CLI.glob("*.py")
        for call in re.findall(r"meanwhile=\[([^\]]*)\]", path.read_text())
        for name in re.findall(r'"([\w.]+)"', call)
    }
    names |= {
        name
        for path in CLI.glob("*.py")
        for name in re.findall(r'_MODULE = "([\w.]+)"', path.read_text())
    }
    assert len(names) >= 4, names
    missing = sorted(n for n in names if importlib.util.find_spec(n) is None)
    assert missing == []
