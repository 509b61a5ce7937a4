"""The one place that knows how lake object keys are laid out.

Every other module builds keys through these functions and never parses meaning
out of a key it did not get from here.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

JOBS_PREFIX = "jobs/"
# Manifests by backend, then campaign: a runner lists only its own backend's campaigns.
BY_BACKEND_PREFIX = f"{JOBS_PREFIX}by-backend/"
# done/<backend>/<campaign>.json: create-only, written once every job of that campaign for
# that backend is committed, so no runner lists the campaign's jobs again.
DONE_PREFIX = "done/"
CLAIMS_PREFIX = "claims/"
# waiting/<job_id>/<runner>.json: why a runner left a job unjudged (e.g. Vault unreachable),
# overwritten by that runner, read by `fiolake status` for jobs still pending.
WAITING_PREFIX = "waiting/"
# fleet/<runner>.json: one runner's latest status (host, backend, jobs done, current job),
# overwritten at start, per job and every few minutes while idle; read by the app.
FLEET_PREFIX = "fleet/"
COMMITS_PREFIX = "commits/"
# commit-log/<hour>h/<store time>-<job_id>.json: a copy of each marker written just after
# it, keyed by the store's clock, so readers find commits made since a compaction with one
# short LIST (StartAfter) instead of listing every marker ever written. The hour folder
# lets a listing skip whole hours before its start (a local lake's directory, MinIO's
# walk) instead of reading every entry ever written; lakes written before it hold
# entries without one (`commit-log/<store time>-<job_id>.json`), read alike.
COMMIT_LOG_PREFIX = "commit-log/"
RESULTS_PREFIX = "results/"
# gangs/<job_id>/a<attempt>/...: how N runners of a gang job meet (fiolake.gangs): one
# create-only slot lease per member, the start instant, each member's done note, and
# the marker that fails an attempt as a whole.
GANGS_PREFIX = "gangs/"
RAW_PREFIX = "raw/"
# accepted/<campaign>.json: create-only, a team's record that the change a campaign brought
# is intended (who, when, why; `fiolake gate accept`): the gate's default baseline from then
# on, and a change point at it is no regression (aggregator.lake.accepted).
ACCEPTED_PREFIX = "accepted/"
# probe/<random>/...: the store probe's scratch keys (fiolake.storeprobe), removed when it ends.
PROBE_PREFIX = "probe/"

# Compaction's summary of each night's runs per case (aggregator.lake.summaries): derived
# from `runs` and `results`, a Delta table beside theirs, never written by a runner.
SUMMARY_TABLE = "night_summaries"
# Each run's headline values per job × direction with its attributes, sorted by case
# (aggregator.lake.series): what a trend of one case over a year reads. Derived the same way.
SERIES_TABLE = "run_series"
DERIVED_TABLES = (SUMMARY_TABLE, SERIES_TABLE)

TABLES = (
    "runs",
    "results",
    "timeseries",
    "percentiles",
    "disk_util",
    "iodepth",
    "latency_bins",
)

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_id(kind: str, value: str) -> str:
    """Return `value` if it is safe inside an object key, else raise ValueError."""
    if not isinstance(value, str) or not _ID.match(value) or ".." in value:
        raise ValueError(
            f"invalid {kind} {value!r} — use letters, digits, '.', '_' or '-' (at most 128, "
            "starting with a letter or digit)"
        )
    return value


def job_key(campaign_id: str, job_id: str, backend: str | None = None) -> str:
    """Signed manifest of one job: `jobs/by-backend/<backend>/<campaign>/<job>.json`.

    Without `backend`, the key of the first layout (`jobs/<campaign>/<job>.json`), which
    lakes written before it still hold and runners still read.
    """
    campaign = check_id("campaign id", campaign_id)
    job = check_id("job id", job_id)
    if backend is None:
        return f"{JOBS_PREFIX}{campaign}/{job}.json"
    return f"{backend_campaign_prefix(backend, campaign)}{job}.json"


def parse_job_key(key: str) -> tuple[str, str]:
    """(campaign_id, job_id) of a manifest key in either layout (the inverse of `job_key`)."""
    parts = key.split("/")
    if key.startswith(BY_BACKEND_PREFIX) and len(parts) == 5:
        check_id("backend", parts[2])
        campaign, name = parts[3], parts[4]
    elif len(parts) == 3 and parts[0] + "/" == JOBS_PREFIX and parts[1] != "by-backend":
        campaign, name = parts[1], parts[2]
    else:
        raise ValueError(f"not a job key: {key!r}")
    if not name.endswith(".json"):
        raise ValueError(f"not a job key: {key!r}")
    return check_id("campaign id", campaign), check_id("job id", name[: -len(".json")])


def backend_prefix(backend: str) -> str:
    """Prefix whose immediate children are the campaigns that have jobs for `backend`."""
    return f"{BY_BACKEND_PREFIX}{check_id('backend', backend)}/"


def backend_campaign_prefix(backend: str, campaign_id: str) -> str:
    """Prefix listing the jobs of one campaign for one backend."""
    return f"{backend_prefix(backend)}{check_id('campaign id', campaign_id)}/"


def campaign_prefix(campaign_id: str) -> str:
    """Prefix listing every job of one campaign in the first layout."""
    return f"{JOBS_PREFIX}{check_id('campaign id', campaign_id)}/"


def done_prefix(backend: str) -> str:
    """Prefix of the done markers of one backend's campaigns."""
    return f"{DONE_PREFIX}{check_id('backend', backend)}/"


def done_key(backend: str, campaign_id: str) -> str:
    """Create-only marker: every job of this campaign for this backend is committed."""
    return f"{done_prefix(backend)}{check_id('campaign id', campaign_id)}.json"


def campaign_from_done_key(key: str) -> str | None:
    """The campaign id of a key listed under `done_prefix(...)`, else None."""
    parts = key.split("/")
    if len(parts) != 3 or parts[0] + "/" != DONE_PREFIX or not parts[2].endswith(".json"):
        return None
    try:
        return check_id("campaign id", parts[2][: -len(".json")])
    except ValueError:
        return None


def accepted_key(campaign_id: str) -> str:
    """Create-only record that campaign `campaign_id`'s change is accepted."""
    return f"{ACCEPTED_PREFIX}{check_id('campaign id', campaign_id)}.json"


def campaign_from_accepted_key(key: str) -> str | None:
    """The campaign id of a key listed under ACCEPTED_PREFIX, else None."""
    name = key.removeprefix(ACCEPTED_PREFIX)
    if name == key or "/" in name or not name.endswith(".json"):
        return None
    try:
        return check_id("campaign id", name[: -len(".json")])
    except ValueError:
        return None


def claim_key(job_id: str) -> str:
    """Lease object of one job."""
    return f"{CLAIMS_PREFIX}{check_id('job id', job_id)}.json"


def waiting_prefix(job_id: str) -> str:
    """Prefix of the notes runners left about a job they could not judge."""
    return f"{WAITING_PREFIX}{check_id('job id', job_id)}/"


def slug(text: str, limit: int, empty: str = "x") -> str:
    """`text` made key-safe: runs of other characters become `_`, at most `limit` long,
    `empty` when nothing is left."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._-")[:limit] or empty


def waiting_key(job_id: str, runner_id: str) -> str:
    """One runner's note about `job_id` (the runner id made key-safe)."""
    return f"{waiting_prefix(job_id)}{slug(runner_id, 100, 'runner')}.json"


def fleet_key(runner_id: str) -> str:
    """One runner's status object (the runner id made key-safe)."""
    return f"{FLEET_PREFIX}{slug(runner_id, 100, 'runner')}.json"


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


# Compaction (aggregator): merged copies of committed runs, read instead of the small
# per-run files they cover. results/ and commits/ stay untouched; see docs/aggregator.md.
COMPACTED_PREFIX = "compacted/"
# One record per compaction generation. The folder keeps the name it had when these were
# called manifests, so lakes compacted before the rename still read.
GENERATIONS_PREFIX = f"{COMPACTED_PREFIX}_manifests/"
# Delta Lake tables of the compacted layer: compacted/delta/<table>/ (+ `commits`)
DELTA_PREFIX = f"{COMPACTED_PREFIX}delta/"

_RESULT_KEY = re.compile(r"^results/([a-z_]+)/date=(\d{4}-\d{2}-\d{2})/([^/]+)\.parquet$")


def parse_result_key(key: str) -> tuple[str, str, str] | None:
    """(table, 'YYYY-MM-DD', run_id) of a key made by `result_key`, else None."""
    m = _RESULT_KEY.match(key)
    if not m or m.group(1) not in TABLES:
        return None
    try:
        return m.group(1), m.group(2), check_id("run id", m.group(3))
    except ValueError:
        return None


def run_id_of_attempt_key(key: str) -> str | None:
    """The run id of a results/ or raw/ key (the objects of one attempt), else None."""
    parsed = parse_result_key(key)
    if parsed is not None:
        return parsed[2]
    parts = key.split("/")
    if len(parts) != 3 or parts[0] + "/" != RAW_PREFIX:
        return None
    try:
        return check_id("run id", parts[1])
    except ValueError:
        return None


def generation_key(generation: int) -> str:
    """Create-only record of compaction generation `generation` (the newest one wins)."""
    return f"{GENERATIONS_PREFIX}g{generation:08d}.json"


def compaction_generation(key: str) -> int | None:
    """The generation of a record's key (inverse of `generation_key`), else None."""
    m = re.match(rf"^{GENERATIONS_PREFIX}g(\d{{8}})\.json$", key)
    return int(m.group(1)) if m else None


def generation_keys_key(generation: int, token: str) -> str:
    """Create-only Parquet object of the ids a generation's tables cover (format 3), named
    by a token of the compaction that wrote it: an interrupted try leaves its own, never
    another body under the name the record gives."""
    return f"{GENERATIONS_PREFIX}g{generation:08d}-keys-{check_id('token', token)}.parquet"


def generation_cases_key(generation: int, token: str) -> str:
    """Parquet object of a generation's case summaries (every compacted run of each case
    folded, `aggregator.lake.cases`), named by a token of the compaction that wrote it."""
    return f"{GENERATIONS_PREFIX}g{generation:08d}-cases-{check_id('token', token)}.parquet"


def generation_object(key: str) -> int | None:
    """The generation of a record's, a covered-ids or a case-summaries object's key, else
    None (cleanup)."""
    m = re.match(rf"^{GENERATIONS_PREFIX}g(\d{{8}})(\.json|-(keys|cases)-[^/]+\.parquet)$", key)
    return int(m.group(1)) if m else None


def compacted_key(table: str, month: str, generation: int, token: str) -> str:
    """A merged Parquet file of one table × month (YYYY-MM), written by one compaction."""
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}; tables are {', '.join(TABLES)}")
    if not re.match(r"^\d{4}-\d{2}$", month):
        raise ValueError(f"invalid month {month!r}: use YYYY-MM")
    name = f"g{generation:08d}-{check_id('token', token)}.parquet"
    return f"{COMPACTED_PREFIX}{table}/month={month}/{name}"


def is_delta_table(table: str) -> bool:
    """Whether this fiolake keeps `table` as a Delta table of the lake (a generation
    record a newer fiolake wrote may name tables this one does not know)."""
    return table in (*TABLES, "commits", *DERIVED_TABLES)


def delta_table_prefix(table: str) -> str:
    """The folder of the Delta table holding compacted `table` (or `commits`, or a table
    compaction derives from runs and results: DERIVED_TABLES)."""
    if not is_delta_table(table):
        known = (*TABLES, "commits", *DERIVED_TABLES)
        raise ValueError(f"unknown table {table!r}; tables are {', '.join(known)}")
    return f"{DELTA_PREFIX}{table}/"


def commits_index_key(generation: int, token: str) -> str:
    """The commit markers known to one compaction, as one Parquet file."""
    return f"{COMPACTED_PREFIX}commits/g{generation:08d}-{check_id('token', token)}.parquet"


def job_id_from_commit_key(key: str) -> str | None:
    """The job id of a key returned by listing `commits/` (inverse of `commit_key`), else None."""
    if not key.startswith(COMMITS_PREFIX) or not key.endswith(".json") or key.count("/") != 1:
        return None
    try:
        return check_id("job id", key[len(COMMITS_PREFIX) : -len(".json")])
    except ValueError:
        return None


def _log_time(at: datetime) -> str:
    # Fixed width, so key order is time order.
    return f"{at.astimezone(UTC):%Y%m%dT%H%M%S.%f}Z"


_LOG_STAMP = len(_log_time(datetime(2000, 1, 1, tzinfo=UTC)))
# The hour folder: the stamp's first 11 characters (YYYYMMDDTHH), then "h". A letter after
# the hour sorts after every digit, so the folder sorts after `commit_log_start` of any
# instant in that hour and before that of the next: one StartAfter bound serves both
# layouts (entries with and without the folder).
_LOG_HOUR = 11


def commit_log_key(at: datetime, job_id: str) -> str:
    """The commit-log entry of `job_id`, written at store time `at`."""
    stamp = _log_time(at)
    name = f"{stamp}-{check_id('job id', job_id)}.json"
    return f"{COMMIT_LOG_PREFIX}{stamp[:_LOG_HOUR]}h/{name}"


def commit_log_start(at: datetime) -> str:
    """A key that sorts before every commit-log entry written at or after `at` (in either
    layout), and after every entry of the hours before `at`'s."""
    return f"{COMMIT_LOG_PREFIX}{_log_time(at)}"


def parse_commit_log_key(key: str) -> tuple[str, str] | None:
    """(the key without its hour folder, job id) of a commit-log key, else None. The first
    sorts by the entry's time as `commit_log_start` does; lakes written before the hour
    folder hold keys of that form."""
    name = key.removeprefix(COMMIT_LOG_PREFIX)
    if name == key or not name.endswith(".json"):
        return None
    folder, _, name = name.rpartition("/")
    # An entry's folder is its own stamp's hour: one elsewhere would escape the readers'
    # StartAfter bound, so it is not an entry.
    if folder and folder != f"{name[:_LOG_HOUR]}h":
        return None
    if name[_LOG_STAMP : _LOG_STAMP + 1] != "-":
        return None
    try:
        job_id = check_id("job id", name[_LOG_STAMP + 1 : -len(".json")])
    except ValueError:
        return None
    return f"{COMMIT_LOG_PREFIX}{name}", job_id


def job_id_from_commit_log_key(key: str) -> str | None:
    """The job id of a commit-log key (inverse of `commit_log_key`), else None."""
    parsed = parse_commit_log_key(key)
    return parsed[1] if parsed else None


def gang_prefix(job_id: str) -> str:
    """Prefix of every attempt of one gang job."""
    return f"{GANGS_PREFIX}{check_id('job id', job_id)}/"


def gang_attempt_prefix(job_id: str, attempt: int) -> str:
    """Prefix of one attempt of a gang job (attempts count from 1)."""
    if attempt < 1:
        raise ValueError(f"gang attempts count from 1, not {attempt}")
    return f"{gang_prefix(job_id)}a{attempt:04d}/"


def gang_attempt_from_child(name: str) -> int | None:
    """The attempt number of a child listed under `gang_prefix(...)`, else None."""
    m = re.match(r"^a(\d{4})$", name)
    return int(m.group(1)) if m and int(m.group(1)) >= 1 else None


def gang_slot_key(job_id: str, attempt: int, slot: int) -> str:
    """Lease of member slot `slot` (0-based) of an attempt: created once, then renewed."""
    return f"{gang_attempt_prefix(job_id, attempt)}slot-{slot:03d}.json"


def gang_done_key(job_id: str, attempt: int, slot: int) -> str:
    """Create-only note: member `slot` uploaded its run (names the run id and its start)."""
    return f"{gang_attempt_prefix(job_id, attempt)}done-{slot:03d}.json"


def gang_start_key(job_id: str, attempt: int) -> str:
    """Create-only: the instant (store clock) every member starts fio at."""
    return f"{gang_attempt_prefix(job_id, attempt)}start.json"


def gang_failed_key(job_id: str, attempt: int) -> str:
    """Create-only: this attempt failed as a whole (a member died or lost its slot)."""
    return f"{gang_attempt_prefix(job_id, attempt)}failed.json"


# One compactor at a time: a create-only lock with an expiry and a fencing token (under
# compacted/, the one prefix the compactor's credentials may write).
COMPACTION_LOCK_KEY = f"{COMPACTED_PREFIX}_lock.json"
