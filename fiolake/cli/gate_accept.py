"""`gate accept`: record in the lake that the change a campaign brought is intended.

Reached as `fiolake gate accept …` (`GateCommand` hands the arguments over), so the
gate and its exception live under one name. The record is create-only
(`aggregator.lake.accepted`): who (`--by`, default user@host), when, why.
"""

from __future__ import annotations

from typing import Any

import click

from fiolake.cli import lake_option
from fiolake.cli.common import IdParam, connect


def _default_by() -> str:
    import getpass  # `accept`'s only: every gate imports this module
    import socket

    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


@click.command("accept")
@lake_option
@click.option(
    "--campaign",
    required=True,
    type=IdParam("campaign id"),
    help="The campaign whose change is intended (new firmware, a deliberate trade-off).",
)
@click.option("--reason", required=True, help="Why the change is intended (shown wherever it is).")
@click.option("--by", help="Who accepts it (default: user@host of this machine).")
def accept(lake: str, campaign: str, reason: str, by: str | None) -> None:
    """Accept the change a campaign brought: later gates use it as their default baseline,
    and `regressions` and the Trends page show a change point at it as accepted.

    \b
    Create-only: a campaign is accepted once. On an S3 lake, use the publisher role's
    keys (docs/ci.md).
      fiolake gate accept --campaign nightly-2026-11-24 --reason 'firmware 2.1: cache off'
    """
    from fiolake.aggregator.lake.accepted import accept as record
    from fiolake.aggregator.lake.accepted import check_reason
    from fiolake.aggregator.rows.filters import RunFilter, validate
    from fiolake.config import Settings

    reason = check_reason(reason)
    Settings.from_env(lake=lake).writable_store()  # an S3 lake must pass the store probe
    with connect(lake, ("runs",)) as handle:
        validate(handle, RunFilter(campaign=campaign))
        done = record(handle, campaign, reason, by or _default_by())
    click.echo(f"campaign {done.campaign} {done.words()}", err=True)


class GateCommand(click.Command):
    """`gate`, which also answers `gate accept …` by handing the rest to `accept`."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        if args[:1] == ["accept"]:
            return accept.make_context(f"{info_name} accept", args[1:], parent, **extra)
        return super().make_context(info_name, args, parent, **extra)
