"""Options and parameter types shared by several subcommands."""

from __future__ import annotations

from typing import Any

import click

from fiolake import layout
from fiolake.errors import FiolakeError
from fiolake.units import parse_duration, parse_size


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
        except FiolakeError as exc:
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
    from fiolake.runner.policy_checks import CAP_FLAGS, Caps

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
    from fiolake.runner.policy_checks import Caps

    return Caps(**click.get_current_context().meta.get(_CAPS_META, {}))


def parse_labels(values: tuple[str, ...]) -> dict[str, str]:
    labels = {}
    for item in values:
        key, sep, val = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--label")
        labels[key] = val
    return labels


def resolve_job_files(job_files: tuple[str, ...]) -> list[tuple[str, str]]:
    """(profile name, job file text) for each argument, or the default suite."""
    from fiolake.runner.profiles import DEFAULT_SUITE, resolve_job_file

    names = job_files or DEFAULT_SUITE
    out = []
    for name in names:
        path = resolve_job_file(name)
        out.append((path.stem, path.read_text()))
    return out


class DurationParam(click.ParamType):
    name = "DURATION"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, int | float):
            return float(value)
        try:
            return parse_duration(str(value))
        except FiolakeError as exc:
            self.fail(str(exc), param, ctx)
