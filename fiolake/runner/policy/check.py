"""The job-file policy: fio job files are untrusted input, even when signed.

Allowlist, deny everything else: `check_job_file` reads the file (`runner.policy.jobfile`), refuses
every option that runs commands, loads code, names paths or devices, trims, or escapes the
caps, and reports all problems at once. `canonical_job_file` then writes the only text fio
ever sees, and `fio_parse_only` has fio itself check it. See docs/job-file-policy.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import fields, replace
from pathlib import Path

from fiolake.errors import FioError, PolicyError
from fiolake.runner.fio.binary import FIO_INSTALL_HINT
from fiolake.runner.policy.blocktarget import BlockTarget, beyond_device
from fiolake.runner.policy.checks import (
    CAP_FLAGS,
    Caps,
    above,
    job_caps,
    occurrence_problem,
    writes_nothing,
)
from fiolake.runner.policy.duration import too_long
from fiolake.runner.policy.hostfio import check_host_fio
from fiolake.runner.policy.jobfile import (
    JobFile,
    JobSection,
    Occurrence,
    name_problem,
    parse_job_file,
    scan_job_file,
)
from fiolake.runner.policy.options import ALIASES, ALLOWED
from fiolake.units import seconds_or_none

__all__ = [
    "BlockTarget",
    "CAP_FLAGS",
    "Caps",
    "JobFile",
    "JobSection",
    "allowed_options",
    "allowed_options_markdown",
    "apply_overrides",
    "canonical_job_file",
    "check_host_fio",
    "check_job_file",
    "expected_seconds",
    "fio_parse_only",
    "parse_job_file",
]


# The runner's own [global]: logs land in fio's cwd (the private output dir).
RUNNER_GLOBAL = (
    ("log_avg_msec", "1000"),
    ("log_hist_msec", "1000"),  # per-second completion-latency histograms (clat_hist logs)
    ("per_job_logs", "1"),
    ("verify_state_save", "0"),
    ("allow_file_create", "1"),
)

_UNSAFE = set("$;#\\:\n\r") | {chr(c) for c in range(32)} | {chr(127)}


def check_job_file(
    text: str,
    caps: Caps = Caps(),  # noqa: B008 - frozen default
    block: BlockTarget | None = None,
) -> JobFile:
    """Parse and judge a job file; PolicyError lists every violation, in file order.

    With `block`, the target is a raw device (runner.policy.blocktarget): trims are
    allowed, options that choose or delete files are not (`apply_overrides` then checks
    that the job fits on it)."""
    scan = scan_job_file(text)
    problems = list(scan.problems)
    # ioengine=null writes nothing: size caps do not apply where every job it reaches is null.
    null_caps = replace(caps, max_size_bytes=sys.maxsize)
    null_only = {s.name: writes_nothing(s.options) for s in scan.job.jobs}
    null_only["global"] = bool(scan.job.jobs) and all(null_only.values())
    for occ in scan.occurrences:
        own_caps = null_caps if null_only.get(occ.section) else caps
        message = occurrence_problem(occ, own_caps, block=block is not None)
        if message:
            problems.append((occ.line, message))
    problems.sort(key=lambda p: p[0])
    messages = [m for _, m in problems] + job_caps(scan.job, caps)
    if messages:
        raise PolicyError(messages)
    return scan.job


def apply_overrides(
    job: JobFile,
    *,
    runtime_s: int | None,
    size_bytes: int | None,
    caps: Caps = Caps(),  # noqa: B008 - frozen default
    block: BlockTarget | None = None,
) -> JobFile:
    """Apply --runtime/--size to every job and give every job a runtime, so fio always ends.

    A job without a runtime gets the runtime cap; one whose rate, loops or thinktime mean it
    could not finish within that cap is refused (runner.policy.duration).

    --size sets size= and drops filesize/io_size (they were relative to the old size; fio
    then splits size evenly over nrfiles). time_based stays as the job file had it.
    On a device target (`block` of a known size) every job must fit on the device.
    """
    problems = [
        f"{flag}={value}: {'must be at least 1' if value < 1 else above(cap, name, unit)}"
        for flag, value, cap, name, unit in (
            ("--runtime", runtime_s, caps.max_runtime_s, "max_runtime_s", " s"),
            ("--size", size_bytes, caps.max_size_bytes, "max_size_bytes", "bytes"),
        )
        if value is not None and not 1 <= value <= cap
    ]
    if problems:
        raise PolicyError(problems)
    sections = []
    for section in job.jobs:
        opts = dict(section.options)
        if runtime_s is not None:
            opts["runtime"] = str(runtime_s)
        if size_bytes is not None:
            opts["size"] = str(size_bytes)
            opts.pop("filesize", None)
            opts.pop("io_size", None)
        sections.append(JobSection(name=section.name, options=opts))
    # Before the cap becomes their runtime: a job that could not finish within it is refused.
    messages = too_long(JobFile(jobs=sections), caps.max_runtime_s)
    for section in sections:
        if not seconds_or_none(section.options.get("runtime", "")):
            section.options["runtime"] = str(caps.max_runtime_s)
    result = JobFile(jobs=sections)
    messages += job_caps(result, caps)
    if block is not None:
        messages += beyond_device(result, block)
    if messages:
        raise PolicyError(messages)
    return result


_NO_CAPS = Caps(**{f.name: sys.maxsize for f in fields(Caps)})


def _safe_path(label: str, value: str) -> str:
    if any(c in _UNSAFE for c in value):
        raise PolicyError(
            [
                f"{label} {value!r}: fio can't use a path containing ':', ';', '#', '$', '\\' "
                "or control characters; choose another"
            ]
        )
    return value


def canonical_job_file(
    job: JobFile, *, target_dir: Path, log_prefix: str = "fio", block: BlockTarget | None = None
) -> str:
    """The job file fio runs: the runner's [global], then one self-contained section per job.

    Every option is re-checked (a JobFile can be built by hand), written as key=value.
    On a device target (`block`) fio's only file is the device (`filename=`, instead of
    `directory=`), and fio may not create a file where the device node should be.
    """
    prefix = _safe_path("log prefix", log_prefix)
    if "/" in prefix or not prefix:
        raise PolicyError([f"log prefix {prefix!r}: must be a plain name (logs stay in fio's cwd)"])
    lines = ["; written by fiolake: the runner's settings, then one section per job", "[global]"]
    if block is None:
        lines.append(f"directory={_safe_path('target dir', os.path.abspath(target_dir))}")
    else:
        lines.append(f"filename={_safe_path('device', block.path)}")
    logs = ("write_bw_log", "write_iops_log", "write_lat_log", "write_hist_log")
    lines += [f"{kind}={prefix}" for kind in logs]
    settings = dict(RUNNER_GLOBAL) | ({"allow_file_create": "0"} if block else {})
    lines += [f"{k}={v}" for k, v in settings.items()]
    problems = []
    for section in job.jobs:
        why = name_problem(section.name)
        if why or section.name.startswith("global") or any(c in _UNSAFE for c in section.name):
            problems.append(f"[{section.name}] section name: {why or 'not usable as a job name'}")
        lines += ["", f"[{section.name}]"]
        ordered = sorted(section.options.items(), key=lambda kv: kv[0] != "ioengine")
        for key, value in ordered:
            occ = Occurrence(0, section.name, key, key, value, tainted=False)
            message = occurrence_problem(occ, _NO_CAPS, block=block is not None)
            if message is None and any(c in _UNSAFE - {":", "\\"} for c in key + value):
                message = f"[{section.name}] {key}={value!r}: holds a character fio would interpret"
            if message:
                problems.append(message)
            lines.append(f"{key}={value}")
    if problems:
        raise PolicyError(problems)
    return "\n".join(lines) + "\n"


def expected_seconds(job: JobFile) -> float:
    """Wall time fio should need: runtime + ramp_time, max within a stonewall group, summed.

    Only stonewall serialises jobs; new_group just starts a reporting group and its jobs run
    alongside the ones before it. Jobs without a runtime count as 0 (apply overrides first).
    """
    total = group = 0.0
    for i, section in enumerate(job.jobs):
        opts = section.options
        if i > 0 and opts.get("stonewall", "0") != "0":
            total, group = total + group, 0.0
        own = (seconds_or_none(opts.get("runtime", "")) or 0.0) + (
            seconds_or_none(opts.get("ramp_time", "")) or 0.0
        )
        group = max(group, own)
    return total + group


def fio_parse_only(canonical_text: str, fio: str) -> None:
    """Second gate: fio (an absolute path from `fio_binary.find_fio`) parses the canonical
    file, given on its standard input (`fio --parse-only -`).

    Runs with a clean environment (PATH=/usr/bin:/bin only) and cwd=/; PolicyError
    carries fio's message when it refuses the file. Nothing is written: a temporary
    directory for the file was left behind by every runner killed while fio parsed.
    """
    try:
        proc = subprocess.run(
            [fio, "--parse-only", "-"],
            input=canonical_text,
            cwd="/",
            env={"PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=60,
        )
    except OSError as exc:
        raise FioError(f"cannot start {fio}: {exc.strerror} — {FIO_INSTALL_HINT}") from exc
    except subprocess.TimeoutExpired as exc:
        raise FioError("fio --parse-only did not finish within 60 s") from exc
    if proc.returncode == 0:
        return
    lines: list[str] = []
    for line in (proc.stderr + "\n" + proc.stdout).splitlines():
        # Indented lines are fio's table of valid values; the message lines are not indented.
        if line.strip() and not line[0].isspace() and line.strip() not in lines:
            lines.append(line.strip())
    if not lines:
        lines = [f"failed with exit code {proc.returncode}"]
    raise PolicyError([f"fio --parse-only: {line}" for line in lines])


def allowed_options() -> dict[str, str]:
    """Every option a job file may use (canonical name -> one-line note)."""
    return dict(ALLOWED)


def allowed_options_markdown() -> str:
    """The allowlist as a Markdown table (docs/job-file-policy.md embeds it verbatim)."""
    rows = ["| option | aliases | note |", "|---|---|---|"]
    for name, note in ALLOWED.items():
        aliases = ", ".join(f"`{a}`" for a, main in ALIASES.items() if main == name)
        rows.append(f"| `{name}` | {aliases} | {note.replace('|', '/')} |")
    return "\n".join(rows) + "\n"
