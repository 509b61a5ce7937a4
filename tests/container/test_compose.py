"""compose.yaml run for real: images from `make images`, podman-compose, host networking.

A campaign published from the host is committed by the containerised runners; `fiolake
compare` on the host reads it; the app container answers; a runner killed mid-job loses
nothing and duplicates nothing; SIGTERM never orphans fio; runner credentials cannot write
jobs/; `down -v` leaves nothing behind. (docs/deploy.md runs these same commands.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.container.conftest import ROOT, Compose, container_log, podman

FIOLAKE = str(Path(sys.executable).parent / "fiolake")
BACKEND = "container-volume"


def fiolake(box: Compose, role: str, *args: str) -> str:
    proc = subprocess.run(
        [FIOLAKE, *args], env=box.role_env(role), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def publish(box: Compose, *args: str) -> str:
    return fiolake(box, "publisher", "publish", "--backend", BACKEND, *args).strip()


def status(box: Compose, campaign: str) -> list[dict]:
    return json.loads(fiolake(box, "analyst", "status", "--campaign", campaign, "--format", "json"))


def wait_states(box: Compose, campaign: str, done: set[str], timeout_s: float) -> list[dict]:
    deadline = time.monotonic() + timeout_s
    while True:
        rows = status(box, campaign)
        if all(r["state"] in done for r in rows):
            return rows
        assert time.monotonic() < deadline, rows
        time.sleep(1)


def runner_containers(box: Compose) -> list[str]:
    label = f"label=io.podman.compose.project={box.project}"
    names = podman("ps", "--filter", label, "--format", "{{.Names}}").split()
    return sorted(n for n in names if "_runner_" in n)


def test_a_campaign_from_the_host_is_committed_by_runners_in_containers(box: Compose) -> None:
    assert len(runner_containers(box)) == 2
    campaign = publish(box, "random-reads", "random-writes", "--runtime", "1", "--size", "8M")
    rows = wait_states(box, campaign, {"ok", "failed", "rejected", "interrupted"}, 180)
    assert [r["state"] for r in rows] == ["ok", "ok"], rows
    # The image has util-linux's setpriv, which starts fio dying with its runner.
    logs = "".join(container_log(box, name) for name in runner_containers(box))
    assert "committed " in logs, logs
    assert "setpriv (util-linux) not found" not in logs, logs
    table = json.loads(
        fiolake(box, "analyst", "compare", "--campaign", campaign, "--format", "json")
    )
    assert {r["profile"] for r in table} == {"random-reads", "random-writes"}
    assert all(r["n"] == 1 and r["geomean"] > 0 for r in table if r["metric"] == "iops")


def test_the_app_container_answers(box: Compose) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{box.app_port}/_stcore/health") as r:
                assert r.status == 200 and r.read() == b"ok"
                return
        except OSError:
            assert time.monotonic() < deadline, podman("logs", f"{box.project}_app_1")
            time.sleep(2)


def test_runner_credentials_cannot_write_jobs(box: Compose) -> None:
    """Inside the real runner container, with the runner role's keys: jobs/ is refused."""
    code = (
        "import boto3, botocore.exceptions as e, os\n"
        "s3 = boto3.client('s3', endpoint_url=os.environ['FIOLAKE_S3_ENDPOINT'],"
        " verify=os.environ['FIOLAKE_CA_BUNDLE'])\n"
        "bucket = os.environ['FIOLAKE_LAKE'].removeprefix('s3://')\n"
        "try:\n s3.put_object(Bucket=bucket, Key='jobs/forged/x.json', Body=b'{}')\n"
        "except e.ClientError as x:\n print(x.response['Error']['Code'])\n"
        "else:\n print('WRITTEN')\n"
    )
    name = runner_containers(box)[0]
    out = podman("exec", name, "/usr/local/bin/with-env.sh", "python", "-c", code)
    assert out.strip() == "AccessDenied"


def _running_job(box: Compose, campaign: str, timeout_s: float) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        running = [r for r in status(box, campaign) if r["state"] == "running"]
        if running:
            return running[0]
        assert time.monotonic() < deadline, status(box, campaign)
        time.sleep(0.5)


def _container_of(box: Compose, runner_id: str) -> str:
    """The replica named HOST-<its container id> by infra/runner-entry.sh."""
    for name in runner_containers(box):
        if runner_id.endswith("-" + podman("inspect", "--format", "{{.Id}}", name)[:12]):
            return name
    raise AssertionError(f"no container runs {runner_id}")


def test_a_runner_killed_mid_job_loses_nothing_and_duplicates_nothing(box: Compose) -> None:
    # 30 s of fio outlasts the status and inspect calls before the kill: with 8 s, at load
    # 8-12, the victim had finished and committed the job itself before it was killed.
    campaign = publish(box, "random-reads", "--runtime", "30", "--size", "8M")
    victim = _running_job(box, campaign, 60)
    killed = _container_of(box, victim["runner"])
    podman("kill", killed)  # SIGKILL: no goodbye, the lease just stops being renewed
    rows = wait_states(box, campaign, {"ok", "failed", "interrupted"}, 180)
    assert [r["state"] for r in rows] == ["ok"], rows
    assert rows[0]["runner"] != victim["runner"]  # the other replica, after the lease
    runs = json.loads(
        fiolake(
            box,
            "analyst",
            "sql",
            "--format",
            "json",
            f"SELECT run_id FROM runs WHERE campaign_id = '{campaign}'",
        )
    )
    assert len(runs) == 1  # committed exactly once
    podman("start", killed)


def test_sigterm_mid_job_ends_it_recorded_never_stale(box: Compose) -> None:
    campaign = publish(box, "random-reads", "--runtime", "10", "--size", "8M")
    job = _running_job(box, campaign, 60)
    name = _container_of(box, job["runner"])
    podman("stop", "-t", "60", name, timeout=90)
    rows = status(box, campaign)  # recorded either way: never a lease left to go stale
    assert rows[0]["state"] in ("ok", "interrupted"), rows
    assert rows[0]["runner"] == job["runner"]
    # it exited by itself within the grace period (137 would be podman's SIGKILL)
    assert podman("inspect", "--format", "{{.State.ExitCode}}", name).strip() == "0"
    podman("start", name)


def _kube_runner(box: Compose, bench: Path) -> dict:
    """infra/k8s's DaemonSet as a one-replica Deployment podman can play here: the node's
    hostPath becomes `bench`, the Secret's and ConfigMap's contents come from init."""
    import yaml

    docs = yaml.safe_load_all((ROOT / "infra" / "k8s" / "runner-daemonset.yaml").read_text())
    daemonset = next(d for d in docs if d["kind"] == "DaemonSet")
    pod = daemonset["spec"]["template"]["spec"]
    pod.pop("nodeSelector")
    pod["hostNetwork"] = True  # MinIO and OpenBao listen on the host's 127.0.0.1
    runner_env = box.role_env("runner")
    container = pod["containers"][0]
    container["args"] = [
        a.replace("$(FIOLAKE_BACKEND)", BACKEND).replace("$(NODE_NAME)", "kube-play")
        for a in container["args"]
    ]
    container.pop("envFrom")  # the Secret's keys, as `kubectl create secret` would fill it
    container["env"] = [e for e in container["env"] if "valueFrom" not in e] + [
        {"name": k, "value": runner_env[k]}
        for k in (
            "FIOLAKE_LAKE",
            "FIOLAKE_S3_ENDPOINT",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "VAULT_ADDR",
            "VAULT_TOKEN",
            "FIOLAKE_TRANSIT_KEY",
        )
    ]
    (bench / "ca").mkdir()
    (bench / "ca" / "ca.crt").write_text((box.stack_dir / "ca.crt").read_text())
    (bench / "node").mkdir()  # the node's hostPath, empty as on a fresh node
    os.chown(bench / "node", 10001, 10001)
    for volume in pod["volumes"]:
        if volume["name"] == "bench":
            volume["hostPath"]["path"] = str(bench / "node")
        if volume["name"] == "ca":
            volume.pop("configMap")
            volume["hostPath"] = {"path": str(bench / "ca"), "type": "Directory"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "fiolake-runner-kube-play"},
        "spec": {
            "replicas": 1,
            "selector": daemonset["spec"]["selector"],
            "template": daemonset["spec"]["template"],
        },
    }


def test_kube_play_runs_the_k8s_runner_workload(box: Compose, tmp_path: Path) -> None:
    import yaml

    manifest = tmp_path / "runner.yaml"
    manifest.write_text(yaml.safe_dump(_kube_runner(box, tmp_path)))
    for name in runner_containers(box):  # only the kube-played runner may take the job
        podman("stop", "-t", "30", name, timeout=60)
    try:
        podman("kube", "play", str(manifest), timeout=300)
        campaign = publish(box, "random-reads", "--runtime", "1", "--size", "4M")
        rows = wait_states(box, campaign, {"ok", "failed", "rejected", "interrupted"}, 120)
        assert [(r["state"], r["runner"]) for r in rows] == [("ok", "kube-play")], rows
    finally:
        podman("kube", "down", str(manifest), check=False, timeout=120)
        for name in runner_containers_all(box):
            podman("start", name, check=False)


def runner_containers_all(box: Compose) -> list[str]:
    label = f"label=io.podman.compose.project={box.project}"
    names = podman("ps", "-a", "--filter", label, "--format", "{{.Names}}").split()
    return sorted(n for n in names if "_runner_" in n)


def test_compose_down_leaves_nothing(box: Compose) -> None:
    label = f"label=io.podman.compose.project={box.project}"
    names = podman("ps", "-a", "--filter", label, "--format", "{{.Names}}").split()
    mounts = "{{range .Mounts}}{{.Name}} {{end}}"
    volumes = set(podman("inspect", "--format", mounts, *names).split())
    assert any(v.endswith("_stack") for v in volumes)
    box.run("down", "-v", "-t", "10")
    assert box.leftovers() == []
    still = set(podman("volume", "ls", "--format", "{{.Name}}").split())
    assert volumes & still == set()  # anonymous volumes too
