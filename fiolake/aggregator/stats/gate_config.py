"""The gate's thresholds where the team keeps its CI: `fiolake-gate.toml` (docs/ci.md).

A repository under test carries the gate's policy next to its job files, so what counts
as a regression is reviewed like code (Bencher #520: per-benchmark thresholds; #160:
"comment only above N %"):

    [gate]
    metrics = ["iops", "clat_p99_ns"]   # the metrics to gate (default: compare's four)
    min_effect = 0.05                   # the default minimum effect
    inconclusive = "pass"               # or "fail": what an inconclusive row does
    host_noise = "pass"                 # or "fail": what a host-busy row does

    [[threshold]]                       # the first that matches a row wins
    backend = "nvme"                    # each of backend/profile/job/metric optional
    metric = "clat_p99_ns"
    min_effect = 0.20

Parsed with `tomllib` and validated whole: every refusal names the file, the key and the
fix (UsageProblem). Command-line options win over the file; the file over the defaults.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from fiolake.errors import UsageProblem

FILE_NAME = "fiolake-gate.toml"
POLICIES = ("pass", "fail")
MATCH_KEYS = ("backend", "profile", "job", "metric")
GATE_KEYS = ("metrics", "min_effect", "inconclusive", "host_noise")
SECTIONS = ("gate", "threshold")


class JudgedCase(Protocol):
    """What a threshold matches of a gate row (compare.CompareRow has it)."""

    @property
    def profile(self) -> str: ...
    @property
    def job_name(self) -> str: ...
    @property
    def metric(self) -> str: ...


@dataclass(frozen=True)
class Threshold:
    """A minimum effect for the rows it matches (a missing key matches any)."""

    min_effect: float
    backend: str | None = None
    profile: str | None = None
    job: str | None = None
    metric: str | None = None

    def matches(self, backend: str, profile: str, job: str, metric: str) -> bool:
        """Whether every key given names the row's value."""
        wanted = (self.backend, self.profile, self.job, self.metric)
        return all(
            w is None or w == v
            for w, v in zip(wanted, (backend, profile, job, metric), strict=True)
        )

    def words(self) -> str:
        """`nvme/*/*/clat_p99_ns ±20 %`."""
        keys = (self.backend, self.profile, self.job, self.metric)
        return "/".join(k or "*" for k in keys) + f" ±{self.min_effect:.0%}"


@dataclass(frozen=True)
class GateConfig:
    """A parsed `fiolake-gate.toml`; every field None when the file does not set it."""

    path: str
    metrics: tuple[str, ...] | None = None
    min_effect: float | None = None
    inconclusive: str | None = None
    host_noise: str | None = None
    thresholds: tuple[Threshold, ...] = field(default=())

    def effects(self, default: float) -> list[float]:
        """Every minimum effect a row may be judged at, `default` first."""
        return list(dict.fromkeys([default, *(t.min_effect for t in self.thresholds)]))

    def describe(self) -> dict[str, Any]:
        """What the file set, for the gate's footer and JSON."""
        return {
            "path": self.path,
            "metrics": list(self.metrics) if self.metrics else None,
            "min_effect": self.min_effect,
            "inconclusive": self.inconclusive,
            "host_noise": self.host_noise,
            "thresholds": [t.words() for t in self.thresholds],
        }

    def words(self) -> str:
        """`fiolake-gate.toml: metrics iops; thresholds nvme/*/*/iops ±20 %`."""
        d = self.describe()
        parts = [f"metrics {', '.join(d['metrics'])}"] if d["metrics"] else []
        parts += [f"{k.replace('_', '-')} {d[k]:g}" for k in ("min_effect",) if d[k] is not None]
        parts += [f"--{k.replace('_', '-')} {d[k]}" for k in ("inconclusive", "host_noise") if d[k]]
        if self.thresholds:
            parts.append("thresholds " + "; ".join(d["thresholds"]))
        return f"{self.path}: " + (", ".join(parts) or "nothing set")


def effect_of(config: GateConfig | None, backend: str, row: JudgedCase, default: float) -> float:
    """The minimum effect of one gate row: the first matching threshold's, or `default`."""
    for t in config.thresholds if config else ():
        if t.matches(backend, row.profile, row.job_name, row.metric):
            return t.min_effect
    return default


def check_matched(config: GateConfig, rows: Iterable[tuple[str, JudgedCase]]) -> None:
    """UsageProblem naming the first `[[threshold]]` that matches none of the gate's
    (backend, row) pairs: a misspelt key in a file reviewed like code is not a silent
    no-op. It names the key whose value no row has, with the values there are."""
    rows = list(rows)
    for number, t in enumerate(config.thresholds, 1):
        if any(t.matches(b, r.profile, r.job_name, r.metric) for b, r in rows):
            continue
        seen = {
            "backend": {b for b, _ in rows},
            "profile": {r.profile for _, r in rows},
            "job": {r.job_name for _, r in rows},
            "metric": {r.metric for _, r in rows},
        }
        wanted = dict(zip(MATCH_KEYS, (t.backend, t.profile, t.job, t.metric), strict=True))
        missing = [k for k in MATCH_KEYS if wanted[k] is not None and wanted[k] not in seen[k]]
        where = f"{config.path}: [[threshold]] {number} ({t.words()})"
        if missing:
            key = missing[0]
            raise UsageProblem(
                f"{where}: {key} {wanted[key]!r} is in no row of this gate — use one of "
                f"{', '.join(sorted(seen[key])) or 'none'}, or remove the threshold"
            )
        raise UsageProblem(
            f"{where} matches no row of this gate (each key does, not all together) — "
            "check the combination, or remove the threshold"
        )


def find(given: str | None, cwd: Path) -> Path | None:
    """The file to read: `--config PATH` (which must exist), else `fiolake-gate.toml` in
    the working directory when there is one, else None."""
    if given is not None:
        path = Path(given)
        if not path.is_file():
            raise UsageProblem(
                f"--config {given}: no such file — give the path of a {FILE_NAME} "
                "(docs/ci.md shows one)"
            )
        return path
    here = cwd / FILE_NAME
    return here if here.is_file() else None


def load(path: Path) -> GateConfig:
    """Parse and validate `path`; UsageProblem naming the file, key and fix."""
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise UsageProblem(f"{path} is not valid TOML: {err} — fix the file") from err
    _only(path, "", doc, SECTIONS)
    gate = doc.get("gate", {})
    if not isinstance(gate, dict):
        raise UsageProblem(f"{path}: 'gate' must be a table — write it as [gate]")
    _only(path, "[gate] ", gate, GATE_KEYS)
    metrics = gate.get("metrics")
    if metrics is not None and (
        not isinstance(metrics, list) or not metrics or not all(isinstance(m, str) for m in metrics)
    ):
        raise UsageProblem(
            f"{path}: [gate] metrics must be a non-empty list of metric names — e.g. "
            'metrics = ["iops", "clat_p99_ns"]'
        )
    items = doc.get("threshold", [])
    if not isinstance(items, list):
        raise UsageProblem(f"{path}: 'threshold' must be an array of tables — write [[threshold]]")
    return GateConfig(
        str(path),
        tuple(metrics) if metrics else None,
        _effect(path, "[gate] min_effect", gate.get("min_effect")),
        _policy(path, "inconclusive", gate.get("inconclusive")),
        _policy(path, "host_noise", gate.get("host_noise")),
        tuple(_threshold(path, i, t) for i, t in enumerate(items, 1)),
    )


def _only(path: Path, where: str, table: dict[str, Any], allowed: Iterable[str]) -> None:
    for key in table:
        if key not in allowed:
            raise UsageProblem(f"{path}: unknown key {where}'{key}' — use {', '.join(allowed)}")


def _effect(path: Path, key: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
        raise UsageProblem(
            f"{path}: {key} = {value!r} is not a fraction between 0 and 1 — write e.g. "
            "0.1 for ±10 %"
        )
    return float(value)


def _policy(path: Path, key: str, value: Any) -> str | None:
    if value is not None and value not in POLICIES:
        raise UsageProblem(f'{path}: [gate] {key} = {value!r} — use "pass" or "fail"')
    return value


def _threshold(path: Path, number: int, item: Any) -> Threshold:
    where = f"[[threshold]] {number}: "
    if not isinstance(item, dict):
        raise UsageProblem(f"{path}: {where}must be a table — write keys under [[threshold]]")
    _only(path, where, item, (*MATCH_KEYS, "min_effect"))
    if "min_effect" not in item:
        raise UsageProblem(f"{path}: {where}no min_effect — add e.g. min_effect = 0.1")
    for key in MATCH_KEYS:
        if key in item and not isinstance(item[key], str):
            raise UsageProblem(f"{path}: {where}{key} = {item[key]!r} is not a string — quote it")
    effect = _effect(path, f"{where}min_effect", item["min_effect"])
    assert effect is not None
    return Threshold(effect, *(item.get(k) for k in MATCH_KEYS))
