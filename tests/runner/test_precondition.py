"""Preconditioning (runner.precondition): a job on the measured job's own files first,
stored as a run with role='precondition' that the measured run links to, never compared."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fiolake.aggregator.lake.lake import open_lake
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.rows.runlist import list_runs
from fiolake.cli import cli
from fiolake.runner.policy.check import check_job_file
from fiolake.runner.precondition import on_files_of
from tests.runner.conftest import LakeEnv, sql

MEASURED = """\
[reader]
rw=randread
bs=4k
ioengine=psync
size=4M
nrfiles=2
runtime=1
time_based=1
"""
FILL = """\
[seq]
rw=write
bs=64k
size=1M
[rand]
stonewall
rw=randwrite
bs=4k
size=1M
runtime=1
time_based=1
"""


def test_the_precondition_job_writes_the_measured_jobs_files_phase_by_phase() -> None:
    fill = on_files_of(check_job_file(MEASURED), check_job_file(FILL))
    assert [s.name for s in fill.jobs] == ["reader", "reader"]  # fio names files after it
    seq, rand = (s.options for s in fill.jobs)
    assert (seq["rw"], rand["rw"]) == ("write", "randwrite")
    assert seq["size"] == rand["size"] == "4M" and seq["nrfiles"] == "2"  # the measured layout
    assert rand["stonewall"] == "1" and rand["runtime"] == "1"


@pytest.mark.slow  # several real fio runs (~6-9 s): kept out of the fast tier
def test_run_precondition_links_runs_and_compare_never_sees_them(tmp_path: Path) -> None:
    for name, text in (("m.fio", MEASURED), ("fill.fio", FILL)):
        (tmp_path / name).write_text(text)
    lake = tmp_path / "lake"
    args = ["run", str(tmp_path / "m.fio"), "--repeat", "2", "--dir", str(tmp_path)]
    args += ["--lake", str(lake), "--precondition", str(tmp_path / "fill.fio")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    runs = sql(
        lake,
        "SELECT run_id, profile, role, preconditioned_by, canonical_job_file, status "
        "FROM runs ORDER BY started_at",
    )
    assert [(r["profile"], r["role"], r["status"]) for r in runs] == [
        ("fill", "precondition", "ok"),
        ("m", "measure", "ok"),
    ] * 2
    for before, measured in zip(runs[::2], runs[1::2], strict=True):
        assert measured["preconditioned_by"] == before["run_id"]
        assert before["preconditioned_by"] is None
        assert "[reader]" in before["canonical_job_file"]  # on the measured job's files
    commits = sql(lake, "SELECT run_id FROM commits")
    assert {c["run_id"] for c in commits} == {r["run_id"] for r in runs}
    compared = CliRunner().invoke(
        cli, ["compare", "--lake", str(lake), "--metric", "iops", "--format", "json"]
    )
    assert compared.exit_code == 0, compared.output
    rows = json.loads(compared.stdout)
    assert {r["profile"] for r in rows} == {"m"}  # the precondition runs are no sample
    assert [(r["n"], r["preconditioned"]) for r in rows] == [(2, 2)]
    with open_lake(str(lake)) as opened:
        cols, listed, total = list_runs(opened, RunFilter())
    assert total == 4 and "role" in cols  # the Runs page lists both, with the role
    roles = [row[cols.index("role")] for row in listed]
    assert sorted(roles) == ["measure", "measure", "precondition", "precondition"]


def test_a_refused_precondition_job_runs_nothing(tmp_path: Path) -> None:
    (tmp_path / "m.fio").write_text(MEASURED)
    (tmp_path / "bad.fio").write_text("[x]\nrw=write\nsize=1M\nexec_prerun=true\n")
    result = CliRunner().invoke(
        cli,
        ["run", str(tmp_path / "m.fio"), "--dir", str(tmp_path), "--lake", str(tmp_path / "l")]
        + ["--precondition", str(tmp_path / "bad.fio")],
    )
    assert result.exit_code == 1
    assert "bad (precondition of m): [x] exec_prerun" in result.output
    assert not (tmp_path / "l").exists()


@pytest.mark.slow
def test_published_precondition_runs_first_on_the_runner(local_lake: LakeEnv) -> None:
    (local_lake.tmp / "m.fio").write_text(MEASURED)
    (local_lake.tmp / "fill.fio").write_text(FILL)
    campaign = local_lake.publish(
        local_lake.tmp / "m.fio", "--backend", "disk", "--precondition",
        str(local_lake.tmp / "fill.fio"),
    )  # fmt: skip
    local_lake.start_runner("r1", "disk", "--once").wait(timeout=120)
    lake = Path(local_lake.runner["FIOLAKE_LAKE"])
    runs = sql(lake, f"SELECT run_id, role, preconditioned_by, status FROM runs "
                     f"WHERE campaign_id = '{campaign}'")  # fmt: skip
    by_role = {r["role"]: r for r in runs}
    assert set(by_role) == {"precondition", "measure"}, local_lake.runner_log("r1")
    assert by_role["measure"]["preconditioned_by"] == by_role["precondition"]["run_id"]
    assert {r["status"] for r in runs} == {"ok"}


def test_a_runner_rejects_a_manifest_whose_precondition_its_policy_refuses(
    tmp_path: Path,
) -> None:
    """`publish` checks the precondition job too, but a runner judges what it is given:
    a precondition its policy refuses rejects the job, naming it, and runs no fio."""
    from datetime import timedelta

    from fiolake.campaign_progress import campaign_status
    from fiolake.campaigns import plan_campaign, publish_manifests
    from fiolake.runner.distributed.config import RunnerConfig
    from fiolake.runner.distributed.service import Runner
    from fiolake.signing import Keyring, LocalSigner
    from fiolake.store import LocalStore

    signer = LocalSigner.generate(tmp_path / "key")
    store = LocalStore(tmp_path / "lake")
    manifests = plan_campaign(
        [("m", MEASURED)], ["b"], campaign_id="c-pre", repeat=1, runtime_s=None,
        size_bytes=None, bucket="", expires_in=timedelta(hours=1),
        preconditions=[("evil", "[x]\nrw=write\nsize=1M\nexec_prerun=true\n")],
    )  # fmt: skip
    publish_manifests(store, manifests, signer)
    ring = Keyring()
    ring.add(signer.keyid, signer.public_key_bytes(), persist=False)
    (tmp_path / "t").mkdir()
    config = RunnerConfig("b", tmp_path / "t", "r1", tmp_path / "spool", once=True)
    assert Runner(store, ring, config, "").serve().rejected == 1
    [job] = campaign_status(store, "c-pre")
    assert job.state == "rejected" and "evil (precondition of m): [x] exec_prerun" in job.reason


@pytest.mark.slow  # several real fio runs (~6-9 s): kept out of the fast tier
def test_a_job_files_header_names_its_precondition_and_the_option_overrides_it(
    tmp_path: Path,
) -> None:
    """`# precondition: fill.fio` (a path beside the job file, or a profile) applies to
    that file only; `--precondition none` turns it off for one invocation."""
    (tmp_path / "fill.fio").write_text(FILL)
    (tmp_path / "m.fio").write_text("# Reads.\n# precondition: fill.fio\n\n" + MEASURED)
    (tmp_path / "plain.fio").write_text(MEASURED.replace("[reader]", "[plain]"))
    lake = tmp_path / "lake"
    args = ["run", str(tmp_path / "m.fio"), str(tmp_path / "plain.fio"), "--dir", str(tmp_path)]
    result = CliRunner().invoke(cli, [*args, "--lake", str(lake)])
    assert result.exit_code == 0, result.output
    runs = sql(lake, "SELECT profile, role, preconditioned_by IS NOT NULL AS linked FROM runs")
    assert sorted((r["profile"], r["role"], r["linked"]) for r in runs) == [
        ("fill", "precondition", False),
        ("m", "measure", True),
        ("plain", "measure", False),
    ]
    off = tmp_path / "off"
    result = CliRunner().invoke(cli, [*args, "--lake", str(off), "--precondition", "none"])
    assert result.exit_code == 0, result.output
    assert {r["role"] for r in sql(off, "SELECT role FROM runs")} == {"measure"}
    checked = CliRunner().invoke(cli, ["validate", str(tmp_path / "m.fio")])
    assert checked.exit_code == 0, checked.output
    assert checked.output.startswith("ok  m: 1 job(s), time-bound: 1 s, precondition fill\n")


def test_a_header_naming_no_job_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "m.fio").write_text("# precondition: nowhere.fio\n" + MEASURED)
    result = CliRunner().invoke(cli, ["validate", str(tmp_path / "m.fio")])
    assert result.exit_code == 2
    assert (
        f"\nError: {tmp_path / 'm.fio'} ('# precondition: nowhere.fio'): no job file or profile "
        "named 'nowhere.fio' — give a path to a .fio file or one of the shipped profiles: "
    ) in result.output


def test_publish_puts_each_files_own_precondition_into_its_manifests(tmp_path: Path) -> None:
    from datetime import timedelta

    from fiolake.campaigns import plan_campaign
    from fiolake.cli.common import resolve_jobs

    (tmp_path / "m.fio").write_text("# precondition: precondition-fill\n" + MEASURED)
    (tmp_path / "plain.fio").write_text(MEASURED)
    jobs = resolve_jobs((str(tmp_path / "m.fio"), str(tmp_path / "plain.fio")), None)
    manifests = plan_campaign(
        [(j.profile, j.text) for j in jobs], ["a", "b"], campaign_id="c-1", repeat=2,
        runtime_s=None, size_bytes=None, bucket="", expires_in=timedelta(hours=1),
        preconditions=[(j.precondition.profile, j.precondition.text) if j.precondition else None
                       for j in jobs],
    )  # fmt: skip
    assert len(manifests) == 8
    for m in manifests:
        expected = "precondition-fill" if m.profile == "m" else None
        assert m.precondition_profile == expected
        assert (m.precondition is not None) == (m.profile == "m")


def test_the_header_line_is_read_but_never_part_of_the_description() -> None:
    from fiolake.runner.profiles import describe, header_precondition

    text = "# OLTP on files in use.\n# precondition: precondition-fill\n# More words.\n\n[a]\n"
    assert header_precondition(text) == "precondition-fill"
    assert describe(text) == "OLTP on files in use. More words."
    # only the leading comment block counts: a later comment names nothing
    assert header_precondition("[a]\nrw=read\n# precondition: precondition-fill\n") is None
