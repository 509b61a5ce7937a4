"""Every bad input is a clear error: `Error: <what> — <how to fix>`, the right exit code
(2 usage, 1 failure), no traceback, nothing created.

One table over every command; `{tmp}` in an argument is the test's tmp_path, `{lake}` a
lake with one real run in it, `{file}` a regular file, `{ro}` a read-only directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from fiolake import layout
from fiolake.cli import cli
from fiolake.cli.common import DurationParam, IdParam, SizeParam
from fiolake.errors import UsageProblem
from fiolake.units import parse_duration, parse_size

TINY = "[t]\nrw=randread\nbs=4k\nsize=1M\nioengine=psync\ndirect=1\nruntime=1\ntime_based=1\n"
JOBS = {
    "empty.fio": "",
    "comments.fio": "; nothing but a comment\n",
    "include.fio": "include other.fio\n[a]\nrw=read\nsize=1m\n",
    "dollar.fio": "[a]\nrw=read\nsize=${SIZE}\n",
    "exec.fio": "[a]\nrw=read\nsize=1m\nexec_prerun=rm -rf /\n",
    "rate.fio": "[a]\nrw=read\nsize=4m\nrate=1\n",
    "loops.fio": "[a]\nrw=read\nsize=4m\nloops=100000000\n",
    "trim.fio": "[a]\nrw=trim\nsize=1m\n",
    "huge.fio": "[a]\nrw=read\nsize=100t\n",
    "binary.fio": "[a]\nrw=read\x00\nsize=1m\n",
    "tiny.fio": TINY,
}

# (args, env, exit code, text the output must contain)
CASES: list[tuple[list[str], dict[str, str], int, str]] = [
    # -- run: the target directory
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}/missing"],
        {},
        2,
        "Error: --dir {tmp}/missing does not exist — create it on the storage under test",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{file}"],
        {},
        2,
        "Error: --dir {file} is a file, not a directory — give a directory",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{file}/sub", "--create-dir"],
        {},
        2,
        "Error: cannot create --dir {file}/sub: Not a directory",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{ro}/sub", "--create-dir"],
        {},
        2,
        "Error: cannot create --dir {ro}/sub: ",
    ),
    (["run", "{job}/tiny.fio", "--dir", "{ro}"], {}, 2, "Error: --dir {ro} is not writable ("),
    (["run", "{job}/tiny.fio", "--dir", "/proc"], {}, 2, "Error: --dir /proc is not writable ("),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--expect-fs", "tmpfs"],
        {},
        2,
        "; expected file system tmpfs — point --dir at the storage under test",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--expect-mount", "/dev/shm"],
        {},
        2,
        "; expected mount point /dev/shm — mount the storage under test at /dev/shm",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "/dev/shm", "--expect-fs", "xfs"],
        {},
        2,
        "Error: --dir /dev/shm is on mount point /dev/shm, tmpfs on tmpfs; "
        "expected file system xfs",
    ),
    (["run", "{job}/tiny.fio"], {}, 2, "Error: Missing option '--dir'."),
    # -- run: job files and profiles
    (
        ["run", "no-such-profile", "--dir", "{tmp}"],
        {},
        2,
        "Error: no job file or profile named 'no-such-profile' — give a path to a .fio file",
    ),
    (
        ["run", "{tmp}/missing.fio", "--dir", "{tmp}"],
        {},
        2,
        "Error: no job file or profile named '{tmp}/missing.fio'",
    ),
    (["run", "{job}/empty.fio", "--dir", "{tmp}"], {}, 1, "Error: job file refused:"),
    (["run", "{job}/comments.fio", "--dir", "{tmp}"], {}, 1, "Error: job file refused:"),
    (["run", "{job}/include.fio", "--dir", "{tmp}"], {}, 1, "include"),
    (["run", "{job}/dollar.fio", "--dir", "{tmp}"], {}, 1, "'$' expansion is not allowed"),
    (["run", "{job}/exec.fio", "--dir", "{tmp}"], {}, 1, "[a] exec_prerun"),
    (
        ["run", "{job}/rate.fio", "--dir", "{tmp}"],
        {},
        1,
        "rate.fio" if False else "[a] rate=1: the workload needs at least 4,194,304 s",
    ),
    (["run", "{job}/loops.fio", "--dir", "{tmp}"], {}, 1, "[a] loops=100000000: the workload"),
    (["run", "{job}/trim.fio", "--dir", "{tmp}"], {}, 1, "trims (discards) data; not allowed"),
    (["run", "{job}/huge.fio", "--dir", "{tmp}"], {}, 1, "above the cap of 64.0 GiB"),
    (["run", "{job}/binary.fio", "--dir", "{tmp}"], {}, 1, "Error: job file refused:"),
    # -- run: sizes, durations, ids, formats
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--size", "12x"],
        {},
        2,
        "'12x' is not a size — use a whole number of bytes or one with a suffix",
    ),
    (["run", "{job}/tiny.fio", "--dir", "{tmp}", "--size", "0"], {}, 2, "'0' is not a size"),
    (["run", "{job}/tiny.fio", "--dir", "{tmp}", "--size", "1.5g"], {}, 2, "'1.5g' is not a size"),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--size", "100t"],
        {},
        1,
        "--size=109951162777600: above the cap of 64.0 GiB (raise it with --max-size)",
    ),
    (["run", "{job}/tiny.fio", "--dir", "{tmp}", "--runtime", "0"], {}, 2, "'--runtime'"),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--runtime", "10s"],
        {},
        2,
        "'10s' is not a valid integer",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--runtime", "99999"],
        {},
        1,
        "--runtime=99999: above the cap of 3600 s (raise it with --max-runtime)",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--max-size", "lots"],
        {},
        2,
        "'lots' is not a size",
    ),
    (["run", "{job}/tiny.fio", "--dir", "{tmp}", "--max-runtime", "-1"], {}, 2, "--max-runtime"),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--backend", "bad id"],
        {},
        2,
        "invalid backend 'bad id' — use letters, digits",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--campaign", "../x"],
        {},
        2,
        "invalid campaign id '../x'",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--label", "novalue"],
        {},
        2,
        "'novalue' is not KEY=VALUE",
    ),
    (["run", "{job}/tiny.fio", "--dir", "{tmp}", "--repeat", "0"], {}, 2, "'--repeat'"),
    (["run", "{job}/tiny.fio", "--dir", "{tmp}", "--format", "xml"], {}, 2, "'xml' is not one of"),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--lake", "s3://b"],
        {"FIOLAKE_S3_ENDPOINT": "http://127.0.0.1:9"},
        1,
        "Error: refusing plain-text endpoint 'http://127.0.0.1:9': use https://",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--lake", "s3://b"],
        {},
        1,
        "Error: lake s3://b is on S3 but no endpoint is configured: set FIOLAKE_S3_ENDPOINT",
    ),
    # -- validate / profiles
    (["validate"], {}, 2, "Error: name at least one job file (or a profile), or use --list"),
    (["validate", "nope"], {}, 2, "Error: no job file or profile named 'nope'"),
    (["validate", "{job}/empty.fio"], {}, 1, "Error: job file refused:"),
    (["validate", "{job}/exec.fio"], {}, 1, "[a] exec_prerun"),
    (["validate", "{job}/rate.fio"], {}, 1, "[a] rate=1"),
    (["validate", "{job}/tiny.fio", "--max-numjobs", "0"], {}, 2, "--max-numjobs"),
    (["profiles", "--format", "xml"], {}, 2, "'xml' is not one of"),
    # -- sql
    (["sql", "SELEC 1", "--lake", "{lake}"], {}, 1, "Error: SQL error: Parser Error: syntax"),
    (
        ["sql", "DROP VIEW runs", "--lake", "{lake}"],
        {},
        1,
        "Error: refusing a DROP statement: the lake is read-only here (use SELECT",
    ),
    (
        ["sql", "COPY runs TO '{tmp}/out.csv'", "--lake", "{lake}"],
        {},
        1,
        "Error: refusing a COPY statement",
    ),
    (
        ["sql", "SELECT * FROM read_csv('/etc/passwd')", "--lake", "{lake}"],
        {},
        1,
        'Error: SQL error: Permission Error: Cannot access file "/etc/passwd"',
    ),
    (
        ["sql", "SELECT nope FROM runs", "--lake", "{lake}"],
        {},
        1,
        'Error: SQL error: Binder Error: Referenced column "nope" not found',
    ),
    (["sql", "SELECT 1", "--lake", "{tmp}/no-lake"], {}, 1, "Error: "),
    (["sql", "SELECT 1", "--lake", "{lake}", "--max-rows", "0"], {}, 2, "--max-rows"),
    (["sql", "SELECT count(*) FROM results", "--lake", "{corrupt}"], {}, 1, "Error: "),
    # -- compare / trend / regressions / env-diff / lake
    (["compare", "--lake", "{lake}", "--metric", "nope"], {}, 2, "Error: "),
    (["compare", "--lake", "{lake}", "--backend", "nope"], {}, 1, "Error: "),
    (["compare", "--lake", "{lake}", "--campaign", "nope"], {}, 1, "Error: "),
    (
        ["compare", "--lake", "{lake}", "--run", "r-nope"],
        {},
        1,
        "Error: no committed runs match run 'r-nope'",
    ),
    (["compare", "--lake", "{lake}", "--by", "nope"], {}, 2, "Error: "),
    (
        ["gate", "--lake", "{lake}", "--campaign", "nope"],
        {},
        2,
        "Error: no committed runs match campaign 'nope'",
    ),
    (
        ["gate", "--lake", "{lake}", "--campaign", "c", "--inconclusive", "maybe"],
        {},
        2,
        "Error: Invalid value for '--inconclusive': 'maybe' is not one of 'pass', 'fail'.",
    ),
    (["gate", "--lake", "{lake}"], {}, 2, "Error: Missing option '--campaign'."),
    (
        ["compare", "--lake", "{lake}", "--family", "nope"],
        {},
        2,
        "Error: Invalid value for '--family': 'nope' is not one of 'question', 'metric', "
        "'profile', 'table'.",
    ),
    (["compare", "--lake", "{tmp}/no-lake"], {}, 1, "Error: "),
    (["trend", "--lake", "{lake}", "--metric", "nope"], {}, 2, "Error: "),
    (["trend", "--lake", "{lake}", "--since", "7x"], {}, 2, "Error: "),
    (["regressions", "--lake", "{lake}", "--since", "soon"], {}, 2, "Error: "),
    (["regressions", "--lake", "{lake}", "--window", "-1d"], {}, 2, "Error: "),
    (["env-diff", "--lake", "{lake}", "--run", "r-a"], {}, 2, "Error: "),
    (["env-diff", "--lake", "{lake}", "--run", "r-a", "--run", "r-b"], {}, 1, "Error: "),
    (["lake", "check", "--lake", "{tmp}/no-lake"], {}, 1, "Error: "),
    (["lake", "frobnicate"], {}, 2, "Error: No such command 'frobnicate'."),
    # -- publish
    (
        ["publish", "random-reads", "--backend", "x", "--campaign", "bad id"],
        {},
        2,
        "invalid campaign id 'bad id'",
    ),
    (["publish", "random-reads", "--backend", "bad id"], {}, 2, "invalid backend 'bad id'"),
    (
        ["publish", "random-reads"],
        {},
        2,
        "Error: Missing option '--backend' (or --rerun CAMPAIGN).",
    ),
    (["publish", "nope", "--backend", "x"], {}, 2, "Error: no job file or profile named 'nope'"),
    (["publish", "random-reads", "--backend", "x", "--expires", "5x"], {}, 2, "'5x'"),
    (["publish", "random-reads", "--backend", "x", "--repeat", "0"], {}, 2, "'--repeat'"),
    (["publish", "{job}/rate.fio", "--backend", "x"], {}, 1, "[a] rate=1"),
    (
        ["publish", "random-reads", "--backend", "x", "--lake", "{tmp}/pl"],
        {"FIOLAKE_SIGNER": "bogus"},
        1,
        "Error: FIOLAKE_SIGNER is 'bogus' — set it to 'vault' (Vault transit) or 'local'",
    ),
    (
        ["publish", "random-reads", "--backend", "x", "--lake", "{tmp}/pl"],
        {"FIOLAKE_SIGNER": "local", "FIOLAKE_SIGNING_KEY": "{tmp}/no.key"},
        1,
        "Error: cannot read signing key {tmp}/no.key: No such file or directory — point "
        "FIOLAKE_SIGNING_KEY at an Ed25519 key file (create one with `fiolake keygen PATH`)",
    ),
    (
        ["publish", "random-reads", "--backend", "x", "--lake", "s3://b"],
        {
            "FIOLAKE_S3_ENDPOINT": "http://127.0.0.1:9",
            "FIOLAKE_SIGNER": "local",
            "FIOLAKE_SIGNING_KEY": "{tmp}/no.key",
        },
        1,
        "Error: ",
    ),
    # -- runner
    (
        ["runner", "--backend", "x", "--dir", "{tmp}/missing", "--once"],
        {},
        2,
        "Error: --dir {tmp}/missing does not exist",
    ),
    (
        ["runner", "--backend", "x", "--dir", "{file}", "--once"],
        {},
        2,
        "is a file, not a directory",
    ),
    (["runner", "--backend", "x", "--dir", "{ro}", "--once"], {}, 2, "is not writable"),
    (
        ["runner", "--backend", "x", "--dir", "{tmp}", "--expect-fs", "tmpfs", "--once"],
        {},
        2,
        "expected file system tmpfs",
    ),
    (["runner", "--backend", "bad id", "--dir", "{tmp}"], {}, 2, "invalid backend 'bad id'"),
    (["runner", "--backend", "x", "--dir", "{tmp}", "--lease-ttl", "1"], {}, 2, "'--lease-ttl'"),
    (
        ["runner", "--backend", "x", "--dir", "{tmp}", "--idle-exit", "xx"],
        {},
        2,
        "'xx' is not a duration",
    ),
    (
        ["runner", "--backend", "x", "--dir", "{tmp}", "--once", "--lake", "{lake}"],
        {"FIOLAKE_KEYRING": "{file}"},
        1,
        "Error: ",
    ),
    # -- status / keygen / stack / app
    (["status", "--campaign", "bad id"], {}, 2, "invalid campaign id 'bad id'"),
    (["status"], {}, 2, "Error: Missing option '--campaign'."),
    (["status", "--campaign", "c-nope", "--lake", "{tmp}/no-lake"], {}, 1, "Error: "),
    (["keygen", "{file}"], {}, 1, "Error: "),
    (["keygen", "{tmp}"], {}, 2, "Error: "),
    (
        ["keygen", "{file}/sub/key"],
        {},
        1,
        "Error: cannot write key {file}/sub/key: Not a directory — choose a path in an existing",
    ),
    (["stack", "env", "--role", "nope"], {}, 2, "'nope' is not one of"),
    (["stack", "frobnicate"], {}, 2, "Error: No such command 'frobnicate'."),
    (["frobnicate"], {}, 2, "Error: No such command 'frobnicate'."),
]


@pytest.fixture(scope="module")
def lake_with_a_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bad-input-lake")
    (root / "tiny.fio").write_text(TINY)
    result = CliRunner().invoke(
        cli,
        ["run", str(root / "tiny.fio"), "--dir", str(root), "--lake", str(root / "lake")],
    )
    assert result.exit_code == 0, result.output
    return root / "lake"


@pytest.fixture
def places(tmp_path: Path, lake_with_a_run: Path):
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    for name, text in JOBS.items():
        (jobs / name).write_text(text)
    file = tmp_path / "a-file"
    file.write_text("not a directory\n")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    # root ignores modes: an immutable directory is read-only even for root.
    immutable = (
        os.geteuid() == 0
        and subprocess.run(["chattr", "+i", str(ro)], capture_output=True).returncode == 0
    )
    corrupt = tmp_path / "corrupt"
    shutil.copytree(lake_with_a_run, corrupt)
    for parquet in (corrupt / "results").rglob("*.parquet"):
        parquet.write_bytes(b"PAR1 this is not parquet PAR1")
    yield {"tmp": tmp_path, "job": jobs, "file": file, "ro": ro, "lake": lake_with_a_run,
           "corrupt": corrupt}  # fmt: skip
    if immutable:
        subprocess.run(["chattr", "-i", str(ro)], check=False)
    ro.chmod(0o755)


def _fill(text: str, places: dict[str, Path]) -> str:
    for name, path in places.items():
        text = text.replace("{" + name + "}", str(path))
    return text


def _listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.parametrize(
    ("args", "env", "code", "message"), CASES, ids=[" ".join(c[0])[:60] for c in CASES]
)
def test_bad_input_is_a_clear_error(
    args: list[str], env: dict[str, str], code: int, message: str, places: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.chdir(places["tmp"])
    for var in ("FIOLAKE_LAKE", "FIOLAKE_S3_ENDPOINT", "FIOLAKE_SIGNER", "FIOLAKE_KEYRING"):
        monkeypatch.delenv(var, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, _fill(value, places))
    before = _listing(places["tmp"])
    result = CliRunner().invoke(cli, [_fill(a, places) for a in args])
    output = result.output
    assert "Traceback" not in output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code == code, output
    assert "Error: " in output, output
    assert _fill(message, places) in output, output
    assert _listing(places["tmp"]) == before, "a refused command left files behind"


def test_the_table_is_big_enough() -> None:
    assert len(CASES) >= 60


# -- property tests: the parsers give a value or a clean error, never another exception
@given(st.text())
def test_size_parser_never_crashes(text: str) -> None:
    try:
        assert parse_size(text) > 0
    except UsageProblem as exc:
        assert " — " in str(exc)


@given(st.text())
def test_duration_parser_never_crashes(text: str) -> None:
    for unit_required in (False, True):
        try:
            assert parse_duration(text, unit_required=unit_required) > 0
        except UsageProblem as exc:
            assert " — " in str(exc)


@given(st.text())
def test_id_parser_never_crashes(text: str) -> None:
    try:
        assert layout.check_id("campaign id", text) == text
    except ValueError as exc:
        assert " — " in str(exc)


@given(st.text(), st.sampled_from([IdParam("backend"), SizeParam(), DurationParam()]))
def test_cli_params_fail_cleanly(text: str, param: object) -> None:
    import click

    try:
        param.convert(text, None, None)  # type: ignore[attr-defined]
    except click.BadParameter as exc:
        assert " — " in exc.format_message()
