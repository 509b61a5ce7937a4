"""The host fio's option list (runner.fio.cmdhelp): cached per binary on disk, asked again
when the binary at that path changes (a fio upgraded in place)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from fiolake.runner.fio.binary import find_fio
from fiolake.runner.fio.cmdhelp import host_options, knows_option

pytestmark = pytest.mark.fio_versions


def test_a_fio_upgraded_in_place_is_asked_again(
    fio_builds: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FIOLAKE_CACHE_DIR", str(tmp_path / "cache"))
    fio = tmp_path / "bin" / "fio"
    fio.parent.mkdir()
    shutil.copy2(fio_builds["3.28"], fio)
    old = find_fio(str(fio))
    assert old.version == "fio-3.28"
    assert "dedupe_global" not in host_options(old) and "thinkcycles" not in host_options(old)
    (cached,) = (tmp_path / "cache" / "fio-options").iterdir()
    assert set(cached.read_text().split()) == host_options(old)
    shutil.copy2(fio_builds["3.42"], fio.with_suffix(".new"))
    os.replace(fio.with_suffix(".new"), fio)  # as a package upgrade replaces it
    new = find_fio(str(fio))
    assert new.version == "fio-3.42"
    assert {"dedupe_global", "thinkcycles"} <= host_options(new)
    # 3.42 lists allrandrepeat under randrepeat only: `--cmdhelp=allrandrepeat` answers
    assert "allrandrepeat" not in host_options(new) and knows_option(new, "allrandrepeat")
    assert not knows_option(new, "no_such_option")
    assert len(list((tmp_path / "cache" / "fio-options").iterdir())) == 2
