"""The names `fiolake sql` queries — a contract — and what one row of each stands for.

The seven lake tables (`layout.TABLES`, columns in `fiolake.schema`) are views over
committed runs only; `commits` indexes those runs; the gang views
(`fiolake.aggregator.lake.gang`) aggregate gang members. `fiolake sql --help` and the docs
list them from here, and a test checks that a connected lake holds exactly these.
Kept free of pyarrow and duckdb so `--help` stays light.
"""

from __future__ import annotations

from fiolake import layout

# Name -> grain: what one row is.
GRAINS: dict[str, str] = {
    "runs": "one committed run attempt",
    "results": "run × fio job × direction",
    "timeseries": "run × job thread × direction × second",
    "percentiles": "run × job × direction × latency type × percentile",
    "disk_util": "run × block device",
    "iodepth": "run × job × kind × depth bucket",
    "latency_bins": "run × job × direction × latency type × fio bucket",
    "commits": "committed run (a gang's: one row per member)",
    "gang_members": "member run of a gang job",
    "gang_seconds": "gang job × job × direction × second",
    "gang_results": "gang job × job × direction",
}
GANG_VIEWS = ("gang_members", "gang_seconds", "gang_results")
VIEWS: tuple[str, ...] = (*layout.TABLES, "commits", *GANG_VIEWS)


def views_help() -> str:
    """The views, one per line (`name  grain`), for `fiolake sql --help`."""
    width = max(len(name) for name in VIEWS)
    return "\n".join(f"  {name:<{width}}  {GRAINS[name]}" for name in VIEWS)
