"""`gate`: exit 1 when a campaign is worse than its baseline — for CI (docs/ci.md).

Exit 0: no row worse; 1: some row worse (significant after adjustment and beyond
--min-effect); 2: bad input or nothing comparable. Writes JUnit XML (--junit), a Markdown
table for a pull-request comment (--format md) or every number (--format json).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from fiolake.aggregator.lake.columns import p_text, ratio_text
from fiolake.aggregator.stats.verdict_text import (
    BETTER,
    EQUIVALENT,
    WORSE,
    decider,
    host_busy_words,
    label,
)
from fiolake.cli import lake_option, problems_are_usage
from fiolake.cli.common import connect, parse_labels
from fiolake.cli.comparisons import metric_option, min_effect_option
from fiolake.cli.gate_accept import GateCommand
from fiolake.cli.output import emit
from fiolake.cli.saturation import slo_option

if TYPE_CHECKING:
    from fiolake.aggregator.lake.lake import Lake
    from fiolake.aggregator.stats.gate import GateResult, GateRow
    from fiolake.aggregator.stats.gate_config import GateConfig
    from fiolake.aggregator.stats.slo import Slo

# The gate's statistics (with scipy), imported while the lake connects (`connect`).
GATE_MODULE = "fiolake.aggregator.stats.gate"
FIELDS = ("profile", "job_name", "direction", "metric", "n", "n_baseline", "geomean", "ratio",
          "ratio_ci_low", "ratio_ci_high", "p_value", "p_adjusted", "p_equivalence",
          "p_equivalence_adjusted", "verdict", "reps_to_confirm", "reps_for_equivalence",
          "workload_sha256")  # fmt: skip


def _case(g: GateRow) -> str:
    r = g.row
    return f"{g.backend} · {r.profile} · {r.job_name} · {r.direction} · {r.metric}"


def junit_xml(result: GateResult) -> bytes:
    """One testcase per backend × profile × job × direction × metric: failure when worse,
    skipped when inconclusive (or untestable)."""
    import xml.etree.ElementTree as ET  # --junit's only: each import here is on every gate's path

    suite = ET.Element("testsuite", name=f"fiolake gate {result.campaign} vs {result.baseline}")
    failures = skipped = 0
    for g in result.rows:
        r = g.row
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"fiolake.{g.backend}.{r.profile}",
            name=f"{r.job_name}.{r.direction}.{r.metric}",
        )
        numbers = (
            f"{ratio_text(r.metric, r.ratio, r.ratio_ci_low, r.ratio_ci_high)} vs "
            f"{result.baseline}, p adj {p_text(r.p_adjusted)}"
        )
        if r.verdict == WORSE:
            failures += 1
            ET.SubElement(case, "failure", message=f"{WORSE}: {numbers}", type=WORSE)
        elif r.verdict not in (BETTER, EQUIVALENT):
            skipped += 1
            word = label(r, g.min_effect, g.reason)
            ET.SubElement(case, "skipped", message=f"{word}: {numbers}")
    suite.set("tests", str(len(result.rows)))
    suite.set("failures", str(failures))
    suite.set("skipped", str(skipped))
    return ET.tostring(suite, encoding="utf-8", xml_declaration=True)


def markdown(result: GateResult, app_url: str | None) -> str:
    """A Markdown table, worst first, for a pull-request comment or a CI job summary."""
    lines = [
        f"**fiolake gate**: campaign `{result.campaign}` vs baseline `{result.baseline}` — "
        f"{len(result.worse)} worse, {len(result.inconclusive)} inconclusive, "
        f"{len(result.rows)} rows",
        "",
        "| backend | profile | job | dir | metric | ratio [95% CI] | p adj | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    from fiolake.aggregator.report.gate_report import gate_page_url  # --app-url's only

    link = gate_page_url(app_url, result) if app_url else None
    for g in result.rows:
        r = g.row
        verdict = label(r, g.min_effect, g.reason)
        if link:
            verdict = f"[{verdict}]({link})"
        ratio = ratio_text(r.metric, r.ratio, r.ratio_ci_low, r.ratio_ci_high)
        lines.append(
            f"| {g.backend} | {r.profile} | {r.job_name} | {r.direction} | {r.metric} | "
            f"{ratio} | {p_text(r.p_adjusted)} | {verdict} |"
        )
    lines += ["", "Families: " + "; ".join(result.families), "", f"Nights: {result.nights_words()}"]
    return "\n".join(lines) + "\n"


# The options that choose the comparison, shared by `gate` and `report`.
QUESTION_OPTIONS: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
    lake_option,
    click.option("--campaign", required=True, help="The new campaign (e.g. last night's)."),
    click.option(
        "--baseline-campaign",
        help="Campaign to set it against (default: the newest accepted earlier one with its "
        "jobs, else the newest earlier one, with its earlier nights).",
    ),
    click.option(
        "--baseline-label",
        metavar="KEY=VALUE",
        help="Instead: the newest earlier campaign whose runs carry this runner label "
        "(runner --label), or environment value (kernel=6.1 matches 6.1.0-18-amd64).",
    ),
    click.option(
        "--baseline-runs",
        metavar="since:WINDOW",
        help="Instead: every comparable run of other campaigns in the window before the "
        "new campaign started: since:7d (a duration back from its start) or "
        "since:2026-11-01.",
    ),
    metric_option,
    min_effect_option,
    slo_option,
    click.option(
        "--config",
        "config_path",
        metavar="PATH",
        help="The gate's thresholds and policies (default: ./fiolake-gate.toml when there is "
        "one; docs/ci.md). Options given on the command line win over it.",
    ),
]


def gate_question(
    fn: Callable[..., Any] | None = None,
    *,
    extra: Callable[[Lake, GateResult], Any] | None = None,
) -> Any:
    """Add the options that choose the comparison (lake, campaign, baseline, metrics,
    min-effect); the command is called with the gate's `result` instead of them — and,
    with `extra`, with `data=extra(lake, result)` read on the same connection (`report`:
    its charts). Use as `@gate_question` or `@gate_question(extra=...)`."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def command(
            *,
            lake: str,
            campaign: str,
            baseline_campaign: str | None,
            baseline_label: str | None,
            baseline_runs: str | None,
            metrics: tuple[str, ...],
            min_effect: float,
            slo: Slo,
            config_path: str | None,
            **rest: Any,
        ) -> Any:
            since = _window(baseline_runs) if baseline_runs is not None else None
            config = _config(config_path)
            if config and config.metrics and not metrics:
                metrics = config.metrics
            if config and config.min_effect is not None and _defaulted("min_effect"):
                min_effect = config.min_effect
            wanted = parse_labels((baseline_label,), "--baseline-label") if baseline_label else {}
            result, data = _result(lake, campaign, baseline_campaign,
                                   next(iter(wanted.items()), None), since, metrics,
                                   min_effect, extra, slo, config)  # fmt: skip
            return fn(result=result, **({"data": data} if extra else {}), **rest)

        decorated: Callable[..., Any] = command
        for option in reversed(QUESTION_OPTIONS):
            decorated = option(decorated)
        return decorated

    return decorate(fn) if fn is not None else decorate


def _config(given: str | None) -> GateConfig | None:
    """The fiolake-gate.toml to apply (`--config`, else the working directory's), parsed."""
    from fiolake.aggregator.stats import gate_config

    with problems_are_usage():
        path = gate_config.find(given, Path.cwd())
        return gate_config.load(path) if path else None


def _defaulted(name: str) -> bool:
    """Whether option `name` was left at its default (so the config file may set it)."""
    source = click.get_current_context().get_parameter_source(name)
    return source in (None, click.core.ParameterSource.DEFAULT)


def _window(text: str) -> str:
    """The WINDOW of `--baseline-runs since:WINDOW`."""
    kind, _, since = text.partition(":")
    if kind != "since" or not since:
        raise click.BadParameter(
            f"{text!r} is not a window — use since:DURATION or since:DATE, e.g. since:7d or "
            "since:2026-11-01",
            param_hint="--baseline-runs",
        )
    return since


def _result(
    lake: str,
    campaign: str,
    baseline: str | None,
    label: tuple[str, str] | None,
    since: str | None,
    metrics: tuple[str, ...],
    min_effect: float,
    extra: Callable[[Lake, GateResult], Any] | None = None,
    slo: Slo | None = None,
    config: GateConfig | None = None,
) -> tuple[GateResult, Any]:
    """The gate's result and `extra` of it (None without); every problem is a usage
    error (exit 2), so that gate's exit 1 keeps meaning "worse" — for `report` too, whose
    own failed write afterwards stays a failure (exit 1)."""
    from fiolake.aggregator.lake.lake import SUMMARY_TABLES

    # The gate reads runs and results; a report's charts read the per-second rows too
    # (binding those views cost ~0.1 s of every gate's connect on MinIO).
    tables = SUMMARY_TABLES if extra is None else None
    with problems_are_usage(), connect(lake, tables, meanwhile=[GATE_MODULE]) as handle:
        from fiolake.aggregator.stats.compare import DEFAULT_METRICS
        from fiolake.aggregator.stats.gate import gate as run_gate

        result = run_gate(handle, campaign, baseline, label=label, since=since,
                          metrics=list(metrics) or list(DEFAULT_METRICS),
                          min_effect=min_effect, slo=slo, config=config)  # fmt: skip
        return result, extra(handle, result) if extra else None


@click.command(cls=GateCommand)
@gate_question
@click.option(
    "--inconclusive",
    "on_inconclusive",
    type=click.Choice(["pass", "fail"]),
    help="Whether an inconclusive row fails the gate (a warning names them either way); "
    "default: the config file's, else pass.",
)
@click.option(
    "--host-noise",
    type=click.Choice(["pass", "fail"]),
    help="Whether a row made inconclusive because a run was not alone (flagged cpu-busy, "
    "other-fio or steal on either side) fails the gate (a warning names them either way); "
    "default: the config file's, else pass.",
)
@click.option("--junit", type=click.Path(dir_okay=False), help="Write JUnit XML to this file.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "md", "json"]),
    default="table",
    show_default=True,
    help="table for people, md for a pull-request comment, json with every number.",
)
@click.option(
    "--app-url",
    help="Base URL of `fiolake app`: md verdicts link to its Gate page for this comparison.",
)
def gate(
    result: GateResult,
    on_inconclusive: str | None,
    host_noise: str | None,
    junit: str | None,
    fmt: str,
    app_url: str | None,
) -> None:
    """Fail (exit 1) when a campaign is worse than its baseline.

    \b
    Per backend, the campaign's runs are set against the baseline's runs (a campaign's,
    or a window's) of the same workloads with the verdicts of `compare`: ratios
    with 95 % CIs, Holm-adjusted p-values, ±--min-effect. Exit 0 when no row is worse,
    1 when any is (or, with --inconclusive fail, any is inconclusive), 2 on bad input or
    nothing comparable. With the default baseline and ≥ 2 earlier nights of a job, the
    new night is tested against those nights (the campaign the unit; the footer prints
    the smallest drop it could detect). A row whose runs were flagged as not alone
    (cpu-busy, other-fio, steal) on either side is not worse unless the change is bigger
    than that load explains: `inconclusive: host busy (outside CPU 45 %)`, exit 0 with a
    warning unless --host-noise fail. ./fiolake-gate.toml (or --config) sets thresholds.
    Latency metrics are worse when higher. docs/ci.md has the CI wiring.
      fiolake gate --campaign nightly-2026-11-24
      fiolake gate --campaign B --baseline-campaign A --junit gate.xml --format md
      fiolake gate --campaign B --baseline-label kernel=6.1   # the last 6.1 campaign
      fiolake gate --campaign B --baseline-runs since:7d      # the week before B
      fiolake gate accept --campaign B --reason 'firmware 2.1'  # B is intended: baseline
    """
    config = result.config
    on_inconclusive = on_inconclusive or (config and config.inconclusive) or "pass"
    host_noise = host_noise or (config and config.host_noise) or "pass"
    if junit:
        from fiolake.atomic import write_atomic

        write_atomic(Path(junit), junit_xml(result))  # a failure exits 2: EVERY_PROBLEM_IS_USAGE
    if fmt == "md":
        click.echo(markdown(result, app_url), nl=False)
    elif fmt == "json":
        doc = {
            "campaign": result.campaign,
            "baseline": result.baseline,
            "baseline_kind": result.baseline_kind,
            "families": result.families,
            "min_effect": result.min_effect,
            "config": config.describe() if config else None,
            "nights": result.nights_words(),
            "rows": [{"backend": g.backend, **{f: getattr(g.row, f) for f in FIELDS},
                      "reason": g.reason or None, "min_effect": g.min_effect, "mde": g.mde,
                      "nights": asdict(g.night) if g.night else None}
                     for g in result.rows],
        }  # fmt: skip
        click.echo(json.dumps(doc, indent=2, default=str))
    else:
        cols = ["backend", "profile", "job", "dir", "metric",
                f"vs {result.baseline} [95% CI]", "p adj", "verdict"]  # fmt: skip
        emit(cols, [(g.backend, g.row.profile, g.row.job_name, g.row.direction, g.row.metric,
                     ratio_text(g.row.metric, g.row.ratio, g.row.ratio_ci_low,
                                g.row.ratio_ci_high),
                     p_text(g.row.p_adjusted), label(g.row, g.min_effect, g.reason))
                    for g in result.rows], "table")  # fmt: skip
    _warn(result)
    click.echo(
        f"gate: {result.campaign} vs {result.baseline}: {len(result.worse)} worse, "
        f"{len(result.inconclusive)} inconclusive"
        f"{host_busy_words([g.reason for g in result.rows])} of {len(result.rows)}; "
        f"family: {'; '.join(result.families)}",
        err=True,
    )
    click.echo(f"nights: {result.nights_words()}", err=True)
    if config:
        click.echo(f"config: {config.words()}", err=True)
    if (
        result.worse
        or (on_inconclusive == "fail" and result.inconclusive)
        or (host_noise == "fail" and result.host_busy)
    ):
        raise click.exceptions.Exit(1)


# Each warning is one line: the count, what they share and the first (worst) row; the
# table's rows say the rest (issue 40: one line repeated all 36 rows, 4,254 characters).
WARNING_WIDTH = 200


def _fit(head: str, name: str, tail: str) -> str:
    """head + name + tail, the name cut with … so that `warning: ` + all fits WARNING_WIDTH."""
    room = WARNING_WIDTH - len("warning: ") - len(head) - len(tail)
    return head + (name if len(name) <= room else name[: max(room - 1, 0)] + "…") + tail


def host_busy_line(result: GateResult, worst: GateRow) -> str:
    """`36 rows not judged worse: host busy (outside CPU 36–65 %), worst nvme · … · iops
    0.8× (20 % lower); rerun on a quiet host or --host-noise fail`, with `warning: ` at
    most WARNING_WIDTH characters (a long row name is cut with …)."""
    n = len(result.host_busy)
    head = f"{n} row{'s' * (n != 1)} not judged worse: {result.host_busy_reason()}, worst "
    tail = (
        f" {ratio_text(worst.row.metric, worst.row.ratio, None, None)}; rerun on a quiet host "
        "or --host-noise fail"
    )
    return _fit(head, _case(worst), tail)


def inconclusive_line(rows: list[GateRow]) -> str:
    """`inconclusive: disk · … · iops (~9 runs per side would confirm 1.7×)` for one row;
    for more, `36 rows inconclusive, first …; each row says what would decide it`. At most
    WARNING_WIDTH characters with `warning: `."""
    first = rows[0]
    why = f" ({first.reason or decider(first.row, first.min_effect) or 'more runs'})"
    if len(rows) == 1:
        return _fit("inconclusive: ", _case(first), why)
    tail = f"{why}; each row says what would decide it"
    return _fit(f"{len(rows)} rows inconclusive, first ", _case(first), tail)


def _warn(result: GateResult) -> None:
    """One line on stderr for the host-busy rows, one for the other inconclusive ones."""
    worst = result.worst_host_busy()
    if worst is not None:
        click.echo(f"warning: {host_busy_line(result, worst)}", err=True)
    rest = [g for g in result.inconclusive if g.noise is None]  # not host busy
    if rest:
        click.echo(f"warning: {inconclusive_line(rest)}", err=True)
