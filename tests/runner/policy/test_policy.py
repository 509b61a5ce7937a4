"""The job-file policy against real fio 3.33: refusals (exact messages), caps, overrides,
the canonical job file and the `fio --parse-only` gate."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from fiolake.errors import FioError, PolicyError, UsageProblem
from fiolake.runner.fio.binary import find_fio
from fiolake.runner.policy.check import (
    Caps,
    allowed_options,
    apply_overrides,
    canonical_job_file,
    check_job_file,
    expected_seconds,
    fio_parse_only,
    parse_job_file,
)
from fiolake.runner.policy.jobfile import JobFile, JobSection
from fiolake.runner.policy.options import ALIASES, ALLOWED, NEWER_FIO_ALIASES, NEWER_FIO_OPTIONS
from fiolake.units import parse_size, seconds_or_none, size_or_none

ENGINES = "psync, sync, pvsync, pvsync2, libaio, io_uring, posixaio, mmap, null"
BASE = "[job1]\nioengine=psync\nrw=read\nsize=1m\n"  # lines 1-4; a test's line is line 5
ON_DEVICE = "allowed only on a block-device target (--device)"


def violations(text: str, caps: Caps = Caps()) -> list[str]:  # noqa: B008
    with pytest.raises(PolicyError) as info:
        check_job_file(text, caps)
    return info.value.violations


# (extra line appended to BASE as line 5, the one violation expected)
REFUSED = [
    ("exec_prerun=touch /tmp/x", "[job1] exec_prerun: runs a shell command; not allowed"),
    ("exec_postrun=rm -rf ~", "[job1] exec_postrun: runs a shell command; not allowed"),
    ("ioengine=exec", f"[job1] ioengine=exec: engine exec is not on the allowlist: {ENGINES}"),
    (
        "ioengine=external:/x.so",
        f"[job1] ioengine=external:/x.so: engine external:/x.so is not on the allowlist: {ENGINES}",
    ),
    ("ioengine=net", f"[job1] ioengine=net: engine net is not on the allowlist: {ENGINES}"),
    *[
        (f"ioengine={e}", f"[job1] ioengine={e}: engine {e} is not on the allowlist: {ENGINES}")
        for e in ("netsplice", "http", "rbd", "sg", "io_uring_cmd", "filecreate", "cpuio", "/x")
    ],
    ("directory=/etc", "[job1] directory: the runner sets the target directory; not allowed"),
    ("opendir=/home", "[job1] opendir: adds every file under a directory; not allowed"),
    (
        "filename_format=x.0",
        "[job1] filename_format: names files by a template that can hold paths; not allowed",
    ),
    *[
        (
            f"{opt}=out",
            f"[job1] {opt}: the runner writes the logs into its private output dir; not allowed",
        )
        for opt in (
            "write_bw_log",
            "write_lat_log",
            "write_iops_log",
            "write_hist_log",
            "per_job_logs",
            "log_avg_msec",
            "log_unix_epoch",
            "log_offset",
        )
    ],
    ("write_iolog=trace", "[job1] write_iolog: writes a trace file; not allowed"),
    (
        "read_iolog=trace",
        "[job1] read_iolog: replays a trace that names its own files and devices; not allowed",
    ),
    (
        "replay_redirect=/dev/sda",
        "[job1] replay_redirect: replays a trace that names its own files and devices; not allowed",
    ),
    *[
        (f"rw={rw}", f"[job1] rw={rw}: trims (discards) data; {ON_DEVICE}")
        for rw in ("trim", "randtrim", "trimwrite", "randtrimwrite")
    ],
    ("readwrite=randtrim", f"[job1] readwrite=randtrim: trims (discards) data; {ON_DEVICE}"),
    *[
        (
            f"filename={name}",
            f"[job1] filename={name}: must be a plain file name inside the "
            "target dir (no '/', ':' or '..')",
        )
        for name in ("/dev/sda", "../x", "a:b", "sub/x", "..", "/etc/passwd")
    ],
    (
        "filename=-",
        "[job1] filename=-: must be a plain file name inside the target dir "
        "('-' means stdin/stdout)",
    ),
    ("uid=0", "[job1] uid: changes the user fio runs as; not allowed"),
    ("gid=0", "[job1] gid: changes the group fio runs as; not allowed"),
    (
        "prio=0",
        "[job1] prio: sets I/O priority (the real-time class starves other work); not allowed",
    ),
    (
        "prioclass=1",
        "[job1] prioclass: sets I/O priority (the real-time class starves other work); not allowed",
    ),
    (
        "cmdprio_percentage=50",
        "[job1] cmdprio_percentage: sets I/O priority (the real-time "
        "class starves other work); not allowed",
    ),
    (
        "ioscheduler=none",
        "[job1] ioscheduler: switches the device's I/O scheduler through sysfs; not allowed",
    ),
    ("cgroup=x", "[job1] cgroup: creates cgroups; not allowed"),
    ("mem=mmap:/etc/passwd", "[job1] mem=mmap:/etc/passwd: maps a file by path; not allowed"),
    ("iomem=mmaphuge:/x", "[job1] iomem=mmaphuge:/x: maps a file by path; not allowed"),
    ("mem=shm", "[job1] mem=shm: not one of malloc, mmap, mmapshared"),
    (
        "verify_state_save=1",
        "[job1] verify_state_save: writes a state file (the runner turns it off); not allowed",
    ),
    ("verify_state_load=1", "[job1] verify_state_load: reads a state file; not allowed"),
    (
        "allow_mounted_write=1",
        "[job1] allow_mounted_write: lets fio write to mounted devices; not allowed",
    ),
    ("fill_fs=1", "[job1] fill_fs: writes until the file system is full; not allowed"),
    ("zonemode=zbd", "[job1] zonemode=zbd: resets zones on zoned block devices; not allowed"),
    ("stats=0", "[job1] stats=0: hides the job from the results; not allowed"),
    (
        "buffer_pattern='/etc/shadow'",
        "[job1] buffer_pattern='/etc/shadow': a '...' pattern "
        'reads a file; use a "string" or a 0x hex pattern',
    ),
    (
        "kb_base=1000",
        "[job1] kb_base: changes how fio reads size suffixes (fiolake reads them "
        "fio's default way); not allowed",
    ),
    ("--output=/tmp/x", "[job1] --output: a command-line option; not allowed in job files"),
    ("trigger=reboot", "[job1] trigger: a command-line option; not allowed in job files"),
    ("blocksze=4k", "[job1] blocksze: not on the allowlist; not allowed (did you mean blocksize?)"),
    (
        "wait_for=job0",
        "[job1] wait_for: not on the allowlist; not allowed (see `fiolake validate --list`)",
    ),
    ("numjobs=500", "[job1] numjobs=500: above the cap of 64 (raise it with --max-numjobs)"),
    ("iodepth=2000", "[job1] iodepth=2000: above the cap of 1024 (raise it with --max-iodepth)"),
    ("nrfiles=200k", "[job1] nrfiles=200k: above the cap of 100000 (raise it with --max-nrfiles)"),
    ("size=100g", "[job1] size=100g: above the cap of 64.0 GiB (raise it with --max-size)"),
    (
        "filesize=1k-65g",
        "[job1] filesize=1k-65g: above the cap of 64.0 GiB (raise it with --max-size)",
    ),
    ("io_limit=1t", "[job1] io_limit=1t: above the cap of 64.0 GiB (raise it with --max-size)"),
    ("runtime=2h", "[job1] runtime=2h: above the cap of 3600 s (raise it with --max-runtime)"),
    ("timeout=3601", "[job1] timeout=3601: above the cap of 3600 s (raise it with --max-runtime)"),
    ("ramp_time=2h", "[job1] ramp_time=2h: above the cap of 3600 s (raise it with --max-runtime)"),
    ("runtime=0", "[job1] runtime=0: must be more than 0 (0 means no limit)"),
    (
        "runtime=1x",
        "[job1] runtime=1x: not a duration (whole seconds, or a whole number with "
        "a us/ms/s/m/h/d suffix)",
    ),
    (
        "size=1.5g",
        "[job1] size=1.5g: not a size (a whole number with an optional k/m/g/t/p "
        "suffix, e.g. 256m)",
    ),
    (
        "size=16Mfoo",
        "[job1] size=16Mfoo: not a size (a whole number with an optional k/m/g/t/p "
        "suffix, e.g. 256m)",
    ),
    (
        "size=50%",
        "[job1] size=50%: must be an absolute size (a percentage depends on what is already there)",
    ),
    ("numjobs=0", "[job1] numjobs=0: must be at least 1"),
    (
        "bs=abc",
        "[job1] bs=abc: not a block size (e.g. bs=4k, bsrange=4k-64k, bssplit=4k/50:64k/50)",
    ),
    (
        "rw=sideways",
        "[job1] rw=sideways: not a workload fio knows (read, write, randread, "
        "randwrite, rw, readwrite, randrw)",
    ),
    (
        "size=${SIZE}",
        "line 5: '$' expansion is not allowed (environment and arithmetic expansion run commands)",
    ),
    (
        "size=$mb_memory",
        "line 5: '$' expansion is not allowed (environment and arithmetic expansion run commands)",
    ),
    ("description=a\x07b", "line 5: control character 0x07 is not allowed"),
    ("include evil.fio", "[job1] include: reads other files; not allowed"),
    ("include=evil.fio", "[job1] include: reads other files; not allowed"),
]


@pytest.mark.parametrize(("line", "message"), REFUSED, ids=[r[0][:40] for r in REFUSED])
def test_refused_with_exact_message(line: str, message: str) -> None:
    assert violations(BASE + line + "\n") == [message]


def test_include_in_global_and_before_any_section() -> None:
    text = "include /etc/passwd\n[global]\ninclude common.fio\n" + BASE
    assert violations(text) == [
        "line 1: include: reads other files; not allowed",
        "[global] include: reads other files; not allowed",
    ]


def test_dollar_line_with_a_denied_option_reports_both() -> None:
    assert violations(BASE + "filename_format=/tmp/$jobname\n") == [
        "line 5: '$' expansion is not allowed (environment and arithmetic expansion run commands)",
        "[job1] filename_format: names files by a template that can hold paths; not allowed",
    ]


def test_bad_section_names() -> None:
    text = "[a/b]\nsize=1m\n[x:y]\nsize=1m\n[globalx]\nsize=1m\n[ok]\nsize=1m\n[ok]\nsize=1m\n"
    assert violations(text) == [
        "[a/b] section name: must not contain '/' (job names become file names)",
        "[x:y] section name: must not contain ':' (job names become file names)",
        "[globalx] section name: fio treats every name starting with 'global' as [global]; "
        "rename it",
        "[ok] duplicate job name; give each job its own name",
    ]


def test_syntax_problems() -> None:
    text = "rw=read\n[job1\nsize=1m\n=4k\nrw read\n"
    assert violations(text) == [
        "line 1: rw: option outside any [section]",
        "line 2: '[job1': a section header must be '[name]' on its own line",
        "line 4: '=4k': expected key=value or a bare flag",
        "line 5: 'rw read': expected key=value or a bare flag",
    ]
    assert violations("; only a comment\n") == ["no job sections; add at least one [name] section"]


def test_every_violation_is_reported_in_file_order() -> None:
    text = (
        "[global]\n"
        "ioengine=exec\n"  # 2
        "numjobs=500\n"  # 3
        "[job1]\n"
        "exec_prerun=id\n"  # 5
        "rw=$(id)\n"  # 6
        "filename=/dev/sda\n"  # 7
        "write_lat_log=lat\n"  # 8
        "size=100g\n"  # 9
        "[job2]\n"
        "uid=0\n"  # 11
        "rw=trim\n"  # 12
        "numjobs=300\n"  # 13
    )
    assert violations(text) == [
        f"[global] ioengine=exec: engine exec is not on the allowlist: {ENGINES}",
        "[global] numjobs=500: above the cap of 64 (raise it with --max-numjobs)",
        "[job1] exec_prerun: runs a shell command; not allowed",
        "line 6: '$' expansion is not allowed (environment and arithmetic expansion run commands)",
        "[job1] filename=/dev/sda: must be a plain file name inside the target dir "
        "(no '/', ':' or '..')",
        "[job1] write_lat_log: the runner writes the logs into its private output dir; not allowed",
        "[job1] size=100g: above the cap of 64.0 GiB (raise it with --max-size)",
        "[job2] uid: changes the user fio runs as; not allowed",
        f"[job2] rw=trim: trims (discards) data; {ON_DEVICE}",
        "[job2] numjobs=300: above the cap of 64 (raise it with --max-numjobs)",
    ]


def test_caps_over_several_options() -> None:
    text = (
        "[many-files]\nnrfiles=100000\nfilesize=1m\n"  # 97.7 GiB of files
        "[buffers]\nbs=1m\niodepth=1024\nnumjobs=8\nsize=1m\n"
        "[a]\nsize=40g\nnumjobs=4\n[b]\nsize=40g\nnumjobs=4\n"
    )
    assert violations(text) == [
        "[many-files] data per job = 97.7 GiB (size, or nrfiles × filesize, plus offsets): "
        "above the cap of 64.0 GiB (raise it with --max-size)",
        "[buffers] I/O buffers = 8.0 GiB (numjobs × iodepth × largest block size): above the cap "
        "of 4.0 GiB (raise it with --max-buffer-size)",
        "[all jobs] data = 320.0 GiB (data per job × numjobs, summed over jobs): above the cap "
        "of 256.0 GiB (raise it with --max-total-size)",
    ]
    sections = "".join(f"[j{i}]\nsize=1m\n" for i in range(3))
    assert violations(sections, Caps(max_jobs=2)) == [
        "[all jobs] 3 job sections: above the cap of 2 (raise it with --max-sections)"
    ]
    raised = Caps(max_size_bytes=2**40, max_total_bytes=2**41, max_buffer_bytes=2**40)
    assert len(check_job_file(text, raised).jobs) == 4


def test_exec_prerun_is_refused_and_never_runs(tmp_path: Path) -> None:
    pwned = tmp_path / "pwned"
    text = f"[job1]\nioengine=null\nrw=read\nsize=64k\nexec_prerun=touch {pwned}\n"
    # Control: fio itself would run it, so the check below can fail.
    control = f"[job1]\nioengine=null\nrw=read\nsize=64k\nexec_prerun=touch {tmp_path}/ctl\n"
    (tmp_path / "control.fio").write_text(control)
    subprocess.run(["fio", "control.fio"], cwd=tmp_path, capture_output=True, check=True)
    assert (tmp_path / "ctl").exists()

    assert violations(text) == ["[job1] exec_prerun: runs a shell command; not allowed"]
    forged = JobFile([JobSection("job1", {"ioengine": "null", "exec_prerun": f"touch {pwned}"})])
    with pytest.raises(PolicyError) as info:
        canonical_job_file(forged, target_dir=tmp_path)
    assert info.value.violations == ["[job1] exec_prerun: runs a shell command; not allowed"]
    assert not pwned.exists()


def test_parse_merges_globals_aliases_flags_and_comments() -> None:
    text = (
        "\ufeff; a job file\r\n"
        "[global]\r\n"
        "blocksize=8k\r\n"
        "readwrite=randread ; inline comment\r\n"
        "[a]\r\n"
        "bs=4k\r\n"
        "time_based\r\n"
        "timeout = 5 # seconds\r\n"
        "description=copy #1 ok\r\n"
        "[global]\r\n"
        "iodepth=4\r\n"
        "[b]\r\n"
        "name=b-renamed\r\n"
    )
    job = parse_job_file(text)
    assert [j.name for j in job.jobs] == ["a", "b-renamed"]
    assert job.options_for("a") == {
        "bs": "4k",
        "rw": "randread",
        "time_based": "1",
        "runtime": "5",
        "description": "copy",  # fio also cuts at '#'
    }
    assert job.options_for("b-renamed") == {"bs": "8k", "rw": "randread", "iodepth": "4"}
    with pytest.raises(KeyError):
        job.options_for("b")


def test_parse_job_file_refuses_what_it_cannot_pass_on() -> None:
    with pytest.raises(PolicyError) as info:
        parse_job_file("[a]\nsize=${X}\ninclude x\n")
    assert info.value.violations == [
        "line 2: '$' expansion is not allowed (environment and arithmetic expansion run commands)",
        "[a] include: reads other files; not allowed",
    ]
    assert parse_job_file("[a]\nexec_prerun=id\n").jobs[0].options == {"exec_prerun": "id"}


@pytest.mark.parametrize(
    ("text", "expected", "bs"),
    [
        ("4k", 4096, 1),
        ("1KiB", 1000, 1),
        ("1kb", 1024, 1),
        ("2m", 2 * 2**20, 1024),
        ("1MiB", 10**6, 1000),
        ("3g", 3 * 2**30, 2**20),
        ("7", 7, 1),
    ],
)
def test_sizes_match_fio(tmp_path: Path, text: str, expected: int, bs: int) -> None:
    assert parse_size(text) == expected
    (tmp_path / "s.fio").write_text(f"[s]\nioengine=null\nrw=read\nbs={bs}\nsize={text}\n")
    out = subprocess.run(
        ["fio", "--output-format=json", "s.fio"], cwd=tmp_path, capture_output=True, text=True
    )
    assert json.loads(out.stdout)["jobs"][0]["read"]["io_bytes"] == expected


def test_units_refuse_what_fio_would_misread() -> None:
    for text in ("1.5k", "1 k", "16Mfoo", "0x10", "(1+1)k", "1ki", ""):
        assert size_or_none(text) is None
    with pytest.raises(UsageProblem, match="not a size"):
        parse_size("lots")
    assert [seconds_or_none(t) for t in ("2", "1500ms", "700000us", "2m", "1h", "1sec")] == [
        2,
        1.5,
        0.7,
        120,
        3600,
        None,
    ]


def test_apply_overrides() -> None:
    text = (
        "[global]\nioengine=null\nrw=read\n"
        "[timed]\nsize=1m\ntime_based=1\nruntime=30\n"
        "[files]\nnrfiles=10\nfilesize=4k-64k\nio_size=10m\n"
    )
    job = check_job_file(text)
    both = apply_overrides(job, runtime_s=3, size_bytes=2**20)
    assert both.options_for("timed") == {
        "ioengine": "null",
        "rw": "read",
        "size": "1048576",
        "time_based": "1",
        "runtime": "3",
    }
    assert both.options_for("files") == {
        "ioengine": "null",
        "rw": "read",
        "nrfiles": "10",
        "runtime": "3",
        "size": "1048576",
    }
    neither = apply_overrides(job, runtime_s=None, size_bytes=None, caps=Caps(max_runtime_s=60))
    assert neither.options_for("timed")["runtime"] == "30"
    assert neither.options_for("files")["runtime"] == "60"  # so fio always ends
    assert "time_based" not in neither.options_for("files")
    with pytest.raises(PolicyError) as info:
        apply_overrides(job, runtime_s=5000, size_bytes=2**40)
    assert info.value.violations == [
        "--runtime=5000: above the cap of 3600 s (raise it with --max-runtime)",
        "--size=1099511627776: above the cap of 64.0 GiB (raise it with --max-size)",
    ]
    with pytest.raises(PolicyError, match="data = 320.0 GiB"):
        apply_overrides(
            check_job_file("[a]\nnumjobs=5\nsize=1m\n"), runtime_s=None, size_bytes=64 * 2**30
        )


def test_canonical_job_file_passes_fio_parse_only(tmp_path: Path) -> None:
    text = "[global]\nblocksize=4k\n[seq read]\nrw=read\nsize=1m\nstonewall\nioengine=psync\n"
    job = apply_overrides(check_job_file(text), runtime_s=2, size_bytes=None)
    target = tmp_path / "target"
    canonical = canonical_job_file(job, target_dir=target, log_prefix="j")
    assert canonical == (
        "; written by fiolake: the runner's settings, then one section per job\n"
        "[global]\n"
        f"directory={target}\n"
        "write_bw_log=j\nwrite_iops_log=j\nwrite_lat_log=j\nwrite_hist_log=j\n"
        "log_avg_msec=1000\nlog_hist_msec=1000\nper_job_logs=1\nverify_state_save=0\nallow_file_create=1\n"
        "\n"
        "[seq read]\n"
        "ioengine=psync\nbs=4k\nrw=read\nsize=1m\nstonewall=1\nruntime=2\n"
    )
    fio_parse_only(canonical, find_fio().path)  # raises PolicyError if fio refuses it
    assert not target.exists()  # parsing writes nothing, not even fio's directory


def test_canonical_refuses_unusable_paths(tmp_path: Path) -> None:
    job = check_job_file(BASE)
    with pytest.raises(PolicyError, match="target dir '/a:b'"):
        canonical_job_file(job, target_dir=Path("/a:b"))
    with pytest.raises(PolicyError, match="target dir '/a#b'"):
        canonical_job_file(job, target_dir=Path("/a#b"))
    with pytest.raises(PolicyError, match="log prefix '../x'"):
        canonical_job_file(job, target_dir=tmp_path, log_prefix="../x")


def test_fio_parse_only_reports_what_fio_rejects(tmp_path: Path) -> None:
    # hipri is allowed, but psync has no such option: only fio knows that.
    job = check_job_file("[a]\nioengine=psync\nrw=read\nsize=1m\nhipri=1\n")
    with pytest.raises(PolicyError) as info:
        fio_parse_only(canonical_job_file(job, target_dir=tmp_path), find_fio().path)
    assert info.value.violations == [
        "fio --parse-only: Bad option <hipri=1>",
        "fio --parse-only: Did you mean prio?",
        "fio --parse-only: fio: job a dropped",
    ]
    with pytest.raises(FioError, match="cannot start .*no-fio: No such file"):
        fio_parse_only("[a]\n", fio=str(tmp_path / "no-fio"))


def test_fio_parse_only_runs_with_a_clean_environment(tmp_path: Path) -> None:
    # A stand-in for fio that records what it was given (the real fio can't show its env).
    seen_file = tmp_path / "seen.txt"
    spy = tmp_path / "spy-fio"
    spy.write_text(f'#!/bin/sh\n{{ pwd; env; echo "$@"; cat; }} > {seen_file}\n')
    spy.chmod(0o755)
    os.environ["FIOLAKE_TEST_SECRET"] = "hunter2"
    try:
        fio_parse_only("[a]\nrw=read\n", fio=str(spy))
    finally:
        del os.environ["FIOLAKE_TEST_SECRET"]
    seen = seen_file.read_text().splitlines()
    assert seen[0] == "/"
    assert "PATH=/usr/bin:/bin" in seen
    assert "hunter2" not in "\n".join(seen) and not any(s.startswith("HOME=") for s in seen)
    # the file comes on stdin: no temporary file for a killed runner to leave behind
    assert seen[-3:] == ["--parse-only -", "[a]", "rw=read"]


def test_expected_seconds_follows_stonewalls() -> None:
    def secs(text: str) -> float:
        return expected_seconds(check_job_file(text))

    assert secs("[a]\nruntime=10\nramp_time=2\n[b]\nruntime=5\n") == 12  # parallel
    assert secs("[a]\nruntime=10\nramp_time=2\n[b]\nruntime=5\nstonewall\n") == 17
    assert secs("[a]\nruntime=10\n[b]\nruntime=5\nnew_group\n") == 10  # new_group is parallel
    assert secs("[global]\nstonewall\nruntime=500ms\n[a]\n[b]\n[c]\nruntime=1m\n") == 61
    assert secs("[a]\nwait_for_previous\nruntime=3\n[b]\nwait_for_previous\nruntime=4\n") == 7


def test_allowlist_matches_the_fio_we_run() -> None:
    def fio_help(arg: str) -> str:
        return subprocess.run(["fio", arg], capture_output=True, text=True, check=True).stdout

    listed = (
        fio_help("--cmdhelp=all") + fio_help("--enghelp=io_uring") + fio_help("--enghelp=libaio")
    )
    names = {line.split(":")[0].strip() for line in listed.splitlines() if ":" in line}
    assert set(allowed_options()) - names == set(NEWER_FIO_OPTIONS)
    for alias, main in ALIASES.items():
        if alias not in NEWER_FIO_ALIASES:  # those: tests/runner/test_fio_versions.py
            assert f"alias: {alias}" in fio_help(f"--cmdhelp={main}"), alias
    assert allowed_options() == ALLOWED and allowed_options() is not ALLOWED


def test_validate_says_what_bounds_each_job(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from fiolake.cli import cli

    (tmp_path / "read.fio").write_text("[a]\nrw=read\nsize=1m\n")
    (tmp_path / "dev.fio").write_text(
        "[t]\nrw=randtrim\nbs=64k\n[w]\nrw=write\nsize=1g\nruntime=30\n[v]\nrw=read\n"
        "size=4k\nloops=3\n[x]\nrw=read\nruntime=5\ntime_based=1\nramp_time=2\n"
    )
    result = CliRunner().invoke(cli, ["validate", str(tmp_path / "read.fio"), "random-reads"])
    assert result.output == (
        "ok  read: 1 job(s), size-bound: 1.0 MiB\n"  # not the runtime cap it would get
        "ok  random-reads: 1 job(s), time-bound: 15 s\n"
    )
    on_device = CliRunner().invoke(
        cli, ["validate", str(tmp_path / "dev.fio"), "--target", "device"]
    )
    assert on_device.output == (
        "ok  dev: 4 job(s), size-bound: whole device; size-bound: 1.0 GiB, or time-bound: "
        "30 s if that comes first; size-bound: 12.0 KiB; time-bound: 7 s\n"
    )
    on_dir = CliRunner().invoke(cli, ["validate", str(tmp_path / "dev.fio")])
    assert on_dir.exit_code == 1
    assert f"[t] rw=randtrim: trims (discards) data; {ON_DEVICE}" in on_dir.output
