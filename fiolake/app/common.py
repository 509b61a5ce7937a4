"""Shared pieces of the Streamlit pages: the cached lake, error display, human tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st

from fiolake.aggregator.lake.columns import format_value
from fiolake.aggregator.lake.lake import Lake, open_lake
from fiolake.app.login import require_reader
from fiolake.config import Settings
from fiolake.errors import FiolakeError

REFRESH_S = 60  # new runs show up within a minute (or on "Reload lake")


@st.cache_resource(ttl=REFRESH_S, show_spinner="Reading the lake…")
def _open(url: str) -> Lake:
    return open_lake(url)


def lake_url() -> str:
    """The lake the app shows: FIOLAKE_LAKE (set by `fiolake app`), else ./lake."""
    return Settings.from_env().lake


def get_lake() -> Lake:
    """The lake, opened once per minute for all sessions; stops the page on errors (and
    for a reader the login has not let in)."""
    require_reader()
    url = lake_url()
    with st.sidebar:
        st.caption(f"Lake: `{url}`")
        if st.button("Reload lake"):
            _open.clear()
            _cached_call.clear()
    try:
        return _open(url)
    except FiolakeError as exc:
        st.error(str(exc))
        st.stop()
        raise  # unreachable: st.stop() ends the script run


# No TTL: a result is keyed by what the lake holds (commits only grow; compaction and
# pruning write a new generation), so it stays right until that state changes, and a
# lake reopened every minute with nothing new keeps every page's answers (at 100,000
# runs recomputing them took seconds per page). max_entries bounds the memory.
@st.cache_data(show_spinner=False, max_entries=500)
def _cached_call(name: str, state: tuple, _fn: Any, _lake: Lake, *args: Any, **kwargs: Any) -> Any:
    # Keyed by the function's name, the lake's state and the arguments; the function and
    # the lake object are not hashed (leading "_").
    return _fn(_lake, *args, **kwargs)


def run_or_stop(fn: Any, lake: Lake, *args: Any, **kwargs: Any) -> Any:
    """Call an aggregator function on `lake`, its result cached for this state of the
    lake; show its error and stop the page if it fails."""
    name = f"{fn.__module__}.{fn.__qualname__}"
    state = (
        lake.url,
        lake.snapshot.commits.num_rows,
        lake.compacted.generation if lake.compacted else 0,
    )
    return call_or_stop(_cached_call, name, state, fn, lake, *args, **kwargs)


def call_or_stop(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call `fn` uncached (live objects, user queries); show its error and stop the page
    if it fails."""
    try:
        return fn(*args, **kwargs)
    except FiolakeError as exc:
        st.error(str(exc))
        st.stop()
        raise


def human_frame(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> pd.DataFrame:
    """A table with raw values shown in human units (by column name)."""
    data = [[format_value(c, v) for c, v in zip(columns, row, strict=True)] for row in rows]
    return pd.DataFrame(data, columns=list(columns))
