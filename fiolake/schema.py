"""Arrow schemas of the seven lake tables (`layout.TABLES`): the user-facing column contract.

Units are raw everywhere: bytes, bytes per second, nanoseconds, milliseconds for
runtimes, percent for CPU. Columns fio may not report (old versions, gtod_reduce=1,
a failed job) are nullable and stay null rather than zero.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

TS = pa.timestamp("ms", tz="UTC")

RUNS = pa.schema(
    [
        ("run_id", pa.string()),  # one attempt at one job; unique
        ("job_id", pa.string()),  # the job (manifest); several attempts may share it
        ("campaign_id", pa.string()),
        ("repetition", pa.int32()),  # 0-based repetition index within the campaign
        # position in the campaign's planned order: `run`/`publish` interleave repetitions
        # (rep 0 of every job file and backend, then rep 1 …); null before this column
        ("sequence", pa.int32()),
        # 'measure', or 'precondition': a run that prepared the measured runs' files
        # (`--precondition`), 'purge' or 'prefill' (`--purge`, `--prefill` on a device);
        # compare and the gate read only 'measure' (null = measure)
        ("role", pa.string()),
        ("preconditioned_by", pa.string()),  # run_id of the precondition run before this one
        ("backend", pa.string()),  # user's name for the storage under test
        ("runner", pa.string()),  # runner id (host:pid or --runner-id)
        ("host", pa.string()),
        ("profile", pa.string()),  # job file stem, e.g. random-reads
        ("job_file_sha256", pa.string()),  # of the job file as submitted
        ("canonical_job_file", pa.string()),  # what fio actually ran
        # sha256 of that job minus per-run parts (fiolake.jobhash): runs that share it
        # measured the same thing; `compare` never pools runs that do not
        ("effective_job_sha256", pa.string()),
        # sha256 of the workload (fiolake.workload): the job's options as fio reads them,
        # without where it ran or how the file was written. compare, trend, regressions,
        # the gate and the app pool runs by it; null in files written before it (the runs
        # view computes it from canonical_job_file, and `lake compact` writes it)
        ("workload_sha256", pa.string()),
        ("fio_version", pa.string()),  # `fio --version` of the binary that ran
        ("fio_path", pa.string()),  # that binary's absolute path
        ("fio_argv", pa.list_(pa.string())),
        ("kernel", pa.string()),
        ("os", pa.string()),
        ("cpu_model", pa.string()),
        ("cpu_count", pa.int32()),
        ("mem_bytes", pa.int64()),
        # scaling_governor of the CPUs (comma-separated if they differ); NULL without cpufreq
        ("cpu_governor", pa.string()),
        ("target_dir", pa.string()),
        ("mount_point", pa.string()),  # mount point of the file system target_dir lands on
        ("fs_type", pa.string()),
        ("mount_options", pa.string()),
        # Every option mkfs got when fiolake made that file system itself (`--mkfs TYPE`:
        # runner.host.mkfs, fiolake's own first, e.g. '-f -q -m reflink=0'); null when it
        # did not. fs_type, mount_options and device then come from that mount, and
        # target_kind stays 'dir': the job ran on files in it.
        ("mkfs_options", pa.string()),
        ("device", pa.string()),  # block device backing target_dir, when visible
        ("device_model", pa.string()),
        # Settings of that device that change results (/sys/block/<disk>/...); NULL where
        # there is no block device (tmpfs, overlay, NFS) or the kernel does not say.
        ("device_firmware", pa.string()),  # device/firmware_rev (NVMe) or device/rev (SCSI)
        ("io_scheduler", pa.string()),  # the active queue/scheduler: none, mq-deadline ...
        ("read_ahead_bytes", pa.int64()),  # queue/read_ahead_kb × 1024
        ("write_cache", pa.string()),  # queue/write_cache: 'write back' | 'write through'
        # 'dir' (a file system) or 'device' (a raw block device: `--device`, where target_dir
        # and device name the device and the columns below describe it); null = dir
        ("target_kind", pa.string()),
        ("device_serial", pa.string()),  # device/serial; null where the kernel has none (loop)
        ("device_wwn", pa.string()),  # wwid, device/wwid or /dev/disk/by-id/wwn-…
        ("device_size_bytes", pa.int64()),
        ("device_logical_block_bytes", pa.int32()),  # queue/logical_block_size
        ("device_physical_block_bytes", pa.int32()),  # queue/physical_block_size
        ("device_rotational", pa.bool_()),  # queue/rotational
        ("device_discard_granularity_bytes", pa.int64()),  # 0: no discard support
        ("device_discard_max_bytes", pa.int64()),
        ("device_nr_requests", pa.int32()),  # queue/nr_requests
        # How the device was left before this measured run: 'purged' (--purge), 'prefilled'
        # (--prefill), 'used' (by earlier runs, or unknown); null on a dir target, except on
        # a file system --mkfs made ('purged' for the first run on it, then 'used')
        ("device_start", pa.string()),
        ("purge_method", pa.string()),  # 'discard' or 'zero-fill' (role 'purge' runs)
        ("purged_by", pa.string()),  # run_id of the purge run before this one
        ("prefilled_by", pa.string()),  # run_id of the prefill run before this one
        ("labels", pa.map_(pa.string(), pa.string())),  # runner --label k=v
        ("runtime_s", pa.int32()),  # runtime override applied to every job, if any
        ("size_bytes", pa.int64()),  # size override applied to every job, if any
        ("started_at", TS),
        ("finished_at", TS),
        ("status", pa.string()),  # ok | failed | rejected | interrupted (SIGTERM/SIGINT)
        ("error", pa.string()),  # why it failed or was rejected; null when ok
        ("exit_code", pa.int32()),  # fio's exit code; null if fio never ran
        ("watchdog", pa.string()),  # null, 'sigint' or 'sigkill' when the watchdog fired
        ("signer_keyid", pa.string()),  # key that signed the manifest (distributed runs)
        # Was the run alone, and did it measure the storage? (runner.host.contention, .target)
        ("other_fio_procs", pa.int32()),  # other fio processes seen on the host while fio ran
        ("outside_cpu_pct", pa.float64()),  # CPU used by other work, % of one core (avg)
        ("steal_pct", pa.float64()),  # CPU steal during the run, % of all CPU time
        ("page_cache_bytes", pa.int64()),  # buffered files that fit in free memory; else null
        # ms this run waited for the host lock (runner.host.lock) before fio started; null
        # when it ran without it (--share-host) or never reached fio
        ("host_lock_wait_ms", pa.float64()),
        # other-fio, cpu-busy (outside_cpu_pct > 25), steal (> 5), page-cache, cut-short
        # (fio stopped at the injected runtime cap before the workload was done),
        # shared-host (ran without the host lock: --share-host)
        ("flags", pa.list_(pa.string())),
        # Gang jobs (`publish --gang N`, fiolake.gangs); null for one-runner runs.
        ("gang_size", pa.int32()),  # members that ran the job together
        ("gang_slot", pa.int32()),  # this member's 0-based slot
        ("gang_attempt", pa.int32()),  # 1-based attempt of the gang (a failed one re-runs)
        ("gang_start_at", TS),  # the instant every member was to start fio (store clock)
        # when this member actually started fio, minus gang_start_at, by the store's clock
        ("start_skew_ms", pa.float64()),
        ("clock_offset_ms", pa.float64()),  # store clock − this host's clock
        ("clock_offset_error_ms", pa.float64()),  # ± bound of that offset
        # Where the run comes from: 'run' (fiolake ran fio) or 'import' (`fiolake import`
        # read fio output made elsewhere; what fio did not record stays NULL). NULL in
        # files written before this column: those are all 'run'.
        ("origin", pa.string()),
        ("source_file", pa.string()),  # an import's file name (as given; '-' for stdin)
        ("source_sha256", pa.string()),  # sha256 of that file's bytes
    ]
)

_LAT_STATS = []
for _kind in ("slat", "clat", "lat"):
    _LAT_STATS += [
        (f"{_kind}_min_ns", pa.int64()),
        (f"{_kind}_max_ns", pa.int64()),
        (f"{_kind}_mean_ns", pa.float64()),
        (f"{_kind}_stddev_ns", pa.float64()),
    ]

# Percentiles promoted to columns of `results`; the full list is in `percentiles`.
RESULT_PERCENTILES: dict[str, float] = {
    "clat_p50_ns": 50.0,
    "clat_p90_ns": 90.0,
    "clat_p95_ns": 95.0,
    "clat_p99_ns": 99.0,
    "clat_p999_ns": 99.9,
    "clat_p9999_ns": 99.99,
}

# Per-second completion-latency percentiles (fio's histogram log) in `timeseries`.
SECOND_PERCENTILES: dict[str, float] = {
    "clat_p50_ns": 50.0,
    "clat_p90_ns": 90.0,
    "clat_p99_ns": 99.0,
    "clat_p999_ns": 99.9,
    "clat_p9999_ns": 99.99,
}

RESULTS = pa.schema(
    [
        ("run_id", pa.string()),
        ("backend", pa.string()),
        ("job_name", pa.string()),
        ("job_index", pa.int32()),  # position in fio's jobs[] (names repeat for numjobs)
        ("groupid", pa.int32()),
        ("direction", pa.string()),  # read | write | trim
        ("io_bytes", pa.int64()),
        ("total_ios", pa.int64()),
        ("bw_bytes", pa.int64()),  # bytes per second
        ("iops", pa.float64()),
        ("runtime_ms", pa.int64()),
        *_LAT_STATS,
        *[(name, pa.int64()) for name in RESULT_PERCENTILES],
        ("bw_min_bytes", pa.int64()),
        ("bw_max_bytes", pa.int64()),
        ("bw_mean_bytes", pa.float64()),
        ("bw_stddev_bytes", pa.float64()),
        ("iops_min", pa.float64()),
        ("iops_max", pa.float64()),
        ("iops_mean", pa.float64()),
        ("iops_stddev", pa.float64()),
        ("job_runtime_ms", pa.int64()),
        ("usr_cpu", pa.float64()),  # percent of job runtime
        ("sys_cpu", pa.float64()),
        ("ctx", pa.int64()),
        ("majf", pa.int64()),
        ("minf", pa.int64()),
        ("job_error", pa.int32()),  # fio's errno for the job, 0 when fine
        ("rw", pa.string()),
        ("bs", pa.string()),
        ("iodepth", pa.int32()),
        ("numjobs", pa.int32()),
        ("ioengine", pa.string()),
        ("direct", pa.bool_()),
        ("group_reporting", pa.bool_()),
        # fiolake.steady over the per-second IOPS: last 5 s flat (PTS rule), or null when
        # the series is shorter than the window; seconds before the first flat window
        ("steady_state", pa.bool_()),
        ("warmup_s", pa.int32()),
    ]
)

TIMESERIES = pa.schema(
    [
        ("run_id", pa.string()),
        ("job_name", pa.string()),
        ("job_index", pa.int32()),  # index into jobs[] (the group's entry under group_reporting)
        ("thread", pa.int32()),  # fio's 1-based thread number (the N of its log files)
        ("direction", pa.string()),
        ("second", pa.int32()),  # 1-based window end, in seconds since the job started
        ("bw_bytes", pa.int64()),
        ("iops", pa.int64()),
        ("lat_mean_ns", pa.int64()),
        ("clat_mean_ns", pa.int64()),
        ("slat_mean_ns", pa.int64()),
        ("zero_filled", pa.bool_()),  # fio logged no row for this window: no I/O happened
        ("partial", pa.bool_()),  # a window shorter than log_avg_msec (the job's last)
        ("window_ms", pa.int32()),  # the window's length: from fio's previous stamp to this one
        ("io_bytes", pa.int64()),  # bytes moved in the window (Σ per series = fio's io_bytes)
        ("ios", pa.int64()),  # I/Os completed in the window
        ("from_totals", pa.bool_()),  # fio did not log the window: bytes are totals − logged
        ("clat_samples", pa.int64()),  # completions in the window's latency histogram
        *[(name, pa.int64()) for name in SECOND_PERCENTILES],
    ]
)

PERCENTILES = pa.schema(
    [
        ("run_id", pa.string()),
        ("job_name", pa.string()),
        ("job_index", pa.int32()),
        ("direction", pa.string()),
        ("lat_type", pa.string()),  # slat | clat | lat
        ("percentile", pa.float64()),
        ("value_ns", pa.int64()),
        ("source", pa.string()),  # fio_json | json_plus_bins
    ]
)

DISK_UTIL = pa.schema(
    [
        ("run_id", pa.string()),
        ("device", pa.string()),  # fio's disk_util[].name, e.g. nvme0n1 or dm-0
        ("read_ios", pa.int64()),
        ("write_ios", pa.int64()),
        ("read_merges", pa.int64()),
        ("write_merges", pa.int64()),
        ("read_ticks_ms", pa.int64()),  # time the device spent on reads (/proc/diskstats)
        ("write_ticks_ms", pa.int64()),
        ("in_queue_ms", pa.int64()),
        ("util", pa.float64()),  # percent of the run the device was busy
        ("slave_of", pa.string()),  # the dm/md device this one sits under, if any
    ]
)

IODEPTH = pa.schema(
    [
        ("run_id", pa.string()),
        ("job_name", pa.string()),
        ("job_index", pa.int32()),
        ("kind", pa.string()),  # level (in flight) | submit | complete (per call)
        ("depth", pa.string()),  # fio's bucket label: 1, 2, 4, … '>=64' (0 for submit/complete)
        ("percent", pa.float64()),  # of the job's I/Os (level) or calls (submit/complete)
    ]
)

LATENCY_BINS = pa.schema(
    [
        ("run_id", pa.string()),
        ("job_name", pa.string()),
        ("job_index", pa.int32()),
        ("direction", pa.string()),
        ("lat_type", pa.string()),  # slat | clat | lat
        ("value_ns", pa.int64()),  # fio's bucket midpoint (the json+ key)
        ("count", pa.int64()),
    ]
)

SCHEMAS: dict[str, pa.Schema] = {
    "runs": RUNS,
    "results": RESULTS,
    "timeseries": TIMESERIES,
    "percentiles": PERCENTILES,
    "disk_util": DISK_UTIL,
    "iodepth": IODEPTH,
    "latency_bins": LATENCY_BINS,
}


def to_table(name: str, rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Build an Arrow table of lake table `name` from row dicts; missing keys become null."""
    schema = SCHEMAS[name]
    rows = list(rows)
    unknown = {k for row in rows for k in row} - set(schema.names)
    if unknown:
        raise ValueError(f"unknown columns for table {name}: {sorted(unknown)}")
    columns = {field.name: [row.get(field.name) for row in rows] for field in schema}
    return pa.Table.from_pydict(columns, schema=schema)


def parquet_bytes(table: pa.Table, *, row_group_size: int | None = None) -> bytes:
    """A lake table encoded as one zstd Parquet file (how every lake file is written)."""
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd", row_group_size=row_group_size)
    return buf.getvalue()
