"""The shipped profiles (job_files/*.fio), their lookup, and the policy doc."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from fiolake.errors import FiolakeError, UsageProblem
from fiolake.runner.fio.binary import find_fio
from fiolake.runner.policy.check import (
    allowed_options,
    allowed_options_markdown,
    apply_overrides,
    canonical_job_file,
    check_job_file,
    expected_seconds,
    fio_parse_only,
)
from fiolake.runner.profiles import DEFAULT_SUITE, PROFILES_DIR, list_profiles, resolve_job_file

REPO = Path(__file__).resolve().parent.parents[2]
REQUIRED = {
    *DEFAULT_SUITE,
    "database-oltp",
    "sync-write-latency",
    "git-small-files",
    "bs-sweep",
    "iodepth-sweep",
    "latency-at-load",
}
PROFILES = {p.name: p for p in list_profiles()}


def test_profiles_dir_is_the_repos_job_files() -> None:
    assert PROFILES_DIR.resolve() == (REPO / "job_files").resolve()
    assert REQUIRED <= set(PROFILES)


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_profile_is_valid_and_parses_in_fio(name: str, tmp_path: Path) -> None:
    profile = PROFILES[name]
    text = profile.path.read_text()
    assert text.startswith("# "), "each profile opens with comment lines saying what it models"
    assert "Key parameters:" in text
    assert len(profile.description) > 40
    job = check_job_file(text)
    for section in job.jobs:
        opts = section.options
        assert "filename" not in opts, "the runner decides where the data lives"
        assert "runtime" in opts, section.name  # every job ends in bounded time
        # Measurements run for a fixed time; precondition-fill's first phase is the one
        # size-bound job: it writes the working set once (`--precondition`).
        if (name, section.name) != ("precondition-fill", "fill-sequential"):
            assert opts.get("time_based") == "1", section.name
    prepared = apply_overrides(job, runtime_s=None, size_bytes=None)
    fio_parse_only(canonical_job_file(prepared, target_dir=tmp_path), find_fio().path)


def test_default_suite_takes_about_90_seconds() -> None:
    seconds = [
        expected_seconds(check_job_file(PROFILES[n].path.read_text())) for n in DEFAULT_SUITE
    ]
    assert 80 <= sum(seconds) <= 100
    assert all(s == 15 for s in seconds)


def test_sweeps_have_the_promised_shape() -> None:
    bs = check_job_file(PROFILES["bs-sweep"].path.read_text())
    combos = {(j.options["bs"], j.options["ioengine"], j.options["direct"]) for j in bs.jobs}
    assert len(bs.jobs) == 12 and len(combos) == 12
    assert all(j.options["stonewall"] == "1" for j in bs.jobs)
    qd = check_job_file(PROFILES["iodepth-sweep"].path.read_text())
    assert [j.options["iodepth"] for j in qd.jobs] == ["1", "4", "16", "64"]
    assert expected_seconds(qd) == 48


def test_latency_at_load_steps_the_offered_load_open_loop() -> None:
    job = check_job_file(PROFILES["latency-at-load"].path.read_text())
    assert [j.options["rate_iops"] for j in job.jobs] == [
        "250", "1000", "4000", "16000", "64000", "256000"
    ]  # fmt: skip
    for j in job.jobs:
        assert (j.options["rate_process"], j.options["iodepth"], j.options["bs"]) == (
            "poisson",
            "32",
            "4k",
        )
        opts = (j.options["rw"], j.options["direct"], j.options["stonewall"])
        assert opts == ("randrw", "1", "1")
    assert expected_seconds(job) == 36
    assert "tmpfs" in PROFILES["latency-at-load"].path.read_text()  # the O_DIRECT note


@pytest.mark.slow  # waits on real time or a real fio run (2-4 s): out of the fast tier
def test_a_profile_runs_under_fio_with_overrides(tmp_path: Path) -> None:
    # web-server-assets has the most moving parts: nrfiles, bssplit, rwmixread.
    job = check_job_file(PROFILES["web-server-assets"].path.read_text())
    job = apply_overrides(job, runtime_s=1, size_bytes=16 * 2**20)
    target, out = tmp_path / "target", tmp_path / "out"
    target.mkdir()
    out.mkdir()
    (out / "job.fio").write_text(canonical_job_file(job, target_dir=target))
    proc = subprocess.run(
        ["fio", "--output-format=json", "--output=fio.json", "job.fio"],
        cwd=out,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads((out / "fio.json").read_text())["jobs"]
    assert result["jobname"] == "web-server-assets" and result["error"] == 0
    assert result["read"]["total_ios"] > 0 and result["write"]["total_ios"] > 0
    assert len(list(target.iterdir())) == 256  # nrfiles, inside the target dir only
    assert sorted(p.name for p in out.glob("fio_bw.*.log")) == ["fio_bw.1.log"]


def test_resolve_job_file(tmp_path: Path) -> None:
    assert resolve_job_file("random-reads") == PROFILES_DIR / "random-reads.fio"
    assert resolve_job_file("random-reads.fio") == PROFILES_DIR / "random-reads.fio"
    own = tmp_path / "random-reads.fio"
    own.write_text("[mine]\n")
    assert resolve_job_file(own) == own
    assert resolve_job_file(str(own)) == own
    with pytest.raises(UsageProblem) as info:
        resolve_job_file("no-such-profile")
    assert str(info.value) == (
        "no job file or profile named 'no-such-profile' — give a path to a .fio file or one of "
        "the shipped profiles: " + ", ".join(sorted(PROFILES))
    )
    with pytest.raises(FiolakeError):
        resolve_job_file(tmp_path / "missing" / "random-reads.fio")


def test_policy_doc_lists_the_allowlist() -> None:
    doc = (REPO / "docs" / "job-file-policy.md").read_text()
    assert allowed_options_markdown() in doc, (
        "regenerate the table: .venv/bin/python -c 'from fiolake.runner.policy.check import "
        'allowed_options_markdown as m; print(m(), end="")\''
    )
    for name in allowed_options():
        assert f"| `{name}` |" in doc
