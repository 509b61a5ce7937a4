"""`fiolake report`: the gate's answer as one self-contained HTML file — every row of the
gate, no external reference but the `--app-url` links, written whole or not at all."""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from fiolake import atomic
from fiolake.aggregator.stats.verdict_text import EQUIVALENT, VERDICT_COLOURS, WORSE
from fiolake.cli import cli
from tests.aggregator import lakegen

READ = ("job1", "read")
APP = "https://fiolake.example/app"
NEW_KERNEL = "6.12.9-amd64"  # campaign B's; A has lakegen's 6.1.0-18-amd64


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Campaign A, then B a day later on a newer kernel: nvme 30 % fewer IOPS (worse),
    ceph about the same."""
    root = tmp_path_factory.mktemp("report") / "lake"
    store = lakegen.local_store(root)
    lakegen.write_campaign(
        store, "A", {"nvme": {READ: {"iops": 1000}}, "ceph": {READ: {"iops": 500}}}, 3, jitter=0.02
    )
    lakegen.write_campaign(store, "B", {"nvme": {READ: {"iops": 700}},
                                        "ceph": {READ: {"iops": 505}}}, 3, jitter=0.02,
                           start=lakegen.T0 + timedelta(days=1),
                           kernel=NEW_KERNEL)  # fmt: skip
    return root


def invoke(lake: Path, command: str, *args: str) -> Result:
    return CliRunner().invoke(cli, [command, "--lake", str(lake), *args])


class Cells(HTMLParser):
    """The rows (cell texts) of each table, the class of each row, and every URL-bearing
    attribute, of an HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.classes: list[list[str]] = []
        self.urls: list[tuple[str, str, str]] = []
        self.tags: set[str] = set()
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.urls += [(tag, k, v or "") for k, v in attrs if k in ("href", "src", "action")]
        if tag == "table":
            self.tables.append([])
            self.classes.append([])
        elif tag == "tr":
            self.tables[-1].append([])
            self.classes[-1].append(dict(attrs).get("class") or "")
        elif tag == "td":
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def page(path: Path) -> Cells:
    parsed = Cells()
    parsed.feed(path.read_text())
    return parsed


def test_the_report_has_every_gate_row_and_only_app_links(lake: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    res = invoke(lake, "report", "--campaign", "B", "--baseline-campaign", "A", "-o", str(out),
                 "--app-url", APP)  # fmt: skip
    assert res.exit_code == 0, res.output  # a report, not a gate: worse rows are no failure
    assert res.stdout == ""
    assert res.stderr == f"report: B vs A: 4 worse of 8 rows -> {out}\n"
    gate = json.loads(invoke(lake, "gate", "--campaign", "B", "--baseline-campaign", "A",
                             "--format", "json").stdout)  # fmt: skip
    html = page(out)
    rows = [r for r in html.tables[0] if r]  # the header row has <th> cells only
    assert len(rows) == len(gate["rows"]) == 8
    assert [(r[0], r[4]) for r in rows] == [(g["backend"], g["metric"]) for g in gate["rows"]]
    worse = [r for r in rows if r[7] == "▼ worse"]
    assert len(worse) == sum(g["verdict"] == "worse" for g in gate["rows"]) == 4
    text = out.read_text()
    assert "Campaign <b>B</b> against <b>A</b>: the gate <b>fails</b> — 4 worse" in text
    assert "fiolake gate --campaign B --baseline-campaign A --min-effect 0.05" in text
    # Self-contained: no script, stylesheet, image, frame or font to fetch; the only URLs
    # are the links to the app's Gate page the user asked for.
    assert not html.tags & {"script", "link", "img", "iframe", "object", "embed"}
    assert {u for _, _, u in html.urls} == {f"{APP}/Gate?campaign=B&baseline=A"}
    assert [u for _, k, u in html.urls if k != "href"] == []
    assert re.findall(r"https?://[^\s\"'<>]+", text) == [
        f"{APP}/Gate?campaign=B&amp;baseline=A"
    ] * len(rows)
    assert "url(" not in text and "@import" not in text
    mode = stat.S_IMODE(out.stat().st_mode)
    assert mode == 0o666 & ~_umask()  # shareable like any file the user writes

    plain = tmp_path / "plain.html"
    assert invoke(lake, "report", "--campaign", "B", "-o", str(plain)).exit_code == 0
    assert not re.findall(r"https?://", plain.read_text())  # no --app-url: no URL at all


def charts(text: str, kind: str) -> list[str]:
    """The inline SVG charts of one kind (`chart ratio`, `chart latency`, …)."""
    return re.findall(rf'<svg class="chart {kind}".*?</svg>', text, re.DOTALL)


def test_the_report_draws_its_charts_as_inline_svg(lake: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    res = invoke(lake, "report", "--campaign", "B", "--baseline-campaign", "A", "-o", str(out),
                 "--app-url", APP)  # fmt: skip
    assert res.exit_code == 0, res.output
    text = out.read_text()
    # One ratio chart; one latency and one per-second chart per backend × job × direction.
    (ratio,) = charts(text, "ratio")
    latency, series = charts(text, "latency"), charts(text, "series")
    assert len(latency) == len(series) == 2
    assert text.count("<svg") == 5
    # A whisker (CI) and a dot (ratio) per row, coloured by verdict: 4 worse nvme rows.
    assert ratio.count('<g class="whisker"') == ratio.count('<circle class="ratio"') == 8
    assert ratio.count(f'<g class="whisker" stroke="{VERDICT_COLOURS[WORSE]}"') == 4
    assert ratio.count(f'<g class="whisker" stroke="{VERDICT_COLOURS[EQUIVALENT]}"') == 4  # ceph
    assert ">1×</text>" in ratio  # the no-change line is labelled
    # Latency: new and baseline curves; per-second: the three runs of each side.
    for chart in latency:
        assert chart.count("<polyline") == 2 and "stroke-dasharray" in chart
        assert "p99</text>" in chart
    for chart in series:
        assert chart.count("<polyline") == 6
    # nvme's B is slower: its latency curve lies above A's (a smaller y on the page).
    new_line, base_line = re.findall(r'<polyline points="([^"]+)"', latency[0])
    assert all(float(n.split(",")[1]) < float(b.split(",")[1])
               for n, b in zip(new_line.split(), base_line.split(), strict=True))  # fmt: skip
    assert "<title>new: B-nvme-r0</title>" in series[0]
    assert "<title>baseline: A-nvme-r2</title>" in series[0]
    # Still self-contained: no script, and no URL but the app links.
    assert "<script" not in text
    links = re.findall(r"https?://[^\s\"'<>]+", text)
    assert set(links) == {f"{APP}/Gate?campaign=B&amp;baseline=A"}
    print(f"report.html: {len(text.encode())} bytes")


def test_the_environment_table_marks_the_fields_that_differ(lake: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    res = invoke(lake, "report", "--campaign", "B", "--baseline-campaign", "A", "-o", str(out))
    assert res.exit_code == 0, res.output
    html = page(out)
    env = dict(zip([r[0] for r in html.tables[1][1:]], html.classes[1][1:], strict=True))
    values = {r[0]: r[1:] for r in html.tables[1][1:]}
    assert [f for f, kind in env.items() if kind == "differs"] == ["kernel"]
    assert values["kernel"] == [NEW_KERNEL, "6.1.0-18-amd64"]  # new, then baseline
    assert values["mem_bytes"] == ["8.0 GiB", "8.0 GiB"]  # human units at the edge
    assert values["labels.rack"] == ["r1", "r1"]
    text = out.read_text()
    assert "new <code>B-nvme-r2</code> (B), baseline <code>A-nvme-r2</code> (A)" in text
    assert "1 field(s) differ" in text
    assert "<code>fiolake env-diff --run B-nvme-r2 --run A-nvme-r2</code>" in text


def test_a_window_baseline_draws_the_window_runs(lake: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    res = invoke(lake, "report", "--campaign", "B", "--baseline-runs", "since:2d", "-o", str(out))
    assert res.exit_code == 0, res.output
    text = out.read_text()
    for chart in charts(text, "latency"):
        assert chart.count("<polyline") == 2  # the window's runs are the baseline side
    assert "<title>baseline: A-ceph-r2</title>" in charts(text, "series")[1]
    assert "baseline <code>A-nvme-r2</code> (since:2d)" in text


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_the_report_is_written_through_a_temporary_file_and_a_rename(
    lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "report.html"
    out.write_text("yesterday's report")
    renames: list[tuple[str, str, str]] = []
    real_replace = os.replace

    def replace(src: str, dst: str) -> None:
        # os.replace is everyone's: the reader's caches (snapshot, footers) rename too.
        if str(dst) == str(out):
            renames.append((src, str(dst), Path(src).read_text()[:15]))
            assert out.read_text() == "yesterday's report"  # untouched until the rename
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", replace)
    res = invoke(lake, "report", "--campaign", "B", "--baseline-campaign", "A", "-o", str(out))
    assert res.exit_code == 0, res.output
    ((src, dst, head),) = renames
    assert Path(src).parent == tmp_path and Path(src).name.startswith(".report.html.")
    assert (dst, head) == (str(out), "<!DOCTYPE html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(
    lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "report.html"
    out.write_text("yesterday's report")

    def full(src: str, dst: str) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic.os, "replace", full)
    res = invoke(lake, "report", "--campaign", "B", "--baseline-campaign", "A", "-o", str(out))
    assert res.exit_code == 1
    assert res.stderr == (
        f"Error: cannot write {out}: No space left on device — choose a file in an existing "
        "directory you may write to\n"
    )
    assert out.read_text() == "yesterday's report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--campaign", "B"], 2, "Error: Missing option '-o' / '--out'."),
        (["--campaign", "nope", "-o", "{tmp}/r.html"], 2,
         "Error: no committed runs match campaign 'nope' — see which exist: "
         'fiolake sql "SELECT DISTINCT campaign_id FROM runs"'),
        (["--campaign", "B", "--baseline-runs", "7d", "-o", "{tmp}/r.html"], 2,
         "Error: Invalid value for --baseline-runs: '7d' is not a window — use "
         "since:DURATION or since:DATE, e.g. since:7d or since:2026-11-01"),
        (["--campaign", "B", "-o", "{tmp}/no/such/dir/r.html"], 1,
         "Error: cannot write {tmp}/no/such/dir/r.html: No such file or directory — choose "
         "a file in an existing directory you may write to"),
    ],
)  # fmt: skip
def test_bad_input_is_a_clear_error(
    lake: Path, tmp_path: Path, args: list[str], code: int, message: str
) -> None:
    res = invoke(lake, "report", *[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert res.exit_code == code, res.output
    assert res.stderr.splitlines()[-1] == message.replace("{tmp}", str(tmp_path))
    assert "Traceback" not in res.output
    assert list(tmp_path.iterdir()) == []
