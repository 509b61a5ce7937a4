"""The effective job: what differs by construction is out, what changes the measurement is in."""

from __future__ import annotations

from fiolake.jobhash import GANG_SECTION, effective_job_sha256, job_options

JOB = (
    "; written by fiolake\n[global]\ndirectory={d}\nlog_avg_msec=1000\n"
    "[r]\nrw=randread\nruntime={t}\n"
)


def changed(a: str, b: str, gangs: tuple[int | None, int | None] = (None, None)) -> dict:
    """`[section] option` -> (a's value, b's) where the two effective jobs differ."""
    left, right = job_options(a, gangs[0]), job_options(b, gangs[1])
    return {k: (left.get(k), right.get(k)) for k in {*left, *right} if left.get(k) != right.get(k)}


def test_backends_running_the_same_job_share_the_hash() -> None:
    disk = effective_job_sha256(JOB.format(d="/var/tmp/x/r-1", t=30))
    tmpfs = effective_job_sha256(JOB.format(d="/dev/shm/y/r-2", t=30))
    assert disk == tmpfs
    assert effective_job_sha256(None) is None


def test_runtime_and_gang_size_are_part_of_the_key() -> None:
    long, short = JOB.format(d="/a", t=30), JOB.format(d="/a", t=5)
    assert effective_job_sha256(long) != effective_job_sha256(short)
    assert changed(long, short) == {"[r] runtime": ("30", "5")}
    # A gang of one is a solo run (old runs keep their hash); four hosts together are not.
    assert effective_job_sha256(long, 1) == effective_job_sha256(long)
    assert effective_job_sha256(long, 4) != effective_job_sha256(long)
    assert changed(long, long, (4, None)) == {f"{GANG_SECTION} gang_size": ("4", None)}


def test_devices_running_the_same_job_share_the_hash_but_not_a_job_file_name() -> None:
    device = "; written by fiolake\n[global]\nfilename={d}\n[r]\nrw=randread\n"
    assert effective_job_sha256(device.format(d="/dev/loop0")) == effective_job_sha256(
        device.format(d="/dev/nvme1n1")
    )
    # A job section's filename= is a file of the workload, not the target: it stays.
    named = "[global]\ndirectory=/a\n[r]\nrw=randread\nfilename={d}\n"
    assert changed(named.format(d="one"), named.format(d="two")) == {"[r] filename": ("one", "two")}
