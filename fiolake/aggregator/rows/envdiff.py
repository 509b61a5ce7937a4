"""How the recorded environments of two runs differ."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fiolake.aggregator.lake.lake import Lake, literal
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


def _environment(lake: Lake, run_id: str) -> dict[str, Any]:
    cols = ", ".join(f'"{c}"' for c in ENV_COLUMNS)
    cur = lake.cursor()
    try:
        row = cur.execute(
            f"SELECT {cols}, labels, canonical_job_file FROM runs WHERE run_id = {literal(run_id)}"
        ).fetchone()
    finally:
        cur.close()
    if row is None:  # `env_diff` validated the run ids: only a lake emptied meanwhile
        raise LakeError(f"run {run_id} is no longer in the lake — run the command again")
    env = dict(zip(ENV_COLUMNS, row[: len(ENV_COLUMNS)], strict=True))
    if env["origin"] == "import":  # fio did not record it: say so, never leave it blank
        env = {k: UNKNOWN_IMPORTED if v is None else v for k, v in env.items()}
    labels, canonical = row[len(ENV_COLUMNS)], row[len(ENV_COLUMNS) + 1]
    for key, value in (labels or {}).items():
        env[f"labels.{key}"] = value
    env["workload_sha256"] = workload_sha256(canonical)
    env["_canonical"] = canonical
    return env


def environment(lake: Lake, run_id: str) -> dict[str, Any]:
    """The recorded environment of one committed run: the `ENV_COLUMNS`, its labels
    (`labels.KEY`) and the hash of the workload fio ran (as `env_diff` compares them)."""
    validate(lake, RunFilter(runs=(run_id,), status=None))
    return {k: v for k, v in _environment(lake, run_id).items() if not k.startswith("_")}


def env_diff(lake: Lake, run_a: str, run_b: str) -> list[EnvDifference]:
    """Environment fields (labels per key) that differ between two committed runs."""
    validate(lake, RunFilter(runs=(run_a, run_b), status=None))
    a, b = _environment(lake, run_a), _environment(lake, run_b)
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
