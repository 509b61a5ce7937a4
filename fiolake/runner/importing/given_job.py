"""`fiolake import --job-file`: the job file a document was made from, checked against it.

fio's JSON echoes the options it read (`global options`, each job's `job options`) but
drops every option written without a value — `time_based`, `stonewall`, `norandommap`,
`thread` as bare flags (fio's `add_to_dump_list` keeps a NULL value, which its JSON writer
leaves out). A run rebuilt from the echo alone is therefore another workload than the file
whenever the file has bare flags. Given the file, the import checks that it agrees with
every option fio echoed (a wrong file is refused, naming the first option that differs),
and records the file — plus the options fio was given on its command line, which the
file does not hold — as the run's job file.
"""

from __future__ import annotations

from fiolake.errors import FioError
from fiolake.workload import DEFAULTS, merged_options, normalised_value

MISMATCH_FIX = "give the job file this output was made from, or import without --job-file"


def _disagreement(echoed: list[dict[str, str]], given: list[dict[str, str]]) -> str | None:
    """What the file says differently from fio's echo (None when it agrees): a job count,
    or an option whose values differ (fio's default standing in for an unset one).
    Options only the file holds may be flags (fio does not echo them)."""
    if len(echoed) != len(given):
        return f"fio ran {len(echoed)} job(s), the file has {len(given)}"
    for number, (ran, written) in enumerate(zip(echoed, given, strict=True)):
        for name in [*ran, *(k for k in written if k not in ran)]:
            echo, text = _value(ran, name), _value(written, name)
            if echo == text or (name not in ran and written[name] == "1"):
                continue
            if name in ran:
                shown = f"{echo or '(unset)'} in fio's output, {text or '(unset)'} in the file"
                return f"job {number}: {name} is {shown}"
            return f"job {number}: {name}={text} is in the file but not in fio's output"
    return None


def _value(job: dict[str, str], name: str) -> str:
    default = DEFAULTS.get(name)
    return job.get(name, "" if default is None else normalised_value(name, default))


def _options(text: str) -> list[dict[str, str]]:
    """Each job's normalised options, runtime caps included."""
    return [{k: v for k, (v, _) in job.items()} for job in merged_options(text, caps=True)]


def recorded_job_file(rebuilt: str | None, given: str, document: int) -> str:
    """The job text to record for a document whose echo is `rebuilt`: `given`, led by a
    [global] of the options fio got on its command line (echoed, not in the file).
    FioError when the two disagree."""
    if rebuilt is None:  # fio 2.1 echoed nothing: nothing to check the file against
        return given
    echoed, written = _options(rebuilt), _options(given)
    why = _disagreement(echoed, written)
    if why is not None:
        raise FioError(
            f"document {document}: fio's output disagrees with --job-file ({why}) — {MISMATCH_FIX}"
        )
    ran = merged_options(rebuilt, caps=True)  # the values as fio echoed them: written back as such
    extra = {
        name: written_value
        for name, (value, written_value) in (ran[0] if ran else {}).items()
        if name in echoed[0]
        and all(name not in job for job in written)
        and all(job.get(name, ("",))[0] == value for job in ran)
    }
    if not extra:
        return given
    lines = ["; given to fio on its command line (from its output)", "[global]"]
    return "\n".join([*lines, *(f"{k}={v}" for k, v in extra.items()), "", given])
