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
from fiolake.workload import merged_options, option_or_default

MISMATCH_FIX = "give the job file this output was made from, or import without --job-file"


Jobs = list[dict[str, tuple[str, str]]]  # workload.merged_options: (normalised, as written)


def _disagreement(echoed: Jobs, given: Jobs) -> str | None:
    """What the file says differently from fio's echo (None when it agrees): a job count,
    or an option whose values differ (fio's default standing in for an unset one).
    Options only the file holds may be flags (fio does not echo them)."""
    if len(echoed) != len(given):
        return f"fio ran {len(echoed)} job(s), the file has {len(given)}"
    for number, (ran, written) in enumerate(zip(echoed, given, strict=True)):
        for name in [*ran, *(k for k in written if k not in ran)]:
            echo, text = option_or_default(ran, name)[0], option_or_default(written, name)[0]
            if echo == text or (name not in ran and written[name][0] == "1"):
                continue
            if name in ran:
                shown = f"{echo or '(unset)'} in fio's output, {text or '(unset)'} in the file"
                return f"job {number}: {name} is {shown}"
            return f"job {number}: {name}={text} is in the file but not in fio's output"
    return None


def recorded_job_file(rebuilt: str | None, given: str, document: int) -> str:
    """The job text to record for a document whose echo is `rebuilt`: `given`, led by a
    [global] of the options fio got on its command line (echoed, not in the file).
    FioError when the two disagree."""
    if rebuilt is None:  # fio 2.1 echoed nothing: nothing to check the file against
        return given
    # Runtime caps included: here a runtime is what fio was told, cap or not.
    echoed, written = merged_options(rebuilt, caps=True), merged_options(given, caps=True)
    why = _disagreement(echoed, written)
    if why is not None:
        raise FioError(
            f"document {document}: fio's output disagrees with --job-file ({why}) — {MISMATCH_FIX}"
        )
    # The values as fio echoed them are written back as such.
    extra = {
        name: written_value
        for name, (value, written_value) in (echoed[0] if echoed else {}).items()
        if all(name not in job for job in written)
        and all(job.get(name, ("",))[0] == value for job in echoed)
    }
    if not extra:
        return given
    lines = ["; given to fio on its command line (from its output)", "[global]"]
    return "\n".join([*lines, *(f"{k}={v}" for k, v in extra.items()), "", given])
