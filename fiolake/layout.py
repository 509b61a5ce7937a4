"""The one place that knows how lake object keys are laid out.

Every other module builds keys through these functions and never parses meaning
out of a key it did not get from here.
"""

from __future__ import annotations

import re
from datetime import datetime

JOBS_PREFIX = "jobs/"
CLAIMS_PREFIX = "claims/"
COMMITS_PREFIX = "commits/"
RESULTS_PREFIX = "results/"
RAW_PREFIX = "raw/"

TABLES = ("runs", "results", "timeseries", "percentiles")

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_id(kind: str, value: str) -> str:
    """Return `value` if it is safe inside an object key, else raise ValueError."""
    if not _ID.match(value) or ".." in value:
        raise ValueError(
            f"invalid {kind} {value!r}: use letters, digits, '.', '_' or '-' (max 128)"
        )
    return value


def job_key(campaign_id: str, job_id: str) -> str:
    """Signed manifest of one job."""
    return f"{JOBS_PREFIX}{check_id('campaign id', campaign_id)}/{check_id('job id', job_id)}.json"


def job_id_from_key(key: str) -> str:
    """The job id of a key returned by listing `jobs/` (the inverse of `job_key`)."""
    if not key.startswith(JOBS_PREFIX) or not key.endswith(".json"):
        raise ValueError(f"not a job key: {key!r}")
    return check_id("job id", key.rsplit("/", 1)[1][: -len(".json")])


def claim_key(job_id: str) -> str:
    """Lease object of one job."""
    return f"{CLAIMS_PREFIX}{check_id('job id', job_id)}.json"


def commit_key(job_id: str) -> str:
    """Create-only marker naming the run id that won the job."""
    return f"{COMMITS_PREFIX}{check_id('job id', job_id)}.json"


def result_key(table: str, day: datetime, run_id: str) -> str:
    """One Parquet file per table per run attempt, Hive-partitioned by UTC date."""
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}; tables are {', '.join(TABLES)}")
    return f"{RESULTS_PREFIX}{table}/date={day:%Y-%m-%d}/{check_id('run id', run_id)}.parquet"


def table_glob(table: str) -> str:
    """Glob (relative to the lake root) matching every Parquet file of `table`."""
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}; tables are {', '.join(TABLES)}")
    return f"{RESULTS_PREFIX}{table}/*/*.parquet"


def commits_glob() -> str:
    """Glob (relative to the lake root) matching every commit marker."""
    return f"{COMMITS_PREFIX}*.json"


def raw_key(run_id: str, name: str) -> str:
    """fio's own output for one run attempt (fio.json, logs.tar.gz, stderr.txt, jobfile.fio)."""
    if "/" in name or name.startswith("."):
        raise ValueError(f"invalid raw object name {name!r}")
    return f"{RAW_PREFIX}{check_id('run id', run_id)}/{name}"
