"""The runner confined as its image and the k8s manifests confine it, without an engine.

No Docker engine runs here, so bubblewrap builds the same box: the image's uid, a
read-only root, a private /tmp (the tmpfs HOME of the image), and only /bench (the
target dir and the spool, one volume as in compose.yaml) writable. A job goes from
claim to commit inside it, and writing anywhere else fails.
"""

from __future__ import annotations

import re
import secrets
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from fiolake import layout
from fiolake.campaigns import plan_campaign, publish_manifests
from fiolake.commits import Commit
from fiolake.config import Settings
from fiolake.runner.host.lock import DEFAULT_PATH as HOST_LOCK_PATH
from fiolake.stack.env import StackEnv
from fiolake.store import S3Store

ROOT = Path(__file__).resolve().parents[2]
FIOLAKE = Path(sys.executable).with_name("fiolake")
JOB = "[n]\nioengine=null\nrw=read\nbs=4k\nsize=1M\n"
CA = "/ca/ca.crt"
HOST_LOCK_DIR = HOST_LOCK_PATH.parent


def image_uid() -> int:
    """The uid infra/Dockerfile.runner creates and runs as."""
    text = (ROOT / "infra" / "Dockerfile.runner").read_text()
    uid = int(re.search(r"useradd --uid (\d+)", text).group(1))
    assert re.search(rf"^USER {uid}:{uid}$", text, re.M)
    return uid


def test_k8s_runs_the_runner_as_the_image_uid() -> None:
    docs = yaml.safe_load_all((ROOT / "infra" / "k8s" / "runner-daemonset.yaml").read_text())
    spec = next(d for d in docs if d["kind"] == "DaemonSet")["spec"]["template"]["spec"]
    assert spec["securityContext"]["runAsUser"] == image_uid()


def _host_root() -> list[str]:
    """The host's top-level directories read-only (symlinks as symlinks), on bwrap's own
    root, so /bench and /ca can be mount points there."""
    out = []
    for entry in sorted(Path("/").iterdir()):
        if entry.name in ("proc", "dev", "tmp"):
            continue
        if entry.is_symlink():
            out += ["--symlink", str(entry.readlink()), str(entry)]
        elif entry.is_dir():
            out += ["--ro-bind", str(entry), str(entry)]
    return out


def _hidden_by_private_tmp() -> list[str]:
    """Read-only binds of what the runner needs that the private /tmp would hide: the
    checkout with its venv, and the Python the venv points to, wherever they live (a
    clone under /tmp is as good as any; the image has them under /usr and /app)."""
    needed = {ROOT, Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve()}
    tmp = Path("/tmp")
    under = sorted({p.resolve() for p in needed if p.resolve().is_relative_to(tmp)})
    kept = [p for p in under if not any(p != q and p.is_relative_to(q) for q in under)]
    return [arg for p in kept for arg in ("--ro-bind", str(p), str(p))]


def confined(bench: Path, ca: Path, env: dict[str, str], argv: list[str]) -> list[str]:
    """bwrap argv: the image's uid, read-only root, private /tmp, /bench writable, and the
    host's fio lock directory mounted as compose and the k8s files mount it (here a
    directory of the test's own, so no other fio on this machine holds it up)."""
    uid = str(image_uid())
    lock_dir = bench.parent / "host-lock"
    lock_dir.mkdir(exist_ok=True)
    lock_dir.chmod(0o1777)  # like /run/lock: the image's uid takes the lock too
    box = [
        "bwrap",
        "--unshare-user", "--uid", uid, "--gid", uid,
        "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        "--die-with-parent", "--new-session", "--cap-drop", "ALL",
        *_host_root(),
        "--dev", "/dev", "--proc", "/proc",
        "--tmpfs", "/tmp",
        *_hidden_by_private_tmp(),
        "--bind", str(bench), "/bench",
        "--bind", str(lock_dir), str(HOST_LOCK_DIR),
        "--ro-bind", str(ca), CA,
        "--remount-ro", "/",
        "--clearenv",
    ]  # fmt: skip
    for name, value in {**env, "HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"}.items():
        box += ["--setenv", name, value]
    return [*box, "--", *argv]


@pytest.fixture
def box(stack: StackEnv, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    if shutil.which("bwrap") is None:
        pytest.fail("bwrap is missing — run `make sysdeps` (Debian package bubblewrap)")
    bench = tmp_path / "bench"
    (bench / "target").mkdir(parents=True)
    (bench / "spool").mkdir()
    env = stack.environ("runner")
    env.update(FIOLAKE_CA_BUNDLE=CA, VAULT_CACERT=CA, PATH="/usr/bin:/bin")
    return bench, env


def test_a_confined_runner_goes_from_claim_to_commit(
    stack: StackEnv, box: tuple[Path, dict[str, str]]
) -> None:
    bench, env = box
    backend = f"confined-{secrets.token_hex(3)}"
    manifests = plan_campaign(
        [("n", JOB)],
        [backend],
        campaign_id=f"c-{backend}",
        repeat=1,
        runtime_s=None,
        size_bytes=None,
        bucket=stack.bucket,
        expires_in=timedelta(hours=1),
    )
    store = S3Store(stack.bucket, "", stack.s3_settings("publisher"))
    publish_manifests(store, manifests, Settings.from_env(stack.environ("publisher")).signer())
    argv = [str(FIOLAKE), "runner", "--backend", backend, "--dir", "/bench/target"]
    argv += ["--spool-dir", "/bench/spool", "--once", "--runner-id", "boxed"]
    proc = subprocess.run(
        confined(bench, stack.ca_bundle, env, argv), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    job_id = layout.parse_job_key(manifests[0].key)[1]
    commit = Commit.from_bytes(S3Store(stack.bucket, "", stack.s3_settings()).get(
        layout.commit_key(job_id))[0])  # fmt: skip
    assert (commit.runner, commit.status) == ("boxed", "ok")
    assert list((bench / "spool").iterdir()) == []  # uploaded and committed, spool drained


def test_a_confined_runner_can_write_only_bench_and_its_private_tmp(
    stack: StackEnv, box: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    bench, env = box
    elsewhere = ["/", "/etc", "/usr/bin", "/var/tmp", str(ROOT), str(FIOLAKE.parent), "/root"]
    probe = "id -u; " + "; ".join(
        f"touch {d}/probe 2>/dev/null && echo wrote {d} || echo refused {d}"
        for d in [*elsewhere, "/bench/target", "/bench/spool", "/tmp", str(HOST_LOCK_DIR)]
    )
    proc = subprocess.run(
        confined(bench, stack.ca_bundle, env, ["sh", "-c", probe]),
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = proc.stdout.split("\n")
    assert lines[0] == str(image_uid())
    assert lines[1 : len(elsewhere) + 1] == [f"refused {d}" for d in elsewhere]
    assert lines[len(elsewhere) + 1 : -1] == [
        "wrote /bench/target",
        "wrote /bench/spool",
        "wrote /tmp",
        f"wrote {HOST_LOCK_DIR}",  # the host's fio lock, mounted as compose and k8s mount it
    ]
    assert (bench / "target" / "probe").exists()
    assert not Path("/tmp/probe").exists()  # the box's /tmp is its own
