"""The ready-made CI wiring in infra/ci/ runs commands that exist: every YAML file parses,
and every `fiolake …` command line in it parses with the real click command (the command,
its options, their values and the required ones), naming shipped profiles."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from fiolake.cli import cli
from fiolake.cli.common import resolve_jobs

CI = Path(__file__).resolve().parent.parent / "infra" / "ci"
SHELL_STOPS = {">", ">>", "|", "||", "&&", ";", "&", "<", ")", "("}
WRAPPERS = {"with-env.sh", "exec", "env"}
# Shell expansions and CI expressions stand for a value: a placeholder is enough to parse.
EXPANSIONS = re.compile(r"\$\{\{[^}]*\}\}|\$\([^()]*\)|\$\{[A-Za-z_]\w*\}|\$[A-Za-z_]\w*")


def starts_a_command(previous: str) -> bool:
    """Whether the word after `previous` is a command: after a shell operator, an
    environment assignment, or a wrapper that runs its arguments (the images' with-env.sh)."""
    return previous in SHELL_STOPS or "=" in previous or Path(previous).name in WRAPPERS


def fiolake_commands(shell: str) -> list[list[str]]:
    """The argument lists of every `fiolake` invocation in a shell script."""
    found = []
    for line in shell.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(EXPANSIONS.sub("VALUE", line), posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
        for i, token in enumerate(tokens):
            if token == "fiolake" and (i == 0 or starts_a_command(tokens[i - 1])):
                args = []
                for arg in tokens[i + 1 :]:
                    if arg in SHELL_STOPS:
                        break
                    args.append(arg)
                found.append(args)
    return found


def github(doc: dict[str, Any]) -> list[str]:
    return [s["run"] for job in doc["jobs"].values() for s in job["steps"] if "run" in s]


def gitlab(doc: dict[str, Any]) -> list[str]:
    return [
        line
        for job in doc.values()
        if isinstance(job, dict)
        for part in ("before_script", "script", "after_script")
        for line in job.get(part, [])
    ]


def cronjob(doc: dict[str, Any]) -> list[str]:
    pod = doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return [shlex.join(c["command"] + c.get("args", [])) for c in pod["containers"]]


FILES = {
    "github-actions.yml": github,
    "gitlab-ci.yml": gitlab,
    "nightly-publish-cronjob.yaml": cronjob,
}


def commands_of(name: str) -> list[list[str]]:
    doc = yaml.safe_load((CI / name).read_text())
    return [args for script in FILES[name](doc) for args in fiolake_commands(script)]


def parse(args: list[str]) -> tuple[str, dict[str, Any]]:
    """(command name, its parsed parameters), exactly as `fiolake` would parse them;
    click.UsageError for an unknown command, option, choice, bad value or missing one."""
    ctx = click.Context(cli, info_name="fiolake")
    command = cli.get_command(ctx, args[0])
    if command is None:
        raise click.UsageError(f"no such command: fiolake {args[0]}")
    with command.make_context(args[0], list(args[1:]), parent=ctx) as sub:
        return args[0], dict(sub.params)


def test_every_file_in_infra_ci_is_checked() -> None:
    assert sorted(p.name for p in CI.iterdir()) == sorted(FILES)


@pytest.mark.parametrize("name", sorted(FILES))
def test_every_fiolake_command_exists_with_those_options(name: str) -> None:
    commands = commands_of(name)
    assert commands, f"{name} runs no fiolake command"
    for args in commands:
        command, params = parse(args)
        if command == "publish":
            resolve_jobs(params["job_files"], None)  # shipped profiles (or it raises)
            assert params["wait"] and params["timeout"] == 7200, args
    names = [args[0] for args in commands]
    if name == "nightly-publish-cronjob.yaml":
        assert names == ["publish"]
    else:  # publish --wait, then gate --junit --format md, then the HTML report
        assert names == ["publish", "gate", "report"], names
        gate = parse(commands[1])[1]
        assert gate["junit"] == "gate.xml" and gate["fmt"] == "md" and gate["app_url"]
        assert parse(commands[2])[1]["out"] == Path("report.html")


def test_the_github_gate_reads_the_campaign_id_the_publish_step_wrote() -> None:
    steps = yaml.safe_load((CI / "github-actions.yml").read_text())["jobs"]["benchmark"]["steps"]
    publish = next(s for s in steps if "fiolake publish" in s.get("run", ""))
    gate = next(s for s in steps if "fiolake gate" in s.get("run", ""))
    assert publish["id"] == "publish" and "> campaign.txt" in publish["run"]
    assert 'echo "id=$(cat campaign.txt)" >> "$GITHUB_OUTPUT"' in publish["run"]
    assert '--campaign "${{ steps.publish.outputs.id }}"' in gate["run"]
    assert 'cat gate.md >> "$GITHUB_STEP_SUMMARY"' in gate["run"]


@pytest.mark.parametrize(
    "line",
    [
        "fiolake publish random-reads --backend nvme --wait --timeout 2x",
        "fiolake publish random-reads --backend nvme --wiat",
        "fiolake gate --junit gate.xml",  # --campaign is required
        "fiolake gate --campaign c --format markdown",
        "fiolake gait --campaign c",
    ],
)
def test_the_check_refuses_what_fiolake_would_refuse(line: str) -> None:
    (args,) = fiolake_commands(line)
    with pytest.raises(click.UsageError):
        parse(args)


def test_commands_are_found_through_env_assignments_redirections_and_folds() -> None:
    script = 'X="$A" Y=1 fiolake gate --campaign "$(cat c.txt)" --format md > gate.md || s=$?'
    assert fiolake_commands(script) == [["gate", "--campaign", "VALUE", "--format", "md"]]
    assert fiolake_commands("a \\\n  fiolake status --recent 3; echo") == []  # not a command
    assert fiolake_commands("true; fiolake status \\\n --recent 3") == [["status", "--recent", "3"]]


def test_the_cronjob_validates_against_the_kubernetes_schemas() -> None:
    """Strictly (unknown fields refused), against the schemas inside the
    kubernetes-validate wheel, as infra/k8s/ is (tests/stack/test_compose.py)."""
    import kubernetes_validate

    doc = yaml.safe_load((CI / "nightly-publish-cronjob.yaml").read_text())
    kubernetes_validate.validate(doc, "1.37.0", strict=True)
    doc["spec"]["jobTemplate"]["spec"]["backoffLimit"] = "none"
    with pytest.raises(kubernetes_validate.ValidationError, match="backoffLimit"):
        kubernetes_validate.validate(doc, "1.37.0", strict=True)
