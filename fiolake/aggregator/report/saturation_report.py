"""The report's Saturation section: IOPS at a latency SLO of the new campaign's load
sweeps, as the app's Saturation page shows it — the answer sentences, a table and one
inline-SVG chart per sweep × direction (IOPS → the SLO's percentile, log axes, the SLO as
a dashed line, the bootstrap band as thin lines)."""

from __future__ import annotations

import html

from fiolake import units
from fiolake.aggregator.report.saturation_text import iops_text, knee_text, sentences, slo_words
from fiolake.aggregator.report.svg import Axis, Line, line_chart
from fiolake.aggregator.stats.saturation import Saturation, SaturationReport, sweep_job

COLOURS = ("#1565c0", "#e65100", "#2e7d32", "#6a1b9a", "#00838f", "#ad1457")
SLO_COLOUR = "#c62828"


def _latency(s: Saturation, percentile: str) -> list[tuple[float, float]]:
    return [(p.iops, v) for p in s.curve if (v := p.latency(percentile)) is not None]


def _chart(report: SaturationReport, found: list[Saturation]) -> str:
    slo = report.slo
    lines: list[Line] = []
    for i, s in enumerate(found):
        colour = COLOURS[i % len(COLOURS)]
        lines.append(Line(s.group, _latency(s, slo.percentile), colour))
        band = [(p.iops, p.slo_ns_high) for p in s.curve if p.slo_ns_high is not None]
        lines.append(Line(f"{s.group}: 95 % band (upper)", band, colour, dashed=True))
    iops = [p.iops for s in found for p in s.curve if p.iops > 0]
    if iops:
        lines.append(Line(f"SLO {slo_words(slo)}", [(min(iops), slo.limit_ns),
                                                   (max(iops), slo.limit_ns)], SLO_COLOUR,
                          dashed=True))  # fmt: skip
    first = found[0]
    title = f"{first.profile} · {first.direction} · {sweep_job(first.knob)}"
    x = Axis(log=True, fmt=units.human_count, title="IOPS")
    y = Axis(log=True, fmt=units.human_ns, title=f"clat {slo.percentile}")
    return line_chart(lines, x, y, title, "saturation")


def saturation_section(report: SaturationReport | None, min_effect: float) -> list[str]:
    """The section's HTML lines; a note when the campaign ran no load sweep."""
    e = html.escape
    out = ["<h2>Saturation: IOPS at a latency SLO</h2>"]
    if report is None:
        return [*out, "<p>No load sweep in this campaign (run latency-at-load or "
                      "iodepth-sweep to get one).</p>"]  # fmt: skip
    out += [f'<p class="answer">{e(s)}</p>' for s in sentences(report, min_effect)]
    heads = ["backend", "profile", "dir", "runs", f"IOPS at {report.slo.text()} [95% CI]", "knee"]
    out.append("<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in heads) + "</tr></thead>")
    for s in report.results:
        cells = [s.group, s.profile, s.direction, str(s.runs), iops_text(s), knee_text(s)]
        out.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in cells) + "</tr>")
    out.append("</table>")
    out.append(
        "<p>On the median curve over the runs, interpolated between the loads tested on "
        "log–log scales, never extrapolated; 95 % percentile-bootstrap interval over whole "
        f"runs. Family: {e(report.family)}.</p>"
    )
    cases: dict[tuple[object, ...], list[Saturation]] = {}
    for s in report.results:
        cases.setdefault(s.case, []).append(s)
    out.append('<div class="charts">')
    out += [_chart(report, found) for found in cases.values()]
    out.append("</div>")
    return out
