"""The app's cached answers last as long as the lake's state, not a fixed time."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.lake import Lake, connect
from fiolake.app import common
from tests.aggregator import lakegen
from tests.app.conftest import Started

READ = ("job1", "read")
calls: list[str] = []


def count_runs(lake: Lake) -> int:
    calls.append(lake.url)
    return lake.con.sql("SELECT count(*) FROM runs").fetchone()[0]


@pytest.fixture(autouse=True)
def _empty_cache() -> Iterator[None]:
    common._cached_call.clear()
    calls.clear()
    yield
    common._cached_call.clear()


def test_an_answer_outlives_the_lake_reopened_with_nothing_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = lakegen.local_store(tmp_path)
    lakegen.write_campaign(store, "night-1", {"nvme": {READ: {"iops": 1000}}}, 2)
    compact(store, grace=timedelta(0))
    with connect(str(tmp_path)) as lake:
        assert common.run_or_stop(count_runs, lake) == 2
    # The app reopens the lake every minute: a new Lake object of the same state.
    with connect(str(tmp_path)) as lake:
        assert common.run_or_stop(count_runs, lake) == 2
    assert len(calls) == 1
    lakegen.write_campaign(store, "night-2", {"nvme": {READ: {"iops": 900}}}, 1)
    with connect(str(tmp_path)) as lake:
        assert common.run_or_stop(count_runs, lake) == 3  # a new commit: asked again
    assert len(calls) == 2


def test_cached_answers_have_no_time_limit() -> None:
    # st.cache_data with ttl set expires entries after it: a lake reopened every minute
    # recomputed every page's queries. The state in the key is what invalidates.
    assert common._cached_call._info.ttl is None  # type: ignore[attr-defined]


def test_pages_ask_the_lake_only_through_the_cache() -> None:
    """Every library call a page makes with the lake goes through run_or_stop (cached per
    lake state) or call_or_stop (live objects, user queries): an uncached query reruns on
    every interaction, and at 100,000 runs each costs tens to hundreds of ms."""
    import ast

    app = Path(__file__).parents[2] / "app"
    direct = []
    for path in [app / "Home.py", *sorted((app / "views").glob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            first = node.args[0]
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            wrapped = name in ("run_or_stop", "call_or_stop")
            if isinstance(first, ast.Name) and first.id == "lake" and not wrapped:
                direct.append(f"{path.name}:{node.lineno} {name}")
    assert direct == []


def _app_lake(root: Path, monkeypatch: pytest.MonkeyPatch, backends: dict) -> None:
    """A lake of one campaign as the app's FIOLAKE_LAKE (2 runs a backend)."""
    lakegen.write_campaign(lakegen.local_store(root), "nightly", backends, 2, jitter=0.02)
    monkeypatch.setenv("FIOLAKE_LAKE", str(root))


def test_the_server_warm_up_opens_the_lake_for_the_first_visit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fiolake.app import serve

    store = lakegen.local_store(tmp_path)
    lakegen.write_campaign(store, "night-1", {"nvme": {READ: {"iops": 1000}}}, 2)
    monkeypatch.setenv("FIOLAKE_LAKE", str(tmp_path))
    opened: list[str] = []
    real = common.open_lake
    monkeypatch.setattr(common, "open_lake", lambda url: opened.append(url) or real(url))
    monkeypatch.setattr(serve, "warmed", threading.Event())
    common._open.clear()
    try:
        serve.warm()  # what `fiolake app` runs in the server while Streamlit starts
        assert serve.warmed.is_set()
        assert opened == [str(tmp_path)]
        lake = common._open(common.lake_url())  # the first page's call: already open
        assert opened == [str(tmp_path)]
        assert lake.snapshot.commits.num_rows == 2
        # Home's questions are answered too, under the keys Home asks with: a stand-in
        # with the same name that fails if called gets the warm answer back.
        for module, name in (("report.headline", "landing"), ("rows.series", "overview")):

            def not_again(_lake: Lake) -> None:
                raise AssertionError("the first visit recomputed a warm answer")

            not_again.__module__, not_again.__qualname__ = f"fiolake.aggregator.{module}", name
            assert common.run_or_stop(not_again, lake) is not None
    finally:
        common._open.clear()


def test_the_server_is_ready_only_once_warm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Streamlit's health check (what readiness probes and the page itself poll) says
    "not ready" until the warm-up has ended, then what Streamlit says."""
    import asyncio

    from streamlit.runtime.runtime import Runtime, RuntimeState

    from fiolake.app import serve

    monkeypatch.setattr(serve, "warmed", threading.Event())
    # monkeypatch puts Streamlit's own check back afterwards
    original = Runtime.__dict__["is_ready_for_browser_connection"]
    monkeypatch.setattr(Runtime, "is_ready_for_browser_connection", original)
    assert serve.hold_readiness_until_warm()
    runtime = Runtime.__new__(Runtime)  # the state is all the check reads
    runtime._state = RuntimeState.NO_SESSIONS_CONNECTED

    def ready() -> tuple[bool, str]:
        return asyncio.run(runtime.is_ready_for_browser_connection)  # type: ignore[arg-type]

    assert ready() == (False, "warming up: opening the lake")
    serve.warmed.set()
    assert ready() == (True, "ok")
    runtime._state = RuntimeState.STOPPING  # Streamlit's own answer still counts
    assert ready()[0] is False


def test_fiolake_app_starts_streamlit_through_the_warm_up(tmp_path: Path, started: Started) -> None:
    from click.testing import CliRunner

    from fiolake.cli import app as app_command

    result = CliRunner().invoke(app_command.app, ["--lake", str(tmp_path), "--port", "8599"])
    assert result.exit_code == 0, result.output
    assert started.cmd[1:5] == [
        "-m",
        "fiolake.app.serve",
        "run",
        str(Path(common.__file__).resolve().with_name("main.py")),
    ]


def test_the_warm_up_answers_what_latency_timeseries_trends_and_gate_ask_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once Home has drawn, the server answers the Latency, Timeseries and Trends pages'
    menus and default views (`serve.warm_pages`) under the keys the pages ask with: with
    the lake's connection closed behind the warm-up, any question a first visit asked
    again would fail on the page; it shows its charts instead."""
    from streamlit.testing.v1 import AppTest

    from fiolake.app import serve

    backends = {"nvme": {READ: {"iops": 1000}}, "ceph": {READ: {"iops": 600}}}
    _app_lake(tmp_path, monkeypatch, backends)
    later = lakegen.T0 + timedelta(days=1)  # a second night: the Gate page's question
    lakegen.write_campaign(lakegen.local_store(tmp_path), "nightly-2", backends, 2,
                           jitter=0.02, start=later)  # fmt: skip
    monkeypatch.setattr(serve, "warmed", threading.Event())
    common._open.clear()
    pages = Path(__file__).parents[2] / "fiolake" / "app" / "views"
    try:
        serve.warm()
        serve.warm_pages()  # what Home starts once it has drawn (`warm_pages_after`)
        common._open(common.lake_url()).con.close()  # nothing can be asked again
        for name in ("2_Latency.py", "3_Timeseries.py", "4_Trends.py", "8_Gate.py"):
            at = AppTest.from_file(str(pages / name), default_timeout=30).run()
            assert not at.exception, (name, at.exception)
            assert not at.error, (name, [e.value for e in at.error])
            if name == "8_Gate.py":
                assert "**nightly-2** against **nightly**" in at.markdown[0].value
            else:
                assert len(at.get("vega_lite_chart")) >= 1, name
    finally:
        common._open.clear()


def test_home_starts_warming_the_other_pages_once_it_has_drawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from streamlit.testing.v1 import AppTest

    from fiolake.app import serve

    _app_lake(tmp_path, monkeypatch, {"nvme": {READ: {"iops": 1000}}})
    monkeypatch.setattr(serve, "_pages_warmed", threading.Event())
    started = threading.Event()
    monkeypatch.setattr(serve, "warm_pages", started.set)
    home = Path(__file__).parents[2] / "fiolake" / "app" / "Home.py"
    for _ in range(2):  # once per server, whatever the visits
        at = AppTest.from_file(str(home), default_timeout=30).run()
        assert not at.exception
    assert started.wait(10)
    assert serve._pages_warmed.is_set()
