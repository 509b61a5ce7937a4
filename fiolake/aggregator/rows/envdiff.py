"""How the recorded environments of two runs differ."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fiolake.aggregator.lake.lake import Lake, literals
from fiolake.aggregator.rows.filters import RunFilter, validate
from fiolake.errors import LakeError
from fiolake.workload import workload_differences, workload_sha256

# `runs` columns that describe where and how a run happened (not what it measured).
ENV_COLUMNS = (
    "host",
    "runner",
    "origin",
    "kernel",
    "os",
    "fio_version",
    "fio_path",
    "cpu_model",
    "cpu_count",
    "mem_bytes",
    "cpu_governor",
    "target_dir",
    "fs_type",
    "mount_options",
    "mkfs_options",
    "device",
    "device_model",
    "device_firmware",
    "io_scheduler",
    "read_ahead_bytes",
    "write_cache",
    # a raw block device (--device): what it is and how it was left before the run
    "target_kind",
    "device_serial",
    "device_wwn",
    "device_size_bytes",
    "device_logical_block_bytes",
    "device_physical_block_bytes",
    "device_rotational",
    "device_discard_granularity_bytes",
    "device_discard_max_bytes",
    "device_nr_requests",
    "device_start",
    "job_file_sha256",
    "runtime_s",
    "size_bytes",
)

# What an imported run (`fiolake import`) shows for a field fio's output does not hold.
UNKNOWN_IMPORTED = "unknown (imported)"


@dataclass(frozen=True)
class EnvDifference:
    """One environment field whose value differs between run A and run B."""

    field: str
    a: Any
    b: Any


def _environments(lake: Lake, run_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Each run's environment (`environment`, with `_canonical`, its job file), in one
    query: `regressions` describes every change point's two runs (768 runs of 384 change
    points at a million runs took 5.4 s one query a run, issue 44)."""
    cols = ", ".join(f'"{c}"' for c in ENV_COLUMNS)
    wanted = sorted(set(run_ids))
    cur = lake.cursor()
    try:
        found = cur.execute(
            f"SELECT run_id, {cols}, labels, canonical_job_file FROM runs "
            f"WHERE run_id IN ({literals(wanted)})"
        ).fetchall()
    finally:
        cur.close()
    out: dict[str, dict[str, Any]] = {}
    for run_id, *row in found:
        env = dict(zip(ENV_COLUMNS, row[: len(ENV_COLUMNS)], strict=True))
        if env["origin"] == "import":  # fio did not record it: say so, never leave it blank
            env = {k: UNKNOWN_IMPORTED if v is None else v for k, v in env.items()}
        labels, canonical = row[len(ENV_COLUMNS)], row[len(ENV_COLUMNS) + 1]
        for key, value in (labels or {}).items():
            env[f"labels.{key}"] = value
        env["workload_sha256"] = workload_sha256(canonical)
        env["_canonical"] = canonical
        out[run_id] = env
    # The callers validated the run ids: only a lake emptied meanwhile loses one.
    for run_id in wanted:
        if run_id not in out:
            raise LakeError(f"run {run_id} is no longer in the lake — run the command again")
    return out


def environment(lake: Lake, run_id: str) -> dict[str, Any]:
    """The recorded environment of one committed run: the `ENV_COLUMNS`, its labels
    (`labels.KEY`) and the hash of the workload fio ran (as `env_diff` compares them)."""
    validate(lake, RunFilter(runs=(run_id,), status=None))
    env = _environments(lake, [run_id])[run_id]
    return {k: v for k, v in env.items() if not k.startswith("_")}


def env_diff(lake: Lake, run_a: str, run_b: str) -> list[EnvDifference]:
    """Environment fields (labels per key) that differ between two committed runs."""
    return env_diffs(lake, [(run_a, run_b)])[0]


def env_diffs(lake: Lake, pairs: Sequence[tuple[str, str]]) -> list[list[EnvDifference]]:
    """`env_diff` of each pair of committed runs, their environments read at once."""
    if not pairs:
        return []
    ids = tuple(dict.fromkeys(run for pair in pairs for run in pair))
    validate(lake, RunFilter(runs=ids, status=None))
    envs = _environments(lake, ids)
    return [_differences(envs[a], envs[b]) for a, b in pairs]


def _differences(a: dict[str, Any], b: dict[str, Any]) -> list[EnvDifference]:
    """The fields of two environments (`_environments`) that differ, then what differs in
    the workloads fio ran."""
    fields = list(ENV_COLUMNS) + sorted(
        k for k in a.keys() | b.keys() if k not in ENV_COLUMNS and k.startswith("labels.")
    )
    fields.append("workload_sha256")
    out = [EnvDifference(f, a.get(f), b.get(f)) for f in fields if a.get(f) != b.get(f)]
    if a["_canonical"] and b["_canonical"] and a["workload_sha256"] != b["workload_sha256"]:
        # Name what differs in the workload fio ran, e.g. `runtime=30 vs 5`.
        for item in workload_differences(a["_canonical"], b["_canonical"], limit=20):
            out.append(EnvDifference("job", item, None))
    return out
