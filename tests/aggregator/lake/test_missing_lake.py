"""A mistyped --lake never creates a lake: compaction and prune look before they lock."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from fiolake.cli import cli


def test_compact_of_a_missing_lake_writes_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "typo"
    res = CliRunner().invoke(cli, ["lake", "compact", "--lake", str(missing)])
    assert res.exit_code == 1, res.output
    assert res.stderr == (
        f"Error: no lake at {missing} — check --lake (or FIOLAKE_LAKE); a lake begins with "
        "`fiolake run` or a runner's first upload\n"
    )
    assert not missing.exists()


def test_compact_of_an_empty_lake_has_nothing_to_compact(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["lake", "compact", "--lake", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "nothing to compact" in res.stderr
    assert "(every commit marker listed; checked in " in res.stderr  # its empty commits/
    assert list(tmp_path.iterdir()) == []


def test_prune_of_a_missing_lake_writes_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "typo"
    res = CliRunner().invoke(
        cli, ["lake", "prune", "--keep-timeseries", "90d", "--lake", str(missing)]
    )
    assert res.exit_code == 1, res.output
    assert res.stderr == (
        f"Error: no compacted timeseries table in {missing}: run `fiolake lake compact` "
        "first (prune deletes from the compacted layer only)\n"
    )
    assert not missing.exists()
