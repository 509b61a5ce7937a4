"""Every refusal comes before every write: a `run` or `runner` refused after it claimed
its device (host lock, spool, keys, lake) leaves the device byte-identical, its file
system still there, although --wipe-signatures allowed erasing it (issue 41)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from fiolake.cli import cli
from fiolake.signing import LocalSigner
from tests.runner.loopdev import loop_device, requires_loop, sha256

pytestmark = requires_loop

TINY = "[t]\nrw=randread\nbs=4k\nsize=1M\nioengine=psync\ndirect=1\nruntime=1\n"
HOST_LOCK_FIX = (
    "give --host-lock PATH (or FIOLAKE_HOST_LOCK) in a directory you may write to, or "
    "--share-host to run without it (runs are then flagged shared-host)"
)
RUNNER = ["runner", "--backend", "b", "--once"]
LOCK_OK = ["--host-lock", "{tmp}/host.lock"]
NO_LOCK = ["--host-lock", "/proc/nope/host.lock"]
# (argv before the device flags, environment, exit code, the whole error). Every case
# follows a successful claim of an ext4 loop device with --wipe-signatures.
CASES = {
    "runner: host lock": (
        [*RUNNER, *NO_LOCK, "--lake", "{tmp}/lake"],
        {},
        2,
        f"Error: cannot use the host lock /proc/nope/host.lock: No such file or directory — "
        f"{HOST_LOCK_FIX}\n",
    ),
    "runner: spool": (
        [*RUNNER, *LOCK_OK, "--lake", "{tmp}/lake", "--spool-dir", "{tmp}/a-file/spool"],
        {"FIOLAKE_TRUSTED_KEY": "{tmp}/key.pub"},
        2,
        "Error: cannot use the spool directory {tmp}/a-file/spool: Not a directory — give "
        "--spool-dir DIR where this user may create and write files\n",
    ),
    "runner: no trusted keys": (
        [*RUNNER, *LOCK_OK, "--lake", "{tmp}/lake", "--spool-dir", "{tmp}/spool"],
        {},
        1,
        "Error: no trusted signing keys — set FIOLAKE_TRUSTED_KEY to a public key file or "
        "VAULT_ADDR/VAULT_TOKEN to fetch keys from Vault transit\n",
    ),
    "runner: lake without endpoint": (
        [*RUNNER, *LOCK_OK, "--lake", "s3://b", "--spool-dir", "{tmp}/spool"],
        {},
        1,
        "Error: lake s3://b is on S3 but no endpoint is configured: set FIOLAKE_S3_ENDPOINT "
        '(run `eval "$(fiolake stack env)"` for the local stack)\n',
    ),
    "run: the prefill job": (
        ["run", "{tmp}/tiny.fio", *LOCK_OK, "--purge", "--prefill", "--max-iodepth", "16"],
        {},
        1,
        "Error: job file refused:\n  device-prefill: [prefill] iodepth=32: above the cap of 16 "
        "(raise it with --max-iodepth)\n",
    ),
    "run: host lock": (
        ["run", "{tmp}/tiny.fio", *NO_LOCK, "--lake", "{tmp}/lake"],
        {},
        2,
        f"Error: cannot use the host lock /proc/nope/host.lock: No such file or directory — "
        f"{HOST_LOCK_FIX}\n",
    ),
}


def _file_system(dev: Path) -> str:
    found = subprocess.run(
        ["blkid", "-p", "-o", "value", "-s", "TYPE", str(dev)], capture_output=True, text=True
    )
    return found.stdout.strip()


@pytest.mark.parametrize(("args", "env", "code", "message"), CASES.values(), ids=list(CASES))
def test_a_refusal_after_the_claim_writes_nothing(
    args: list[str], env: dict[str, str], code: int, message: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    for var in ("FIOLAKE_LAKE", "FIOLAKE_S3_ENDPOINT", "FIOLAKE_TRUSTED_KEY", "VAULT_ADDR",
                "FIOLAKE_HOST_LOCK", "FIOLAKE_HISTORY"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("FIOLAKE_KEYRING", str(tmp_path / "keyring.json"))  # none cached
    (tmp_path / "tiny.fio").write_text(TINY)
    (tmp_path / "a-file").write_text("not a directory\n")
    LocalSigner.generate(tmp_path / "key")  # key.pub: a key the runner may trust

    def filled(text: str) -> str:
        return text.replace("{tmp}", str(tmp_path))

    for key, value in env.items():
        monkeypatch.setenv(key, filled(value))
    with loop_device(tmp_path / "disk.img", 16 * 2**20) as dev:
        subprocess.run(["mkfs.ext4", "-q", str(dev)], check=True)
        before = sha256(dev)
        argv = [*map(filled, args), "--device", str(dev), "--destroy-data", "--wipe-signatures"]
        result = CliRunner().invoke(cli, argv)
        assert sha256(dev) == before, "a refused command wrote to the device"
        assert _file_system(dev) == "ext4"
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(
            result.exception
        )
        assert result.exit_code == code, result.output
        error = result.output[result.output.index("Error: ") :]
        assert error == filled(message)
        assert "wiped signature" not in result.output
