"""`python -m fiolake.app.serve run main.py [streamlit flags]`: Streamlit, warmed before ready.

`fiolake app` starts Streamlit through this module so that, while the server boots, a
background thread imports what the pages import, opens the lake into the app's resource
cache (`common._open`, shared by every session of this process) and answers the landing
page's questions into the app's data cache (`common.run_or_stop`, the same keys the page
uses). Without it the first visit of Home paid for all of it: at 100,000 runs 4.4 s to
settle, of which the page's imports ~0.9 s, opening the lake 0.4-0.7 s and the landing
comparison ~0.6 s (BENCHMARKS.md, issue 24).

The server says it is ready (`/_stcore/health` answers 200) only once that warm-up has
ended, as a readiness probe expects: a load balancer, Kubernetes' readiness check, or a
browser opened early (Streamlit's page polls the same endpoint and waits until it
answers) sends its first visit to a warm server. A warm-up that fails still ends (the
page shows the same error to its reader), and one that takes longer than `WARM_LIMIT_S`
stops holding readiness back. Streamlit has no public hook for readiness: the check wraps
`Runtime.is_ready_for_browser_connection` (Streamlit >= 1.67, pinned), and if that
attribute ever goes away the server is ready as Streamlit says (logged).
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

log = logging.getLogger(__name__)

WARM_LIMIT_S = 60.0  # a lake this slow to open should not keep the app unreachable
warmed = threading.Event()


def warm() -> None:
    """Import the pages' modules, open the lake of FIOLAKE_LAKE into the app's cache and
    answer the Home page's questions into the app's data cache; set `warmed` at the end
    (the other pages' first questions wait for Home: `warm_pages_after`)."""
    try:
        import altair  # noqa: F401  (the charts)

        from fiolake.aggregator.report.headline import landing
        from fiolake.aggregator.rows.series import overview
        from fiolake.app import charts, common, login  # noqa: F401

        lake = common._open(common.lake_url())
        # Through the page's own cached call: the same function, lake state and arguments
        # give the same cache key, so the first visit reads these answers.
        common.run_or_stop(landing, lake)
        common.run_or_stop(overview, lake)
    except BaseException:  # noqa: BLE001 - st.stop() outside a page, or the lake's error:
        log.debug("warming the app failed", exc_info=True)  # the page reports it
    finally:
        warmed.set()


_pages_warmed = threading.Event()  # warm_pages started in this server

READERS_QUIET_S = 1.0  # the browser still draws a page (charts, tables) after its run ends


class Readers:
    """The readers' script runs in this server, so that the warm-up asks only while none
    runs: on the two cores of the 1,000,000-run bench, a warm-up question beside a first
    visit made Home 0.2 s and Compare 0.4 s slower (BENCHMARKS.md, issue 44)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._running = 0
        self._ended = time.monotonic()

    @contextmanager
    def running(self) -> Iterator[None]:
        """Around one script run (the entry script wraps every page in it)."""
        with self._changed:
            self._running += 1
        try:
            yield
        finally:
            with self._changed:
                self._running -= 1
                self._ended = time.monotonic()
                self._changed.notify_all()

    def wait_quiet(self, quiet_s: float = READERS_QUIET_S) -> None:
        """Return once no script has run for `quiet_s` (at once if none ran so long)."""
        with self._changed:
            while True:
                if self._running:
                    self._changed.wait()
                    continue
                left = quiet_s - (time.monotonic() - self._ended)
                if left <= 0:
                    return
                self._changed.wait(left)


readers = Readers()


def warm_pages_after() -> None:
    """Start `warm_pages` on a thread, once per server: Home calls it when it has drawn.
    Started at readiness instead, it shared the two cores with the first visit, which
    then took 4.7 s instead of ~2.8 s on the 1,000,000-run lake."""
    if _pages_warmed.is_set():
        return
    _pages_warmed.set()
    threading.Thread(target=warm_pages, name="fiolake-warm-pages", daemon=True).start()


def warm_pages() -> None:
    """Answer what the Latency, Timeseries, Trends and Gate pages ask before anyone picks
    (their menus and default views, `app.defaults`) into the app's data cache: their first visits on
    the 1,000,000-run lake took 3.4-3.9 s, of which these questions 1.0-1.4 s (the
    sweep-profile list reads every result row of a lake without workload hashes). Each
    question waits until readers' script runs have been quiet for a while (`Readers`). A
    page visited before it got there asks as it always did."""
    try:
        from fiolake.aggregator.rows import latency
        from fiolake.aggregator.rows.series import (
            SERIES_METRICS,
            cases_of,
            distinct,
            per_second,
            recent_runs,
            steady_marks,
        )
        from fiolake.aggregator.stats.compare import metric_columns
        from fiolake.aggregator.stats.trend import recent_start, trend
        from fiolake.app import common, defaults

        lake = common._open(common.lake_url())  # the pages' own (cached) lake

        def ask(fn: Any, *args: Any, **kwargs: Any) -> Any:  # each question after readers'
            readers.wait_quiet()
            return common.run_or_stop(fn, *args, **kwargs)

        profiles = ask(latency.profiles_by_runs, lake)
        top = profiles[0] if profiles else None
        runs = ask(recent_runs, lake)
        chosen = defaults.newest_per_backend(runs, top)
        if chosen:
            ask(per_second, lake, chosen, SERIES_METRICS[0])
            ask(steady_marks, lake, chosen)
        backends = ask(distinct, lake, "backend", "status = 'ok'")
        if top is None:
            return
        campaigns = ask(latency.campaigns_of, lake, top)
        ask(latency.jobs_of, lake, top)
        if backends:
            filt = defaults.latency_filter(backends, top, campaigns[0] if campaigns else None)
            ask(latency.percentile_curves, lake, filt, defaults.DEFAULT_LAT_TYPE)
            ask(latency.bins, lake, filt, defaults.DEFAULT_LAT_TYPE)
        sweeps = ask(latency.sweep_profiles, lake)
        if sweeps and backends:
            profile = sweeps[defaults.sweep_index(sweeps)]
            ask(latency.sweep, lake, defaults.profile_filter(backends, profile))
        metrics = ask(metric_columns, lake)
        cases = ask(cases_of, lake, top)
        if metrics and cases and backends:
            metric = metrics[defaults.trends_metric_index(metrics)]
            filt = defaults.profile_filter(backends, top)
            days = defaults.SPANS[defaults.TRENDS_SPAN]
            if days is not None:
                filt = replace(filt, since=ask(recent_start, lake, filt, days))
            ask(trend, lake, metric, filt=filt, bucket="run", case=tuple(cases[0]))
        # Last: the Gate page's newest campaign against its default baseline (the night
        # model's earlier nights: 1.3 s of its first visit on the 1,000,000-run lake). It
        # may fail (one campaign, no earlier one of its jobs): the page says so itself.
        from fiolake.aggregator.stats.gate import gate

        newest = ask(distinct, lake, "campaign_id", "status = 'ok'")
        if len(newest) >= 2:
            ask(gate, lake, newest[-1], None)
    except BaseException:  # noqa: BLE001 - as `warm`: the page shows what failed
        log.debug("warming the pages failed", exc_info=True)


def hold_readiness_until_warm() -> bool:
    """Make Streamlit's health check answer "not ready" until `warmed` is set (or
    WARM_LIMIT_S has passed). Returns False when this Streamlit has no such check."""
    from streamlit.runtime.runtime import Runtime

    original = Runtime.__dict__.get("is_ready_for_browser_connection")
    if not isinstance(original, property) or original.fget is None:
        log.warning("this Streamlit has no readiness check to hold: the app is ready cold")
        return False
    ready_as_streamlit_says = original.fget

    async def ready(runtime: Any) -> tuple[bool, str]:
        ok, message = await ready_as_streamlit_says(runtime)
        if ok and not warmed.is_set():
            return False, "warming up: opening the lake"
        return ok, message

    Runtime.is_ready_for_browser_connection = property(ready)  # type: ignore[method-assign,assignment]
    return True


def _release_after_limit() -> None:
    if not warmed.wait(WARM_LIMIT_S):
        log.warning("warming the app took over %.0f s: ready without it", WARM_LIMIT_S)
        warmed.set()


def main(argv: list[str]) -> None:
    """Start the warm-up, hold readiness until it ends, then Streamlit's CLI with `argv`."""
    from streamlit.web import cli  # imported before the warm-up thread imports the pages

    # fiolake's own records (sign-ins, refusals, SQL queries: fiolake.app.login) on stderr,
    # beside Streamlit's; Streamlit configures only its own loggers.
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logging.getLogger("fiolake").addHandler(handler)
    logging.getLogger("fiolake").setLevel(logging.INFO)
    hold_readiness_until_warm()
    threading.Thread(target=warm, name="fiolake-warm", daemon=True).start()
    threading.Thread(target=_release_after_limit, name="fiolake-warm-limit", daemon=True).start()

    sys.argv = ["streamlit", *argv]
    cli.main()


if __name__ == "__main__":
    main(sys.argv[1:])
