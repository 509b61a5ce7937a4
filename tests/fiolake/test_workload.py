"""fiolake.workload: one identity for one workload however the job file is written, and
another for any option that changes what fio does."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fiolake.workload import workload_differences, workload_jobs, workload_sha256

CANONICAL = """; written by fiolake
[global]
directory=/mnt/a/.fiolake-r-1
write_bw_log=fio
log_avg_msec=1000
allow_file_create=1

[reads]
ioengine=libaio
rw=randread
bs=4096
size=268435456
iodepth=32
time_based=1
runtime=13
"""

# The same workload as a person writes it: [global], aliases, units, comments, flags,
# an explicit default, fio's command-line directory echoed in [global].
BY_HAND = """# hand written
[global]
readwrite=randread  ; alias
blocksize=4k
size=256m
runtime=13s
time_based
numjobs=1
directory=/somewhere/else

[reads]
ioengine=libaio
iodepth=32
"""


def test_a_hand_written_file_and_fiolakes_canonical_text_are_one_workload() -> None:
    assert workload_sha256(CANONICAL) == workload_sha256(BY_HAND)
    assert workload_differences(CANONICAL, BY_HAND) == []


def test_every_option_that_changes_the_io_changes_the_workload() -> None:
    for old, new in (
        ("bs=4096", "bs=8192"),
        ("iodepth=32", "iodepth=16"),
        ("runtime=13", "runtime=14"),
        ("rw=randread", "rw=randwrite"),
        ("size=268435456", "size=268435457"),
    ):
        changed = CANONICAL.replace(old, new)
        assert workload_sha256(changed) != workload_sha256(CANONICAL), new
    assert workload_differences(CANONICAL, CANONICAL.replace("bs=4096", "bs=64k")) == [
        "bs=4096 vs 64k"
    ]


def test_a_gang_and_a_second_job_are_other_workloads() -> None:
    assert workload_sha256(CANONICAL, 2) != workload_sha256(CANONICAL)
    assert workload_sha256(CANONICAL, 1) == workload_sha256(CANONICAL)
    two = CANONICAL + "\n[more]\nrw=write\n"
    assert workload_sha256(two) != workload_sha256(CANONICAL)
    assert workload_differences(CANONICAL, two) == ["jobs=1 vs 2"]


def test_a_runtime_only_caps_a_job_bounded_by_its_size() -> None:
    """The runner adds runtime=3600 to a job without one: without time_based it only caps."""
    sized = "[w]\nrw=write\nsize=1m\n"
    assert workload_sha256(sized) == workload_sha256(sized + "runtime=3600\n")
    timed = sized + "time_based=1\n"
    assert workload_sha256(timed + "runtime=5\n") != workload_sha256(timed + "runtime=6\n")


def test_global_sections_apply_to_the_jobs_after_them_only() -> None:
    text = "[a]\nrw=write\n[global]\nbs=8k\n[b]\nrw=write\n"
    assert workload_jobs(text) == [{"rw": "write"}, {"bs": "8192", "rw": "write"}]


SIZES = st.sampled_from(
    [("4k", 4096), ("4096", 4096), ("1m", 1 << 20), ("1024k", 1 << 20), ("64KB", 65536)]
)
TIMES = st.sampled_from([("60", 60), ("1m", 60), ("60s", 60), ("60000ms", 60)])
ALIAS = st.sampled_from([("bs", "blocksize"), ("rw", "readwrite"), ("size", "size")])


@settings(max_examples=150, deadline=None)
@given(
    bs=SIZES,
    size=SIZES,
    runtime=TIMES,
    names=st.permutations(["bs", "rw", "size", "runtime", "time_based"]),
    spelled=st.lists(ALIAS, max_size=3),
    in_global=st.sets(st.sampled_from(["bs", "rw", "size", "runtime"])),
    comment=st.sampled_from(["", " ; note", " # note"]),
)
def test_how_a_file_is_written_never_changes_its_workload(
    bs: tuple[str, int],
    size: tuple[str, int],
    runtime: tuple[str, int],
    names: list[str],
    spelled: list[tuple[str, str]],
    in_global: set[str],
    comment: str,
) -> None:
    """Property: order, [global] vs job section, aliases, unit spellings and comments give
    the workload of the plain file with bytes and seconds."""
    values = {"bs": bs[0], "rw": "randwrite", "size": size[0], "runtime": runtime[0]}
    alias = dict(spelled)
    lines = {
        name: "time_based" if name == "time_based" else f"{alias.get(name, name)}={values[name]}"
        for name in names
    }
    glob = [lines[n] + comment for n in names if n in in_global]
    job = [lines[n] + comment for n in names if n not in in_global]
    written = "\n".join(["[global]", *glob, "[j]", *job]) + "\n"
    plain = f"[j]\nbs={bs[1]}\nrw=randwrite\nsize={size[1]}\nruntime={runtime[1]}\ntime_based=1\n"
    assert workload_sha256(written) == workload_sha256(plain)
