"""Options and parameter types shared by several subcommands."""

from __future__ import annotations

import contextlib
import gc
import signal
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import click

from fiolake import layout
from fiolake.errors import UsageProblem
from fiolake.units import human_bytes, parse_duration, parse_size


class IdParam(click.ParamType):
    """A name that goes into object keys (backend, campaign id): fiolake.layout's rule."""

    name = "NAME"

    def __init__(self, kind: str):
        self.kind = kind

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return layout.check_id(self.kind, str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class SizeParam(click.ParamType):
    name = "SIZE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_size(str(value))
        except UsageProblem as exc:  # the parser's only error: a bad value
            self.fail(str(exc), param, ctx)


_CAP_HELP = {
    "max_size_bytes": "Cap on size/filesize/io_size per job.",
    "max_total_bytes": "Cap on data per job file (size x numjobs, summed).",
    "max_numjobs": "Cap on numjobs.",
    "max_iodepth": "Cap on iodepth.",
    "max_runtime_s": "Cap on runtime per job, seconds (also the runtime of jobs that set none).",
    "max_nrfiles": "Cap on nrfiles.",
    "max_jobs": "Cap on job sections per file.",
    "max_buffer_bytes": "Cap on I/O buffer memory (numjobs x iodepth x block size).",
}
_CAPS_META = "fiolake.caps"


def caps_options(fn: Any) -> Any:
    """The job-file policy caps (`--max-size`, ...); read them with `current_caps()`."""
    from fiolake.runner.policy.checks import CAP_FLAGS, Caps

    defaults = Caps()

    def remember(ctx: click.Context, param: click.Parameter, value: int) -> int:
        ctx.meta.setdefault(_CAPS_META, {})[param.name] = value
        return value

    for field, flag in reversed(CAP_FLAGS.items()):
        default = getattr(defaults, field)
        is_bytes = field.endswith("_bytes")
        fn = click.option(
            flag,
            field,
            type=SizeParam() if is_bytes else click.IntRange(1),
            default=default,
            show_default=f"{default // 2**30}G" if is_bytes else True,
            expose_value=False,
            callback=remember,
            help=_CAP_HELP.get(field, "Policy cap."),
        )(fn)
    return fn


def current_caps() -> Any:
    """The Caps given on the current command line (defaults where not given)."""
    from fiolake.runner.policy.checks import Caps

    return Caps(**click.get_current_context().meta.get(_CAPS_META, {}))


def parse_labels(values: tuple[str, ...], option: str = "--label") -> dict[str, str]:
    """KEY=VALUE arguments of `option` as a dict; BadParameter naming the bad one."""
    labels = {}
    for item in values:
        key, sep, val = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint=option)
        labels[key] = val
    return labels


class DurationParam(click.ParamType):
    name = "DURATION"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, int | float):
            return float(value)
        try:
            return parse_duration(str(value))
        except UsageProblem as exc:  # the parser's only error: a bad value
            self.fail(str(exc), param, ctx)


@contextlib.contextmanager
def connect(
    lake: str,
    tables: tuple[str, ...] | None = None,
    kept_rows: bool = True,
    *,
    meanwhile: Sequence[str] = (),
) -> Iterator[Any]:
    """The lake's DuckDB views, of `tables` or all (aggregator.lake.lake.open_lake, imported
    only when a command reads the lake: `--help` stays light), closed after the block. The
    modules `meanwhile` names, which the command needs once connected, are imported on a
    thread while it connects (`import_meanwhile`): they are the analysis extra's (scipy),
    so a missing one is named before the lake is read, as when they were imported first.

    The cyclic garbage collector is off within: a question frees what it makes by
    reference counting, and the collector's passes over the half a million objects its
    imports made found nothing to free yet took 60 ms of a gate's CPU at a million runs,
    the GIL held (0.94–0.97× paired, issue 44). Each command asks one question and ends."""
    if meanwhile:
        from fiolake.cli.extras import require_extras

        require_extras("analysis")
    import_meanwhile(meanwhile)
    from fiolake.aggregator.lake.lake import open_lake

    collecting = gc.isenabled()
    gc.disable()
    try:
        with open_lake(lake, tables, kept_rows) as handle:
            yield handle
    finally:
        if collecting:
            gc.enable()


# Imported after the command's modules: the statistics import scipy.special on first
# use (`aggregator.stats.special`), which this module must not import (numpy).
SCIPY_AHEAD = ("fiolake.aggregator.stats.special", "scipy.special")


def import_meanwhile(modules: Sequence[str]) -> None:
    """Import `modules`, then SCIPY_AHEAD, on a thread. The statistics' imports
    (scipy.special: ~0.3 s of a 1.5 s `gate` on 2 cores, issue 44) then overlap the
    connect and the first queries, which mostly wait on the store and DuckDB with the
    GIL released. The caller's own `import` of one waits for the thread's (the module
    lock) and raises its error, so the thread drops errors; it is not a daemon: the
    interpreter never exits in the middle of an import."""
    if not modules:
        return
    import importlib
    import threading

    def load() -> None:
        for name in (*modules, *SCIPY_AHEAD):
            with contextlib.suppress(Exception):
                importlib.import_module(name)

    threading.Thread(target=load, name="fiolake-imports").start()


def target_options(fn: Any) -> Any:
    """`--dir`, `--create-dir`, `--expect-mount`, `--expect-fs`: measure what the user named."""
    fn = click.option(
        "--expect-fs",
        metavar="TYPE",
        help="File-system type --dir must be on (e.g. xfs, ext4, nfs4, tmpfs); else exit 2.",
    )(fn)
    fn = click.option(
        "--expect-mount",
        metavar="PATH",
        help="Mount point --dir must be on (e.g. /mnt/nvme); else exit 2 before fio starts.",
    )(fn)
    fn = click.option(
        "--create-dir",
        is_flag=True,
        help="Create --dir if it is missing (its mount is still checked).",
    )(fn)
    return click.option(
        "--dir",
        "target_dir",
        type=click.Path(path_type=Path),
        help="Existing, writable directory on the storage under test (fio's files go in a "
        "subdir, removed after). Or --device for a raw block device.",
    )(fn)


# One range for `run` and `publish`: compare and gate advise "~N runs per side would
# confirm", and N passes 100 for noisy storage at the default ±5 % (per-run spread 20 % →
# ~250), so `run` must take it too; 1000 still stops a typo from queuing days of fio.
MAX_REPEAT = 1000


def workload_options(fn: Any) -> Any:
    """`--runtime`, `--size`, `--repeat`: how much fio does, for `run` and `publish` alike."""
    fn = click.option(
        "--repeat",
        type=click.IntRange(1, MAX_REPEAT),
        default=1,
        show_default=True,
        help="Runs of every job file (per backend), for the statistics of compare and gate.",
    )(fn)
    fn = click.option(
        "--size", type=SizeParam(), help="File size per fio job, e.g. 16M (scales profiles down)."
    )(fn)
    return click.option(
        "--runtime", type=click.IntRange(1), help="Seconds per fio job (scales profiles down)."
    )(fn)


def announce_target(checks: list[Any]) -> None:
    """Name on stderr where the target lands, then every warning (once each)."""
    if not checks:
        return
    where = checks[0].target
    free = human_bytes(where.free_bytes)
    click.echo(f"target {where.path}: {where.describe()}, {free} free", err=True)
    for warning in dict.fromkeys(w for c in checks for w in c.warnings):
        click.echo(f"Warning: {warning}", err=True)


class RunStop:
    """SIGTERM/SIGINT while `fiolake run` runs: remember the signal so fio is stopped and
    the run recorded as interrupted, instead of dying with fio left behind."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> RunStop:
        for signum in (signal.SIGTERM, signal.SIGINT):
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def _handle(self, signum: int, frame: object) -> None:
        self.signum = signum

    def reason(self) -> str | None:
        """What `execute(should_stop=...)` asks each second."""
        return "interrupted" if self.signum else None

    def exit_error(self, not_started: int, lake: str) -> click.ClickException:
        """The error to end with: exit 128 + signal number (130 SIGINT, 143 SIGTERM)."""
        assert self.signum is not None
        name = signal.Signals(self.signum).name
        err = click.ClickException(
            f"stopped by {name}: fio was stopped and the run recorded with status "
            f"'interrupted' in {lake}; {not_started} run(s) not started — run again to finish"
        )
        # click types exit_code as a ClassVar, yet reads it from the instance it catches.
        err.exit_code = 128 + self.signum  # type: ignore[misc]
        return err


def host_lock_options(fn: Any) -> Any:
    """`--host-lock PATH` / `--share-host`: one fio per host (fiolake.runner.host.lock);
    turn them into a lock with `host_lock(...)`."""
    from fiolake.runner.host.lock import DEFAULT_PATH, ENV_VAR, SHARED_FLAG

    fn = click.option(
        "--share-host",
        is_flag=True,
        help="Run fio without the host lock, alongside other fio runs on this host; every "
        f"run is flagged '{SHARED_FLAG}' (its numbers include the others' load).",
    )(fn)
    return click.option(
        "--host-lock",
        "host_lock_path",
        type=click.Path(dir_okay=False, path_type=Path),
        envvar=ENV_VAR,
        show_envvar=True,
        default=DEFAULT_PATH,
        show_default=True,
        help="File every fiolake fio on this host locks first, so runs on one host take "
        "turns instead of measuring each other (created if missing; containers mount its "
        "directory from the host).",
    )(fn)


def host_lock(path: Path, share_host: bool, holder: str, *, shared: bool = False) -> Any:
    """The checked HostLock for `--host-lock`, or None under `--share-host` (UsageProblem
    when the lock file cannot be created)."""
    from fiolake.runner.host.lock import HostLock

    if share_host:
        return None
    lock = HostLock(path, shared=shared, holder=holder)
    lock.check()
    return lock


def precondition_option(fn: Any) -> Any:
    """`--precondition JOBFILE_OR_PROFILE` (fiolake.runner.precondition)."""
    return click.option(
        "--precondition",
        metavar="JOBFILE_OR_PROFILE",
        help="Before each measured run, run this job (e.g. the shipped precondition-fill) "
        "on the same files, checked by the same policy. It is stored as a run with "
        "role 'precondition' that the measured run names in preconditioned_by; compare "
        "and the gate never use it. Without the option, a job file's own "
        "'# precondition: NAME' header line applies; 'none' turns both off.",
    )(fn)


# `--precondition none`: no precondition job, not even a job file's own header line.
NO_PRECONDITION = "none"


def resolve_jobs(job_files: tuple[str, ...], precondition: str | None) -> list[Any]:
    """Each job file (or the default suite) as a runner.attempt.NamedJobFile with its
    precondition job: `--precondition` for every file when given (`none`: no file's),
    else the file's own `# precondition: NAME` header line (runner.profiles)."""
    from fiolake.runner.attempt import NamedJobFile
    from fiolake.runner.profiles import DEFAULT_SUITE, header_precondition, resolve_job_file

    given = None
    if precondition is not None and precondition.lower() != NO_PRECONDITION:
        fill_path = resolve_job_file(precondition)
        given = NamedJobFile(fill_path.stem, fill_path.read_text())
    jobs = []
    for name in job_files or DEFAULT_SUITE:
        path = resolve_job_file(name)
        text = path.read_text()
        fill = given
        header = header_precondition(text) if precondition is None else None
        if header is not None:
            try:
                fill_path = resolve_job_file(header, relative_to=path.parent)
            except UsageProblem as exc:
                raise UsageProblem(f"{path} ('# precondition: {header}'): {exc}") from None
            fill = NamedJobFile(fill_path.stem, fill_path.read_text())
        jobs.append(NamedJobFile(path.stem, text, fill))
    return jobs


def label_option(fn: Any) -> Any:
    """`--label KEY=VALUE` (repeatable), recorded in runs.labels by `run` and `runner`;
    the command reads it with `parse_labels`."""
    return click.option(
        "--label", multiple=True, metavar="KEY=VALUE", help="Recorded in runs.labels."
    )(fn)
