"""Options and parameter types shared by several subcommands."""

from __future__ import annotations

from typing import Any

import click

from fiolake.errors import FiolakeError


def parse_size(value: str) -> int:
    """Bytes from '16M', '1g', '4096' (fio's own size syntax, binary multiples)."""
    from runner.fio_options import size_or_none

    size = size_or_none(value)
    if size is None or size <= 0:
        raise ValueError(f"{value!r} is not a size")
    return size


class SizeParam(click.ParamType):
    name = "SIZE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_size(str(value))
        except (ValueError, FiolakeError):
            self.fail(f"{value!r} is not a size: use e.g. 16M, 1G or a number of bytes", param, ctx)


def caps_options(fn: Any) -> Any:
    """Policy caps shared by `run` and `validate`."""
    from runner.policy import Caps

    defaults = Caps()
    opts = [
        click.option(
            "--max-size",
            type=SizeParam(),
            default=defaults.max_size_bytes,
            show_default="64G",
            help="Cap on size/filesize/io_size per job.",
        ),
        click.option(
            "--max-numjobs",
            type=click.IntRange(1),
            default=defaults.max_numjobs,
            show_default=True,
            help="Cap on numjobs.",
        ),
        click.option(
            "--max-iodepth",
            type=click.IntRange(1),
            default=defaults.max_iodepth,
            show_default=True,
            help="Cap on iodepth.",
        ),
        click.option(
            "--max-runtime",
            type=click.IntRange(1),
            default=defaults.max_runtime_s,
            show_default=True,
            help="Cap on runtime per job, seconds.",
        ),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def caps_from(max_size: int, max_numjobs: int, max_iodepth: int, max_runtime: int) -> Any:
    from runner.policy import Caps

    return Caps(
        max_size_bytes=max_size,
        max_numjobs=max_numjobs,
        max_iodepth=max_iodepth,
        max_runtime_s=max_runtime,
    )


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
    from runner.profiles import DEFAULT_SUITE, resolve_job_file

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
        from fiolake.units import parse_duration

        if isinstance(value, int | float):
            return float(value)
        try:
            return parse_duration(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
