"""The page-cache warning's working set (runner.host.target.buffered_bytes): buffered
jobs count, unless every write of a write-only job reaches the storage before the next."""

from __future__ import annotations

import pytest

from fiolake.runner.host.target import buffered_bytes, page_cache_warning
from fiolake.runner.policy.jobfile import parse_job_file

MIB = 2**20


@pytest.mark.parametrize(
    ("options", "counted"),
    [
        ("rw=write", True),  # buffered writes land in RAM first
        ("rw=randread", True),
        ("rw=write\ndirect=1", False),
        ("rw=write\nsync=1", False),  # O_SYNC: each write is durable (sync-write-latency)
        ("rw=randwrite\nsync=dsync", False),
        ("rw=write\nfsync=1", False),
        ("rw=write\nfdatasync=1", False),
        ("readwrite=randwrite\nsync=1", False),  # the alias
        ("rw=write\nfsync=32", True),  # 31 of every 32 writes stop in the cache
        ("rw=randrw\nsync=1", True),  # its reads can come from the cache
        ("rw=read\nsync=1", True),
        ("rw=write\nsync=0", True),
    ],
)
def test_which_jobs_the_page_cache_could_serve(options: str, counted: bool) -> None:
    job = parse_job_file(f"[j]\nioengine=psync\nbs=4k\nsize=8m\n{options}\n")
    assert buffered_bytes(job) == (8 * MIB if counted else 0)


def test_global_options_count_and_only_buffered_jobs_add_up() -> None:
    job = parse_job_file(
        "[global]\nsize=8m\nsync=1\n[logs]\nrw=write\n[scan]\nrw=read\n[raw]\nrw=read\ndirect=1\n"
    )
    assert buffered_bytes(job) == 8 * MIB  # only [scan]
    assert page_cache_warning(job, 2**40) is not None
    assert page_cache_warning(parse_job_file("[logs]\nrw=write\nsync=1\nsize=8m\n"), 2**40) is None
