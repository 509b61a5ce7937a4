"""The gate's answer as one self-contained HTML page (`fiolake report`, the app's Gate
page download), and where the app shows the same comparison.

No scripts, no external styles, fonts or images: the page opens offline and the only
links in it are to the app URL the caller gives.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from fiolake import units
from fiolake.aggregator.lake.columns import format_value, nines, p_text, ratio_text
from fiolake.aggregator.report.svg import Axis, Line, Whisker, line_chart, ratio_chart
from fiolake.aggregator.stats.verdict_text import host_busy_words, label

if TYPE_CHECKING:
    from fiolake.aggregator.report.report_data import Case, ReportData
    from fiolake.aggregator.stats.gate import GateResult

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em; color: #1b1b1b; }
h1 { font-size: 1.4em; } .answer { font-size: 1.15em; }
table { border-collapse: collapse; } th, td { padding: .3em .7em; text-align: left; }
th { border-bottom: 2px solid #888; } td { border-bottom: 1px solid #ddd; }
tr.worse td { background: #fde8e8; } tr.better td { background: #e8f6e8; }
code, pre { background: #f4f4f4; padding: .1em .3em; }
h2 { font-size: 1.15em; margin-top: 1.6em; } .charts { display: flex; flex-wrap: wrap; gap: 1em; }
tr.differs td { background: #fff4e0; font-weight: 600; }
table.env td { overflow-wrap: anywhere; max-width: 32em; }
"""
NEW_COLOUR, BASE_COLOUR = "#1565c0", "#757575"
# Shades of each side's colour (new, baseline), one per run of a per-second chart.
RUN_SHADES = (("#1565c0", "#5e92f3", "#90caf9"), ("#424242", "#757575", "#bdbdbd"))
SIDES = ("new", "baseline")
PERCENTILE_TICKS = (50.0, 90.0, 99.0, 99.9, 99.99)


def html_report(result: GateResult, app_url: str | None, data: ReportData) -> str:
    """The gate's result as an HTML page: the answer in words, every row worst first, the
    families the p-values were adjusted in, the ratio chart with CI whiskers, latency
    percentile curves and per-second series of both sides (`data`, from
    `report_data.report_data`), the environments and their differences, and the command
    that reproduces it. Charts are inline SVG (`aggregator.report.svg`): no script, no fetch."""
    # Here, not at the top: `fiolake gate --help` imports this module and must stay light.
    from fiolake.aggregator.report.saturation_report import saturation_section

    e = html.escape
    worse, unsure = len(result.worse), len(result.inconclusive)
    verdict = "fails" if worse else "passes"
    link = gate_page_url(app_url, result) if app_url else None
    rows = []
    for g in result.rows:
        r = g.row
        cell = e(label(r, g.min_effect, g.reason))
        if link:
            cell = f'<a href="{e(link)}">{cell}</a>'
        cells = [g.backend, r.profile, r.job_name, r.direction, r.metric,
                 ratio_text(r.metric, r.ratio, r.ratio_ci_low, r.ratio_ci_high),
                 p_text(r.p_adjusted)]  # fmt: skip
        rows.append(
            f'<tr class="{e(r.verdict)}">' + "".join(f"<td>{e(str(c))}</td>" for c in cells)
            + f"<td>{cell}</td></tr>"
        )  # fmt: skip
    heads = ["backend", "profile", "job", "dir", "metric", "ratio [95% CI]", "p adj", "verdict"]
    title = f"fiolake gate: {result.campaign} vs {result.baseline}"
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{e(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{e(title)}</h1>",
        f'<p class="answer">Campaign <b>{e(result.campaign)}</b> against '
        f"<b>{e(result.baseline)}</b>: the gate <b>{verdict}</b> — {worse} worse, "
        f"{unsure} inconclusive{e(host_busy_words([g.reason for g in result.rows]))} of "
        f"{len(result.rows)} rows.</p>",
        "<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in heads) + "</tr></thead>",
        "<tbody>", *rows, "</tbody></table>",
        "<p>Worst first. Ratios of geometric means (new / baseline) with 95 % CIs; "
        "p-values Holm-adjusted per backend; minimum effect "
        f"±{result.min_effect:.0%}. Families: {e('; '.join(result.families))}."
        + (f" Config: {e(result.config.words())}." if result.config else "")
        + f" Nights: {e(result.nights_words())}.</p>",
        *_charts(result, data),
        *saturation_section(data.saturation, result.min_effect),
        *_environment(result, data),
        f"<p>Reproduce: <code>{e(reproduce(result))}</code></p>",
        "</body></html>",
        "",
    ])  # fmt: skip


def gate_page_url(app_url: str, result: GateResult) -> str | None:
    """The app's Gate page showing this comparison (the query parameters it binds), or
    None for a baseline the page cannot select (a window of runs)."""
    if result.baseline_kind != "campaign":
        return None
    query = urlencode({"campaign": result.campaign, "baseline": result.baseline})
    return f"{app_url.rstrip('/')}/Gate?{query}"


def reproduce(result: GateResult) -> str:
    """The `fiolake gate` command line that gives this result again."""
    chosen = (
        f"--baseline-runs {result.baseline}"
        if result.baseline_kind == "window"
        else f"--baseline-campaign {result.baseline}"
    )
    return f"fiolake gate --campaign {result.campaign} {chosen} --min-effect {result.min_effect:g}"


def _case_title(case: Case) -> str:
    backend, profile, job, direction = case
    return f"{backend} · {profile} · {job} · {direction}"


def _charts(result: GateResult, data: ReportData) -> list[str]:
    """The ratio chart, then per job of the rows its percentile curves and series."""
    e = html.escape
    whiskers = [
        Whisker(
            f"{g.backend} · {g.row.job_name} {g.row.direction} · {g.row.metric}",
            g.row.ratio, g.row.ratio_ci_low, g.row.ratio_ci_high, g.row.verdict,
            f"{label(g.row, g.min_effect, g.reason)}: "
            + ratio_text(g.row.metric, g.row.ratio, g.row.ratio_ci_low, g.row.ratio_ci_high),
        )
        for g in result.rows
        if g.row.ratio is not None
    ]  # fmt: skip
    out = [
        "<h2>Ratios new / baseline</h2>",
        "<p>Each row's ratio (dot) and 95 % CI (whisker) on a log axis; shaded: the "
        f"±{result.min_effect:.0%} minimum effect. Red worse, green better, grey "
        "equivalent, amber inconclusive.</p>",
        ratio_chart(whiskers, result.min_effect),
        "<h2>Latency percentiles (clat)</h2>",
        f"<p>Median over runs of fio's completion-latency percentiles: <b>{e(result.campaign)}"
        f"</b> solid, baseline <b>{e(result.baseline)}</b> dashed; log latency axis.</p>",
        '<div class="charts">',
    ]
    x_pct = Axis(log=False, fmt=lambda n: f"p{100 * (1 - 10**-n):g}",
                 ticks=[nines(p) for p in PERCENTILE_TICKS], title="percentile")  # fmt: skip
    y_lat = Axis(log=True, fmt=units.human_ns, title="latency")
    for case in data.cases:
        lines = [
            Line(f"{name}: {who}", [(nines(p.percentile), p.value_ns) for p in points],
                 colour, dashed=name == "baseline")
            for name, who, colour, points in zip(
                SIDES, (result.campaign, result.baseline), (NEW_COLOUR, BASE_COLOUR),
                data.curves.get(case, ([], [])), strict=True)
        ]  # fmt: skip
        out.append(line_chart(lines, x_pct, y_lat, _case_title(case), "latency"))
    metric = data.series_metric
    out += [
        "</div>",
        f"<h2>Per-second {e(metric)}</h2>",
        f"<p>Up to the {len(RUN_SHADES[0])} newest runs of each side per job: new solid, "
        "baseline dashed.</p>",
        '<div class="charts">',
    ]
    x_s = Axis(log=False, fmt=lambda s: f"{s:g} s", title="second of the job", whole=True)
    y_v = Axis(log=False, fmt=lambda v: format_value(metric, v), title=metric)
    for case in data.cases:
        lines = []
        for side, shades, points in zip(
            SIDES, RUN_SHADES, data.series.get(case, ([], [])), strict=True
        ):
            by_run: dict[str, list[tuple[float, float]]] = {}
            for p in points:
                if p.value is not None:
                    by_run.setdefault(p.run_id, []).append((p.second, p.value))
            for shade, (run_id, xy) in zip(shades, by_run.items(), strict=False):
                lines.append(Line(f"{side}: {run_id}", xy, shade, dashed=side == "baseline"))
        out.append(line_chart(lines, x_s, y_v, _case_title(case), "series"))
    out.append("</div>")
    return out


def _environment(result: GateResult, data: ReportData) -> list[str]:
    """Both sides' environments (one representative run each), differing fields marked."""
    e = html.escape
    if data.env_runs is None:
        return ["<h2>Environment</h2><p>No successful run on one of the sides.</p>"]
    new_run, base_run = data.env_runs
    differing = {d.field for d in data.differences}
    rows = [
        f'<tr class="{"differs" if f in differing else "same"}"><td>{e(f)}</td>'
        f"<td>{e(_env_value(f, a))}</td><td>{e(_env_value(f, b))}</td></tr>"
        for f, a, b in data.environment
    ]
    jobs = [d.a for d in data.differences if d.field == "job"]
    words = (f"{len(differing - {'job'})} field(s) differ" if differing
             else "the environments are the same")  # fmt: skip
    return [
        "<h2>Environment</h2>",
        f"<p>Newest run of each side: new <code>{e(new_run)}</code> ({e(result.campaign)}), "
        f"baseline <code>{e(base_run)}</code> ({e(result.baseline)}) — {e(words)}; "
        "differing fields highlighted. Reproduce: "
        f"<code>fiolake env-diff --run {e(new_run)} --run {e(base_run)}</code></p>",
        '<table class="env"><thead><tr><th>field</th><th>new</th><th>baseline</th></tr></thead>',
        "<tbody>", *rows, "</tbody></table>",
        *([f"<p>The job fio ran differs: {e('; '.join(map(str, jobs)))}</p>"] if jobs else []),
    ]  # fmt: skip


def _env_value(name: str, value: Any) -> str:
    if value is None:
        return units.MISSING
    return format_value(name, value) if isinstance(value, int | float) else str(value)
