"""The Streamlit pages run against a synthetic lake (streamlit.testing AppTest)."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fiolake.aggregator.lake.accepted import accept
from fiolake.aggregator.lake.lake import open_lake
from tests.aggregator import lakegen

APP = Path(__file__).parents[2] / "app"
READ = ("job1", "read")


@pytest.fixture
def lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    store = lakegen.local_store(tmp_path / "lake")
    backends = {"nvme": {READ: {"iops": 1000}}, "ceph": {READ: {"iops": 600}}}
    lakegen.write_campaign(store, "nightly", backends, 3, jitter=0.02)
    monkeypatch.setenv("FIOLAKE_LAKE", str(tmp_path / "lake"))
    return tmp_path / "lake"


def page(name: str) -> AppTest:
    at = AppTest.from_file(str(APP / name), default_timeout=30)
    return at.run()


def run_button(at: AppTest):  # noqa: ANN201 - streamlit's Button element
    return next(b for b in at.button if b.label == "Run")


def test_home_answers_first(lake: Path) -> None:
    at = page("Home.py")
    assert not at.exception
    assert "campaign **nightly**" in at.markdown[0].value
    # nvme 1000 vs ceph 600 IOPS (±2 %): baseline ceph (as many runs, first by name)
    assert at.markdown[1].value.startswith("**random-reads** — nvme 1.7× ceph IOPS [1.6×, 1.")
    assert [m.value for m in at.metric][:2] == ["6", "2"]
    assert at.dataframe[0].value["backend"].tolist() == ["ceph", "nvme"]
    assert len(at.get("vega_lite_chart")) == 2  # IOPS and p99 latency tabs


def test_compare_page_shows_the_backends(lake: Path) -> None:
    at = page("views/1_Compare.py")
    assert not at.exception
    table = at.dataframe[0].value
    assert table["backend"].tolist() == ["ceph", "nvme"]  # baseline (first picked) first
    assert table["verdict"].tolist() == ["baseline", "▲ better"]
    assert table["geomean"].tolist() == ["594.0", "990.0"]  # geometric: ±2% jitter, 3 reps
    assert table["vs ceph [95% CI]"].tolist()[0] == "baseline"
    assert table["vs ceph [95% CI]"].tolist()[1].startswith("1.67× [1.6")
    assert len(at.get("vega_lite_chart")) == 1


def test_compare_page_groups_by_file_system(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `run --mkfs xfs --mkfs ext4` on one device: the same backend, two file systems
    store = lakegen.local_store(tmp_path / "lake")
    for fs, iops, start in (("xfs", 1000, lakegen.T0), ("ext4", 500, lakegen.T0 + timedelta(1))):
        metrics = {f"dev-{fs}": {READ: {"iops": iops}}}
        lakegen.write_campaign(store, "fsm", metrics, 3, jitter=0.02, start=start, fs_type=fs)
    monkeypatch.setenv("FIOLAKE_LAKE", str(tmp_path / "lake"))
    at = page("views/1_Compare.py")
    at.selectbox(key="by").set_value("fs_type")
    at.run()
    assert not at.exception
    assert at.multiselect(key="fs_type").value == ["ext4", "xfs"]
    table = at.dataframe[0].value
    assert table["fs_type"].tolist() == ["ext4", "xfs"]
    assert table["verdict"].tolist() == ["baseline", "▲ better"]


def test_chart_pages(lake: Path) -> None:
    for name in ("views/2_Latency.py", "views/3_Timeseries.py", "views/4_Trends.py"):
        at = page(name)
        assert not at.exception, name
        assert len(at.get("vega_lite_chart")) == 1, name


def test_sql_page_row_cap(lake: Path) -> None:
    at = page("views/7_SQL.py")
    at.text_area[0].input("SELECT * FROM range(50) t(n)")
    at.number_input[0].set_value(10)
    run_button(at).click()
    at.run()
    assert not at.exception
    assert "truncated" in at.warning[0].value
    assert len(at.dataframe[0].value) == 10


def test_sql_page_refuses_writes(lake: Path) -> None:
    at = page("views/7_SQL.py")
    at.text_area[0].input("CREATE TABLE x AS SELECT 1")
    run_button(at).click()
    at.run()
    assert "refusing a CREATE statement" in at.error[0].value


def test_empty_lake_shows_the_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIOLAKE_LAKE", str(tmp_path / "none"))
    at = page("Home.py")
    assert at.error[0].value.startswith(f"no results in lake {tmp_path / 'none'}")


def test_trends_page_shows_what_changed_across_a_change_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = lakegen.local_store(tmp_path / "lake")
    for i in range(12):  # IOPS drop by 40 % when the kernel changes
        slow = i >= 6
        lakegen.write_run(
            store, run_id=f"r{i:02d}", job_id=f"j{i:02d}", backend="nvme",
            campaign=f"c{i:02d}",  # one night each: change points count nights
            metrics={READ: {"iops": (600.0 if slow else 1000.0) * (1 + (i % 3 - 1) / 100)}},
            started_at=lakegen.T0 + timedelta(hours=i),
            kernel="6.8.0" if slow else "6.1.0-18-amd64",
        )  # fmt: skip
    monkeypatch.setenv("FIOLAKE_LAKE", str(tmp_path / "lake"))
    at = page("views/4_Trends.py")
    assert not at.exception
    assert at.selectbox(key="change").options == ["nvme · 2025-03-01T18:00Z"]
    assert "last run before `r05`, first after `r06`" in at.markdown[0].value
    diff = at.dataframe[0].value
    assert diff[diff["field"] == "kernel"][["before", "after"]].values.tolist() == [
        ["6.1.0-18-amd64", "6.8.0"]
    ]
    # accepted (`fiolake gate accept`): the page says who, when and why
    with open_lake(str(tmp_path / "lake")) as handle:
        accept(handle, "c06", "kernel 6.8: new scheduler on purpose", "ana@ci-1")
    at = page("views/4_Trends.py")
    assert at.selectbox(key="change").options == ["nvme · 2025-03-01T18:00Z · accepted"]
    assert re.fullmatch(
        r"This change is accepted by ana@ci-1 at \S+: kernel 6\.8: new scheduler on purpose — "
        r"not a regression\.",
        at.success[0].value,
    )


def test_gate_page_sets_the_newest_campaign_against_the_one_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = lakegen.local_store(tmp_path / "lake")
    lakegen.write_campaign(store, "night-1", {"nvme": {READ: {"iops": 1000}}}, 3, jitter=0.02)
    later = lakegen.T0 + timedelta(days=1)
    slower = {"nvme": {READ: {"iops": 700}}}
    lakegen.write_campaign(store, "night-2", slower, 3, jitter=0.02, start=later)
    monkeypatch.setenv("FIOLAKE_LAKE", str(tmp_path / "lake"))
    from fiolake.aggregator.report import gate_report

    offered: list[str] = []  # the download's content, as the page builds it
    real = gate_report.html_report
    monkeypatch.setattr(
        gate_report, "html_report", lambda *a: offered.append(real(*a)) or offered[-1]
    )
    at = page("views/8_Gate.py")
    assert not at.exception
    assert "the gate **fails**" in at.markdown[0].value
    assert "**night-2** against **night-1**" in at.markdown[0].value
    table = at.dataframe[0].value
    assert table["verdict"].tolist()[0] == "▼ worse"  # worst first
    iops = table[table["metric"] == "iops"]
    assert iops["verdict"].tolist() == ["▼ worse"]
    assert not at.get("download_button") and not offered  # built only when asked for
    at.button[0].click().run()
    (download,) = at.get("download_button")
    assert download.proto.label == "Download the HTML report"  # aggregator.report.gate_report
    assert download.proto.url.endswith(".html")
    (report,) = offered  # with the charts and environment the CLI's report has
    assert [report.count(f'<svg class="chart {k}"') for k in ("ratio", "latency", "series")] == [
        1, 1, 1
    ]  # fmt: skip
    assert "<h2>Environment</h2>" in report
    assert "<code>night-2-nvme-r2</code>" in report
    assert any("±5 % minimum effect" in c.value for c in at.caption)  # the result's own


def test_a_gate_markdown_link_opens_the_same_comparison_on_the_gate_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from urllib.parse import parse_qsl, urlsplit

    from click.testing import CliRunner

    from fiolake.cli import cli

    store = lakegen.local_store(tmp_path / "lake")
    for day, iops in ((0, 1000), (1, 1000), (2, 700)):
        lakegen.write_campaign(store, f"night-{day + 1}", {"nvme": {READ: {"iops": iops}}}, 3,
                               jitter=0.02, start=lakegen.T0 + timedelta(days=day))  # fmt: skip
    args = [
        "gate",
        "--lake",
        str(tmp_path / "lake"),
        "--campaign",
        "night-3",
        "--baseline-campaign",
        "night-1",
        "--format",
        "md",
        "--app-url",
        "http://app:8501",
    ]
    res = CliRunner().invoke(cli, args)  # fmt: skip
    assert res.exit_code == 1, res.output
    row = next(line for line in res.stdout.splitlines() if line.startswith("| nvme |"))
    link = urlsplit(row.rsplit("](", 1)[1].split(")", 1)[0])
    assert link.path == "/Gate"  # the page `views/8_Gate.py` is served as
    monkeypatch.setenv("FIOLAKE_LAKE", str(tmp_path / "lake"))
    at = AppTest.from_file(str(APP / "views/8_Gate.py"), default_timeout=30)
    at.query_params.update(dict(parse_qsl(link.query)))
    at = at.run()
    assert not at.exception
    # Not the page's default (night-2, the newest earlier): the link's baseline.
    assert "**night-3** against **night-1**" in at.markdown[0].value
    shown = re.search(r"\[([^\]]+)\]\(http", row)
    assert shown and at.dataframe[0].value["verdict"].tolist()[0] == shown.group(1) == "▼ worse"


def _curve_runs(at: AppTest) -> set[int]:
    """The `runs` of every point of the percentile chart (the page's first chart; its
    data travels as Arrow IPC)."""
    import pyarrow as pa

    (dataset,) = at.get("vega_lite_chart")[0].proto.datasets
    frame = pa.ipc.open_stream(dataset.data.data).read_all()
    return set(frame.column("runs").to_pylist())


def test_latency_page_shows_the_newest_campaign_until_asked_for_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = lakegen.local_store(tmp_path / "lake")
    lakegen.write_campaign(store, "night-1", {"nvme": {READ: {"iops": 1000}}}, 3)
    later = lakegen.T0 + timedelta(days=1)
    lakegen.write_campaign(store, "night-2", {"nvme": {READ: {"iops": 500}}}, 2, start=later)
    monkeypatch.setenv("FIOLAKE_LAKE", str(tmp_path / "lake"))
    at = page("views/2_Latency.py")
    assert not at.exception
    assert at.selectbox(key="campaign").options == ["night-2", "night-1", "all campaigns"]
    assert at.selectbox(key="campaign").value == "night-2"
    assert "(campaign night-2)" in at.caption[0].value
    assert _curve_runs(at) == {2}  # the median over night-2's two runs only
    at.selectbox(key="campaign").set_value("all campaigns").run()
    assert not at.exception
    assert "(all campaigns)" in at.caption[0].value
    assert _curve_runs(at) == {5}


def test_gate_page_says_host_busy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.aggregator.stats.test_gate_host_noise import night

    store = lakegen.local_store(tmp_path / "lake")
    night(store, "night-1", 0, 1000, outside_cpu_pct=3.0, flags=[])  # quiet
    night(store, "night-2", 1, 800, outside_cpu_pct=45.2, flags=["cpu-busy"])  # hogged
    monkeypatch.setenv("FIOLAKE_LAKE", str(tmp_path / "lake"))
    at = page("views/8_Gate.py")
    assert not at.exception
    assert "the gate **passes**" in at.markdown[0].value
    assert "(4 of them host busy (outside CPU 45 %): a run was not alone)" in at.markdown[0].value
    verdicts = set(at.dataframe[0].value["verdict"])
    assert "inconclusive: host busy (outside CPU 45 %)" in verdicts
    assert "Nights: baseline is one night" in at.caption[0].value


def test_trends_page_opens_on_the_last_90_days_of_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = lakegen.local_store(tmp_path / "lake")
    for day in range(0, 200, 2):  # a run every other day for 200 days, long ago (2025)
        lakegen.write_run(
            store, run_id=f"r{day:03d}", job_id=f"j{day:03d}", backend="nvme",
            campaign=f"c{day:03d}", metrics={READ: {"iops": 1000.0 + day % 7}},
            started_at=lakegen.T0 + timedelta(days=day),
        )  # fmt: skip
    monkeypatch.setenv("FIOLAKE_LAKE", str(tmp_path / "lake"))
    at = page("views/4_Trends.py")
    assert not at.exception
    assert at.selectbox(key="span").value == "90 days"
    # counted back from the newest run (day 198): days 108..198, every other day
    assert at.caption[0].value.startswith("46 points; dashed lines")
    at.selectbox(key="span").set_value("all").run()
    assert at.caption[0].value.startswith("100 points; dashed lines")
