"""App benchmark (a script, not a test): navigation → settled per page in Chromium on the
10,000-run lake, printed beside the same queries through the library.

    .venv/bin/python -m tests.bench.app_pages [--lake DIR|s3://BUCKET/PREFIX] [--repeat 3]

Without --lake it builds the compacted synthetic lake of tests/bench/aggregator.py. A page
has settled when it shows no running indicator and no skeleton for 1.5 s (the quiet
period is not counted). The first visit of the first page also opens the lake (the app
caches it for a minute); later visits reuse it.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path[0] = str(Path(__file__).resolve().parents[2])

from fiolake.aggregator.lake.lake import Lake, open_lake
from fiolake.aggregator.report.headline import landing, landing_scope
from fiolake.aggregator.rows import latency
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.rows.fleet import fleet
from fiolake.aggregator.rows.runlist import list_runs
from fiolake.aggregator.rows.series import cases_of, per_second, recent_runs, steady_marks
from fiolake.aggregator.stats.compare import compare
from fiolake.aggregator.stats.trend import recent_start, trend
from tests.app import browser
from tests.bench.aggregator import build_compacted, timed

GOAL_S = 2.0


def library_queries(lake: Lake) -> dict[str, Callable[[], object]]:
    """What each page asks the library for with its default selections."""
    scope = landing_scope(lake)
    profile = latency.profiles_by_runs(lake)[0]
    job = latency.jobs_of(lake, profile)[0]
    case = cases_of(lake, profile)[0]
    runs = recent_runs(lake)
    newest: dict[str, str] = {}
    for r in runs:
        if r[2] == profile and r[1] not in newest:
            newest[r[1]] = r[0]
    chosen = list(newest.values())[:4]
    backends = tuple(sorted({r[1] for r in runs}))
    pf = RunFilter(backends=backends, profile=profile)

    # The Latency page's curves and bins show the newest campaign of the profile by default.
    newest_campaign = latency.campaigns_of(lake, profile)[0]
    lf = RunFilter(backends=backends, profile=profile, campaign=newest_campaign)

    def latency_page() -> None:
        latency.percentile_curves(lake, lf)
        latency.bins(lake, lf)
        sweeps = latency.sweep_profiles(lake)
        if sweeps:
            latency.sweep(lake, RunFilter(backends=backends, profile=sweeps[0]))

    return {
        "": lambda: landing(lake, scope),
        "Compare": lambda: compare(lake, metrics=["iops"], filt=scope.filter),
        "Latency": latency_page,
        "Timeseries": lambda: (per_second(lake, chosen, "bw_bytes"), steady_marks(lake, chosen)),
        "Trends": lambda: trend(  # the page opens on the last 90 days of the profile's runs
            lake, "iops", filt=replace(pf, since=recent_start(lake, pf, 90)), case=case
        ),
        "Runs": lambda: list_runs(lake, RunFilter()),
        "Fleet": lambda: fleet(lake),
        "SQL": lambda: None,
        "_job": lambda: job,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--lake",
        help="reuse this lake: a directory, or s3://BUCKET/PREFIX with the S3 settings in the "
        'environment (eval "$(fiolake stack env)"); else build one',
    )
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = None
    lake_dir: Path | str | None = args.lake
    if lake_dir is None:
        work = Path(tempfile.mkdtemp(prefix="fiolake-app-bench-"))
        lake_dir = work / "lake"
        start = time.perf_counter()
        build_compacted(lake_dir, args.runs, placeholders=True)
        print(f"built a {args.runs:,}-run lake in {time.perf_counter() - start:.1f} s")
    try:
        start = time.perf_counter()
        # As the app opens it (`open_lake`: the snapshot cache, and the schema digests that
        # let a view of many files bind from one footer), so the figures are the app's.
        with open_lake(str(lake_dir)) as lake:
            opened = time.perf_counter() - start
            queries = library_queries(lake)
            queries.pop("_job")
            lib = {page: timed(fn, args.repeat) for page, fn in queries.items()}
        print(f"lake {lake_dir}: opened by the library in {opened * 1000:.0f} ms")
        settle: dict[str, list[float]] = {p: [] for p in browser.PAGES}
        problems: dict[str, list[str]] = {}
        launched = time.perf_counter()
        with browser.serve_app(lake_dir) as url:
            # `fiolake app` answers its health check once warm (app/serve.py): the wait
            # for it is part of what a user who starts the app sees, so it is printed.
            ready = time.perf_counter() - launched
            with browser.chromium() as context:
                for _ in range(args.repeat + 1):  # round 0 opens the lake: reported apart
                    for page in browser.PAGES:
                        visit = browser.visit(context, url, page)
                        settle[page].append(visit.settle_s)
                        if visit.problems or visit.console_errors:
                            problems[page] = visit.problems + visit.console_errors
        print(
            f"\nnavigation → settled in Chromium (median of {args.repeat} warm visits; "
            "first: the first visit, the lake opened by the first page only), "
            "beside the page's queries through the library (median):"
        )
        print(f"  {'page':<11} {'first':>8} {'settled':>8} {'library':>8}  goal < {GOAL_S:.0f} s")

        def lib_ms(page: str) -> str:  # pages added since library_queries was written: "—"
            return f"{lib[page] * 1000:6.0f}ms" if page in lib else f"{'—':>8}"

        for page, times in settle.items():
            warm = statistics.median(times[1:])
            verdict = "met" if warm < GOAL_S else "MISSED"
            print(f"  {page or 'Home':<11} {times[0]:7.2f}s {warm:7.2f}s {lib_ms(page)}  {verdict}")
        first_home = next(iter(settle.values()))[0]
        print(
            f"  `fiolake app` start → ready (its health check answers): {ready:.2f} s; "
            f"start → first page settled: {ready + first_home:.2f} s"
        )
        for page, found in problems.items():
            print(f"  PROBLEM on {page or 'Home'}: {found[:3]}")
        print("(2-core machine shared with other work: wall times are inflated by the load)")
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
