"""A store with no room left: a lake directory on a full file system (a small tmpfs the
test mounts and fills) and a MinIO whose one drive is full (a tmpfs the test mounts and
fills) refuse a write. The CLI says the store is out of space and what to free, exit 1, no
traceback, no temporary file left; the store's StoreFull is a StoreUnavailable, so a
runner keeps its results spooled and retries as it does through an outage."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from fiolake.cli import cli
from fiolake.errors import StoreFull, StoreUnavailable
from fiolake.stack.process import wait_for
from fiolake.store import LocalStore, S3Store
from tests.own_minio import own_minio
from tests.versitygw import S3Server

CORPUS = Path(__file__).parent.parent / "data" / "fio-outputs"
FIO_OUTPUT = CORPUS / "vc-fio-3.13.txt"

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (mount)")


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `where`, unmounted afterwards."""
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@contextlib.contextmanager
def full_tmpfs(where: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs at `where`, filled but for a few KiB."""
    with tmpfs(where, "1m"):
        filler = where / "filler"
        with contextlib.suppress(OSError), filler.open("wb") as f:  # until ENOSPC
            while True:
                f.write(bytes(4096))
                f.flush()
        yield where


@needs_root
def test_a_lake_on_a_full_file_system_says_so(tmp_path: Path) -> None:
    with full_tmpfs(tmp_path / "small") as small:
        lake = small / "lake"
        lake.mkdir()
        res = CliRunner().invoke(
            cli, ["import", str(FIO_OUTPUT), "--backend", "b", "--lake", str(lake)]
        )
        assert res.exit_code == 1, res.output
        assert "Traceback" not in res.output
        error = res.stderr.strip().splitlines()[-1]
        assert error.startswith(("Error: raw/", "Error: results/")), error  # the first write
        assert error.endswith(
            f": no space left on the file system of {lake} — free space there (or remove "
            "old runs with `fiolake lake prune`), then try again"
        ), error
        assert not [p for p in lake.rglob("*") if p.name.endswith(".tmp")]
        assert not list(lake.rglob("commits/**/*.json"))  # nothing committed half-written

        with pytest.raises(StoreFull) as raised:
            LocalStore(lake).put("x/big", bytes(2**20))
        assert isinstance(raised.value, StoreUnavailable)  # runners retry it
        assert not list((lake / "x").iterdir())

        (small / "filler").unlink()  # space again: the same import succeeds
        res = CliRunner().invoke(
            cli, ["import", str(FIO_OUTPUT), "--backend", "b", "--lake", str(lake)]
        )
        assert res.exit_code == 0, res.output


@needs_root
@pytest.mark.stack
def test_a_full_minio_says_out_of_space_not_try_again(tmp_path: Path) -> None:
    """MinIO answers 507 XMinioStorageFull once its drive has less free space than it keeps
    (4 MiB left of 1.1 GB here; with 256 KiB left the write itself fails, 500 InternalError).
    MinIO refuses drives under ~1 GiB, hence the size."""
    with tmpfs(tmp_path / "drive", "1100m") as drive, own_minio(tmp_path, drive / "data") as s3:
        store = S3Store("lake", "", s3)
        store.client.create_bucket(Bucket="lake")
        free = shutil.disk_usage(drive).free
        filler = str(drive / "filler")
        subprocess.run(["fallocate", "-l", str(free - 4 * 2**20), filler], check=True)

        def writable() -> bool:
            with contextlib.suppress(StoreFull):
                store.put("k", b"x")
                return True
            return False

        # MinIO looks at its drive about once a second: a write just after the fill
        # still succeeded here, so wait until it refuses one.
        wait_for(lambda: not writable(), timeout_s=30, what="MinIO to see its drive full")
        env = S3Server("minio", s3, "lake").environ()
        args = ["import", str(FIO_OUTPUT), "--backend", "b", "--lake", "s3://lake/full"]
        res = CliRunner().invoke(cli, args, env=env)
        assert res.exit_code == 1, res.output
        assert "Traceback" not in res.output
        error = res.stderr.strip().splitlines()[-1]
        # The first write: the store probe's (a lake's first contact) or the run's own.
        assert error.startswith(("Error: full/probe/", "Error: raw/")), error
        assert error.endswith(
            f": {s3.endpoint} answered 507 (XMinioStorageFull) — the object store is out of "
            "space: free space on its drives (or remove old runs with `fiolake lake "
            "prune`), then try again (runners keep their results and retry on their own)"
        ), error
        assert list(store.list("full/")) == []  # nothing written, the probe cleaned up

        with pytest.raises(StoreFull):
            store.put("k", b"x")

        os.unlink(filler)  # room again, once MinIO looks at its drive again
        wait_for(writable, timeout_s=30, what="MinIO with room again")
        # the same import succeeds
        res = CliRunner().invoke(cli, args, env=env)
        assert res.exit_code == 0, res.output


def test_a_write_that_ran_out_of_room_before_minio_looked_is_out_of_space() -> None:
    """Between MinIO's looks at its drive (about once a second) a write can fail on the
    drive itself: 500 InternalError with the ENOSPC in its message (seen filling a
    drive while runners wrote). A race the MinIO test above cannot cause on purpose —
    MinIO checks a PUT's size against its free space and answers 507 — so the answer is
    built here, in the words MinIO sent."""
    from botocore.exceptions import ClientError

    from fiolake.s3client import s3_error

    def answer(message: str) -> ClientError:
        body = {"Error": {"Code": "InternalError", "Message": message},
                "ResponseMetadata": {"HTTPStatusCode": 500}}  # fmt: skip
        return ClientError(body, "PutObject")  # type: ignore[arg-type]

    said = "We encountered an internal error, please try again.: cause(no space left on device)"
    where = {"url": "s3://lake", "endpoint": "https://s3:9000", "bucket": "lake"}
    full = s3_error(answer(said), "raw/x", **where)
    assert isinstance(full, StoreFull)
    assert str(full) == (
        f"raw/x: https://s3:9000 answered 500 (InternalError: {said}) — the object store is "
        "out of space: free space on its drives (or remove old runs with `fiolake lake "
        "prune`), then try again (runners keep their results and retry on their own)"
    )
    other = s3_error(answer("We encountered an internal error, please try again."), "raw/x",
                     **where)  # fmt: skip
    assert isinstance(other, StoreUnavailable) and not isinstance(other, StoreFull)
