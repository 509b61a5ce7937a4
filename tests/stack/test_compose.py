"""compose.yaml (and its login override), the Dockerfiles and the Kubernetes examples,
checked without a Docker engine."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "compose.yaml"
COMPOSE_LOGIN = ROOT / "compose.login.yaml"
K8S = ROOT / "infra" / "k8s"
DOCKERFILES = [
    "Dockerfile.minio", "Dockerfile.openbao", "Dockerfile.runner", "Dockerfile.init",
    "Dockerfile.app",
]  # fmt: skip


def _compose(path: Path = COMPOSE) -> dict:
    return yaml.safe_load(path.read_text())


def _dockerfile(name: str) -> str:
    return (ROOT / "infra" / name).read_text()


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", text)
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_compose_names_the_services() -> None:
    assert {"minio", "openbao", "init", "runner", "app"} <= set(_compose()["services"])


def test_runner_can_scale_and_is_locked_down() -> None:
    runner = _compose()["services"]["runner"]
    assert "container_name" not in runner
    assert "ports" not in runner
    assert runner["read_only"] is True
    assert "/tmp" in runner["tmpfs"]
    writable = [v for v in runner["volumes"] if not str(v).endswith(":ro")]
    # the target + spool volume, and the host's fio lock dir (shared with host runners)
    assert writable == ["/bench", "/run/lock/fiolake:/run/lock/fiolake"]
    args = " ".join(runner["command"])
    assert "--dir=/bench/{runner}/target" in args and "--spool-dir=/bench/{runner}/spool" in args
    assert runner["depends_on"]["init"]["condition"] == "service_completed_successfully"


def test_every_service_waits_properly_and_has_healthchecks() -> None:
    services = _compose()["services"]
    for name in ("openbao", "minio", "app"):
        assert "healthcheck" in services[name], name
    for name in ("runner", "app"):
        assert services[name]["depends_on"]["minio"]["condition"] == "service_healthy"


def test_host_networking_and_loopback_listeners_on_ports_from_the_environment() -> None:
    """No bridge or firewall rule on a shared host: every service on the host network,
    every listener on 127.0.0.1 at a port a second stack can move (FIOLAKE_*_PORT)."""
    services = _compose()["services"]
    for name, service in services.items():
        assert service["network_mode"] == "host", name
        assert "ports" not in service, name
    listeners = {
        "openbao": " ".join(services["init"]["command"]),
        "minio": " ".join(services["minio"]["command"]),
        "app": " ".join(services["app"]["command"]),
    }
    assert "--bao-listen=127.0.0.1:${FIOLAKE_BAO_PORT:-8200}" in listeners["openbao"]
    assert "--address 127.0.0.1:${FIOLAKE_MINIO_PORT:-9000}" in listeners["minio"]
    assert "127.0.0.1 --port ${FIOLAKE_APP_PORT:-8501}" in listeners["app"]
    assert "0.0.0.0" not in COMPOSE.read_text()
    assert "0.0.0.0" not in COMPOSE_LOGIN.read_text()


def test_build_contexts_and_dockerfiles_exist() -> None:
    for name, service in _compose()["services"].items():
        build = service.get("build")
        assert build, f"{name} has no build section"
        context = ROOT / build["context"]
        assert context.is_dir(), name
        assert (context / build["dockerfile"]).is_file(), name


@pytest.mark.parametrize("name", DOCKERFILES)
def test_dockerfile_args_are_declared_with_defaults_or_passed(name: str) -> None:
    passed: set[str] = set()
    for service in _compose()["services"].values():
        if service["build"]["dockerfile"] == f"infra/{name}":
            passed |= set((service["build"].get("args") or {}).keys())
    defaults: dict[str, bool] = {}
    stage_args: set[str] = set()
    env: set[str] = set()
    for word, rest in _instructions(_dockerfile(name)):
        if word == "ARG":
            arg, has_default = rest.split("=", 1)[0], "=" in rest
            defaults[arg] = defaults.get(arg, False) or has_default
            stage_args.add(arg)
        elif word == "FROM":
            for ref in re.findall(r"\$\{?(\w+)", rest):
                assert ref in defaults, f"{name}: FROM uses undeclared {ref}"
            stage_args = set()  # ARGs must be re-declared inside each stage
        elif word == "ENV":
            env |= set(re.findall(r"(\w+)=", rest))
        elif word in ("RUN", "COPY", "WORKDIR", "USER"):
            for ref in re.findall(r"\$\{?([A-Z][A-Z0-9_]*)", rest):
                assert ref in stage_args or ref in env, f"{name}: {word} uses {ref} not declared"
    for arg, has_default in defaults.items():
        assert has_default or arg in passed, f"{name}: ARG {arg} has no default and is not passed"


@pytest.mark.parametrize("name", DOCKERFILES)
def test_images_run_as_a_non_root_user(name: str) -> None:
    users = [rest for word, rest in _instructions(_dockerfile(name)) if word == "USER"]
    assert users, f"{name} sets no USER"
    assert users[-1].split(":")[0] not in ("0", "root")


def test_runner_image_installs_fio_and_runs_the_runner() -> None:
    steps = _instructions(_dockerfile("Dockerfile.runner"))
    runs = " ".join(rest for word, rest in steps if word == "RUN")
    assert re.search(r"for deb in [^;]*\bfio\b", runs) and "apt-get install" in runs
    entry = [rest for word, rest in steps if word == "ENTRYPOINT"][-1]
    assert entry == '["/usr/local/bin/runner-entry.sh"]'
    script = (ROOT / "infra" / "runner-entry.sh").read_text()
    assert "with-env.sh fiolake runner" in script


def _mounted(text: str) -> list[str]:
    """The build-context paths a Dockerfile bind-mounts into its RUN steps."""
    return re.findall(r"--mount=type=bind,source=([^,]+),", text)


@pytest.mark.parametrize("name", ["Dockerfile.app", "Dockerfile.init"])
def test_python_images_share_the_runner_layers(name: str) -> None:
    """Identical instructions up to the runner's wheels: the builds reuse those layers."""

    def prefix(text: str) -> list[tuple[str, str]]:
        steps = _instructions(text)
        runner_wheels = next(
            i for i, (word, rest) in enumerate(steps) if "build/wheels/runner" in rest
        )
        return steps[: runner_wheels + 1]

    assert prefix(_dockerfile(name)) == prefix(_dockerfile("Dockerfile.runner"))


def test_the_runner_image_installs_no_extra() -> None:
    """Only `pip install fiolake`'s dependencies and fiolake: no analysis, app or stack."""
    assert _mounted(_dockerfile("Dockerfile.runner")) == [
        "build/wheels/runner", "build/wheels/fiolake",
    ]  # fmt: skip
    script = (ROOT / "infra" / "containers" / "images.sh").read_text()
    assert 'pip_wheel "$wheels/runner" .\n' in script


def test_the_openbao_image_is_the_binary_without_python() -> None:
    text = _dockerfile("Dockerfile.openbao")
    steps = _instructions(text)
    assert ("COPY", "build/bin/openbao/bao /usr/local/bin/bao") in steps
    assert _mounted(text) == []
    assert "python" not in " ".join(rest for _, rest in steps)


@pytest.mark.parametrize("name", DOCKERFILES)
def test_what_a_dockerfile_takes_from_the_context_is_allowed_in(name: str) -> None:
    allowed = [
        line[1:]
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.startswith("!")
    ]
    steps = _instructions(_dockerfile(name))
    copied = [path for word, rest in steps if word == "COPY" for path in rest.split()[:-1]]
    for path in [*copied, *(f"{m}/*.whl" for m in _mounted(_dockerfile(name)))]:
        assert path in allowed, f"{name}: {path} is not in .dockerignore's allow-list"


@pytest.mark.parametrize("name", DOCKERFILES)
def test_images_build_from_a_base_argument(name: str) -> None:
    """`make images` passes its mmdebstrap base; Docker falls back to debian:bookworm-slim."""
    steps = _instructions(_dockerfile(name))
    assert ("ARG", "BASE=debian:bookworm-slim") in steps
    assert [rest for word, rest in steps if word == "FROM"] == ["${BASE}"]


def test_minio_image_builds_the_pinned_commit() -> None:
    from fiolake.stack.minio import MINIO_PIN

    assert f"ARG MINIO_PIN={MINIO_PIN}" in _dockerfile("Dockerfile.minio")
    args = _compose()["services"]["minio"]["build"]["args"]
    assert args["MINIO_PIN"] == MINIO_PIN


def test_entry_point_script_is_executable_and_in_the_build_context() -> None:
    lines = [
        line
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert lines[0] == "*"  # an allow-list: no venv, .git or lake in the context
    for name in ("with-env.sh", "runner-entry.sh"):
        assert os.access(ROOT / "infra" / name, os.X_OK)
        assert f"!infra/{name}" in lines


def _pod_specs(doc: dict) -> list[dict]:
    if doc["kind"] in ("DaemonSet", "Deployment", "Job"):
        return [doc["spec"]["template"]["spec"]]
    return []


def test_k8s_manifests_parse_and_run_locked_down() -> None:
    kinds: list[str] = []
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            kinds.append(doc["kind"])
            for spec in _pod_specs(doc):
                assert spec["securityContext"]["runAsNonRoot"] is True, path.name
                for container in spec["containers"]:
                    ctx = container["securityContext"]
                    assert ctx["readOnlyRootFilesystem"] is True, path.name
                    assert ctx["allowPrivilegeEscalation"] is False, path.name
                    assert "/tmp" in {m["mountPath"] for m in container["volumeMounts"]}
    assert {
        "DaemonSet", "Job", "PersistentVolumeClaim", "Secret", "ConfigMap", "Deployment", "Service",
    } <= set(kinds)  # fmt: skip


K8S_VERSION = "1.37.0"  # the schemas bundled in the kubernetes-validate wheel (offline)


def test_k8s_manifests_validate_against_the_kubernetes_schemas() -> None:
    """docs/deploy.md's command: every manifest, strictly (unknown fields refused), against
    the schemas inside the kubernetes-validate wheel; no API server, no network."""
    cli = Path(sys.executable).with_name("kubernetes-validate")
    paths = sorted(str(p) for p in K8S.glob("*.yaml"))
    proc = subprocess.run(
        [str(cli), "--strict", "-k", K8S_VERSION, *paths], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count(" passed for resource ") == 17, proc.stdout


def test_k8s_validation_refuses_a_broken_manifest() -> None:
    import kubernetes_validate

    docs = yaml.safe_load_all((K8S / "runner-daemonset.yaml").read_text())
    daemonset = next(d for d in docs if d["kind"] == "DaemonSet")
    container = daemonset["spec"]["template"]["spec"]["containers"][0]
    container["securityContext"]["readOnlyRootFilesystem"] = "yes"
    with pytest.raises(kubernetes_validate.ValidationError, match="readOnlyRootFilesystem"):
        kubernetes_validate.validate(daemonset, K8S_VERSION, strict=True)


def test_the_app_deployment_serves_behind_its_login_and_is_ready_when_warm() -> None:
    """The login file comes from the Secret, read-only; the app listens on every interface
    with no way around the login; readiness and the Service use the app's own port."""
    from fiolake.app.access import AUTH_ENV
    from fiolake.app.serve import WARM_LIMIT_S

    docs = {d["kind"]: d for d in yaml.safe_load_all((K8S / "app.yaml").read_text())}
    pod = docs["Deployment"]["spec"]["template"]["spec"]
    (app,) = pod["containers"]
    args, env = app["args"], {e["name"]: e["value"] for e in app["env"]}
    assert args[args.index("--address") + 1] == "0.0.0.0" and "--insecure-no-login" not in args
    port = int(args[args.index("--port") + 1])
    named = {p["name"]: p["containerPort"] for p in app["ports"]}
    auth = PurePosixPath(env[AUTH_ENV])
    (mount,) = [m for m in app["volumeMounts"] if PurePosixPath(m["mountPath"]) == auth.parent]
    secret = next(v for v in pod["volumes"] if v["name"] == mount["name"])["secret"]
    assert mount["readOnly"] is True and secret["defaultMode"] == 0o400
    assert secret["secretName"] == "fiolake-app-login"
    assert secret["items"] == [{"key": auth.name, "path": auth.name}]
    assert pod["securityContext"]["fsGroup"] == 10001  # uid 10001 reads the 0400 file
    for probe in ("readinessProbe", "livenessProbe"):
        check = app[probe]["httpGet"]
        assert check["path"] == "/_stcore/health" and named[check["port"]] == port, probe
    assert app["livenessProbe"]["initialDelaySeconds"] > WARM_LIMIT_S
    # The lake's credentials as the runners get theirs: a Secret's keys, the CA ConfigMap.
    assert app["envFrom"] == [{"secretRef": {"name": "fiolake-analyst-env"}}]
    (ca,) = [m for m in app["volumeMounts"] if env["FIOLAKE_CA_BUNDLE"].startswith(m["mountPath"])]
    assert next(v for v in pod["volumes"] if v["name"] == ca["name"])["configMap"] == {
        "name": "fiolake-ca"
    }
    service = docs["Service"]["spec"]
    assert (
        service["selector"].items()
        <= docs["Deployment"]["spec"]["template"]["metadata"]["labels"].items()
    )
    assert [(p["port"], named[p["targetPort"]]) for p in service["ports"]] == [(80, port)]


def test_every_job_has_its_own_claim() -> None:
    docs = list(yaml.safe_load_all((K8S / "runner-job-per-storageclass.yaml").read_text()))
    claims = {
        d["metadata"]["name"]: d["spec"]["storageClassName"]
        for d in docs
        if d["kind"] == "PersistentVolumeClaim"
    }
    jobs = [d for d in docs if d["kind"] == "Job"]
    used = [
        v["persistentVolumeClaim"]["claimName"]
        for job in jobs
        for v in job["spec"]["template"]["spec"]["volumes"]
        if "persistentVolumeClaim" in v
    ]
    assert sorted(used) == sorted(claims)
    assert len(set(claims.values())) == len(jobs) >= 2


def test_block_runners_get_their_claimed_device_and_nothing_else() -> None:
    """Each block runner benchmarks the device its Block volume gives it (`volumeDevices`
    at the path its --device names), confirms --destroy-data, and claims a Block volume of
    its own; no pod is privileged."""
    seen = 0
    for name in ("runner-block-per-storageclass.yaml", "runner-block-daemonset.yaml"):
        docs = list(yaml.safe_load_all((K8S / name).read_text()))
        block_claims = {
            d["metadata"]["name"]
            for d in docs
            if d["kind"] == "PersistentVolumeClaim" and d["spec"]["volumeMode"] == "Block"
        }
        for doc in docs:
            for spec in _pod_specs(doc):
                (container,) = spec["containers"]
                (device,) = container["volumeDevices"]
                assert f"--device={device['devicePath']}" in container["args"]
                assert "--destroy-data" in container["args"]
                assert not container["securityContext"].get("privileged", False)
                assert 6 in spec["securityContext"]["supplementalGroups"]
                (volume,) = [v for v in spec["volumes"] if v["name"] == device["name"]]
                if "persistentVolumeClaim" in volume:
                    claim = volume["persistentVolumeClaim"]["claimName"]
                    block_claims.remove(claim)  # its own, once
                else:
                    template = volume["ephemeral"]["volumeClaimTemplate"]["spec"]
                    assert template["volumeMode"] == "Block"
                seen += 1
        assert not block_claims, f"{name}: claims no runner uses: {block_claims}"
    assert seen == 3


def _compose_config(*paths: Path, quiet: bool = True) -> subprocess.CompletedProcess[str]:
    """`docker-compose -f A [-f B] config`: the files merged and checked (no engine)."""
    binary = shutil.which("docker-compose")
    if binary is None:
        pytest.fail("docker-compose is missing — run `make sysdeps` (Debian's, no engine needed)")
    files = [arg for path in paths for arg in ("-f", str(path))]
    return subprocess.run(
        [binary, *files, "config", *(["-q"] if quiet else [])],
        capture_output=True,
        text=True,
        cwd=paths[0].parent,
        check=False,
    )


def test_docker_compose_config_validates() -> None:
    proc = _compose_config(COMPOSE)
    assert proc.returncode == 0, proc.stderr


def test_docker_compose_config_refuses_a_broken_file(tmp_path: Path) -> None:
    broken = _compose()
    broken["services"]["runner"]["read_only"] = "sometimes"
    (tmp_path / "compose.yaml").write_text(yaml.safe_dump(broken))
    proc = _compose_config(tmp_path / "compose.yaml")
    assert proc.returncode != 0 and "read_only" in proc.stderr


def test_docker_compose_config_validates_the_login_override() -> None:
    proc = _compose_config(COMPOSE, COMPOSE_LOGIN)
    assert proc.returncode == 0, proc.stderr


def test_the_login_override_adds_only_the_app_login() -> None:
    """Init's command is compose.yaml's plus --app-url and the readers (an override
    replaces a command whole, so the two cannot drift apart); the app gets --auth."""
    base, login = _compose()["services"], _compose(COMPOSE_LOGIN)["services"]
    assert set(login) == {"init", "app"}
    assert login["init"]["command"] == base["init"]["command"] + [
        "--app-url=http://127.0.0.1:${FIOLAKE_APP_PORT:-8501}",
        "--app-user=viewer:viewer",
        "--app-user=analyst:analyst",
    ]
    assert set(login["init"]) == {"command"}
    assert login["app"] == {
        "command": [*base["app"]["command"], "--auth", "/stack/app-login/auth.toml"]
    }
    # what the merged file runs (docker-compose's merge, interpolated)
    merged = yaml.safe_load(_compose_config(COMPOSE, COMPOSE_LOGIN, quiet=False).stdout)
    assert merged["services"]["app"]["command"][-2:] == ["--auth", "/stack/app-login/auth.toml"]
    assert "--app-user=analyst:analyst" in merged["services"]["init"]["command"]
    assert merged["services"]["app"]["read_only"] is True  # compose.yaml's, kept


def test_the_compose_files_tell_how_to_start_and_sign_in() -> None:
    header = COMPOSE_LOGIN.read_text().split("\nservices:")[0]
    assert "podman-compose -f compose.yaml -f compose.login.yaml up -d" in header
    assert "run --rm --entrypoint cat init /stack/app-login/users.json" in header
    assert "/stack/ca.crt" in header
    assert "compose.login.yaml" in COMPOSE.read_text().split("\nx-hardening:")[0]
