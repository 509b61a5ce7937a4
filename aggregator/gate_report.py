"""The gate's answer as one self-contained HTML page (`fiolake report`, the app's Gate
page download), and where the app shows the same comparison.

No scripts, no external styles, fonts or images: the page opens offline and the only
links in it are to the app URL the caller gives.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from fiolake.aggregator.columns import p_text, ratio_text
from fiolake.aggregator.verdict_text import WORSE, label

if TYPE_CHECKING:
    from fiolake.aggregator.gate import GateResult

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em; color: #1b1b1b; }
h1 { font-size: 1.4em; } .answer { font-size: 1.15em; }
table { border-collapse: collapse; } th, td { padding: .3em .7em; text-align: left; }
th { border-bottom: 2px solid #888; } td { border-bottom: 1px solid #ddd; }
tr.worse td { background: #fde8e8; } tr.better td { background: #e8f6e8; }
code, pre { background: #f4f4f4; padding: .1em .3em; }
"""


def html_report(result: GateResult, app_url: str | None) -> str:
    """The gate's result as an HTML page: the answer in words, every row worst first, the
    families the p-values were adjusted in, and the command that reproduces it."""
    e = html.escape
    worse, unsure = len(result.worse), len(result.inconclusive)
    verdict = "fails" if worse else "passes"
    link = gate_page_url(app_url, result) if app_url else None
    rows = []
    for g in result.rows:
        r = g.row
        cell = e(label(r, result.min_effect))
        if link:
            cell = f'<a href="{e(link)}">{cell}</a>'
        cells = [g.backend, r.profile, r.job_name, r.direction, r.metric,
                 ratio_text(r.metric, r.ratio, r.ratio_ci_low, r.ratio_ci_high),
                 p_text(r.p_adjusted)]  # fmt: skip
        kind = "worse" if r.verdict == WORSE else r.verdict
        rows.append(
            f'<tr class="{e(kind)}">' + "".join(f"<td>{e(str(c))}</td>" for c in cells)
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
        f"{unsure} inconclusive of {len(result.rows)} rows.</p>",
        "<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in heads) + "</tr></thead>",
        "<tbody>", *rows, "</tbody></table>",
        "<p>Worst first. Ratios of geometric means (new / baseline) with 95 % CIs; "
        "p-values Holm-adjusted per backend; minimum effect "
        f"±{result.min_effect:.0%}. Families: {e('; '.join(result.families))}.</p>",
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
