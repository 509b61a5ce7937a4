"""`python -m fiolake.app.serve run Home.py [streamlit flags]`: Streamlit, warmed.

`fiolake app` starts Streamlit through this module so that, while the server boots, a
background thread imports what the pages import and opens the lake into the app's
resource cache (`common._open`, shared by every session of this process). Without it
the first visit of Home paid for all of it: at 100,000 runs 4.4 s to settle, of which
the page's imports ~0.9 s and opening the lake 0.4-0.7 s (BENCHMARKS.md, issue 24).
A visit that arrives first waits on the same cache entry instead of opening it twice
(Streamlit's per-key compute lock). Errors are left for the page to show.
"""

from __future__ import annotations

import logging
import sys
import threading

log = logging.getLogger(__name__)


def warm() -> None:
    """Import the pages' modules and open the lake of FIOLAKE_LAKE into the app's cache,
    then run the Home page's comparison once (its files land in DuckDB's caches)."""
    try:
        import altair  # noqa: F401  (the charts)

        from fiolake.aggregator.headline import landing
        from fiolake.app import charts, common  # noqa: F401

        lake = common._open(common.lake_url())
        landing(lake)
    except Exception:  # noqa: BLE001 - the page reports the same error to its reader
        log.debug("warming the app failed", exc_info=True)


def main(argv: list[str]) -> None:
    """Start the warm-up thread, then Streamlit's command line with `argv`."""
    threading.Thread(target=warm, name="fiolake-warm", daemon=True).start()
    from streamlit.web import cli

    sys.argv = ["streamlit", *argv]
    cli.main()


if __name__ == "__main__":
    main(sys.argv[1:])
