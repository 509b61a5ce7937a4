"""`fiolake stack up|down|env|status|init-remote`: the local MinIO + OpenBao stack."""

from __future__ import annotations

import json
import logging
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import click

from fiolake.cli import format_option
from fiolake.cli.extras import require_extras
from fiolake.cli.output import emit
from fiolake.stack.roles import ROLE_NAMES

if TYPE_CHECKING:
    from fiolake.s3client import S3Settings


def _state_dir_option(fn):  # noqa: ANN001, ANN202
    return click.option(
        "--state-dir",
        type=click.Path(file_okay=False, path_type=Path),
        envvar="FIOLAKE_STATE_DIR",
        show_envvar=True,
        default=None,
        help="Where the stack keeps data, secrets and logs [default: ~/.local/state/fiolake].",
    )(fn)


def _resolve_state(state_dir: Path | None) -> Path:
    from fiolake.stack.local import default_state_dir

    return state_dir or default_state_dir()


@click.group()
def stack() -> None:
    """Local MinIO (TLS) + OpenBao stack for the distributed mode on one machine.

    \b
      fiolake stack up                 # start (or re-use) both, configure everything
      eval "$(fiolake stack env)"      # point fiolake/boto3/bao at it (admin role)
      fiolake stack env --role runner  # least-privilege credentials of one role
      fiolake stack down [--purge]     # stop; --purge also deletes the state
      fiolake stack app-login --app-url http://127.0.0.1:8501 --user ana:analyst
                                       # OpenBao signs readers in to `fiolake app --auth`
    """
    require_extras("stack")  # `fiolake.cli` names the extra of a missing module, exit 2
    logging.basicConfig(level=logging.INFO, format="%(message)s")


@stack.command()
@_state_dir_option
@click.option("--minio-port", type=int, default=None, help="MinIO S3 port [default: 9900].")
@click.option("--console-port", type=int, default=None, help="MinIO console port [9901].")
@click.option("--bao-port", type=int, default=None, help="OpenBao API port [default: 8300].")
@click.option(
    "--bao-cluster-port", type=int, default=None, help="OpenBao Raft cluster port [8301]."
)
@click.option("--bucket", default=None, help="Lake bucket [default: fiolake].")
def up(
    state_dir: Path | None,
    minio_port: int | None,
    console_port: int | None,
    bao_port: int | None,
    bao_cluster_port: int | None,
    bucket: str | None,
) -> None:
    """Start OpenBao and MinIO (TLS), set up PKI, transit, KV, AppRole and IAM.

    Safe to run again: running processes and existing state are re-used. A port not
    given is that of the stack already running in this state dir, else the previous or
    default one while it is free, else a free port (so a second stack never collides
    with a first); the ports in use are printed.
    """
    from fiolake.stack.local import resolve_ports, stack_up
    from fiolake.stack.process import read_json

    state = _resolve_state(state_dir)
    previous = read_json(state / "stack.json") or {}
    ports = resolve_ports(
        state,
        {
            "minio_port": minio_port,
            "console_port": console_port,
            "bao_port": bao_port,
            "bao_cluster_port": bao_cluster_port,
        },
    )
    env = stack_up(
        state,
        **ports,
        bucket=bucket or previous.get("bucket", "fiolake"),
    )
    click.echo(
        f"stack up: MinIO {env.endpoint} (bucket {env.bucket}), OpenBao {env.vault_addr}\n"
        f"ports: MinIO {ports['minio_port']}, console {ports['console_port']}, "
        f"OpenBao {ports['bao_port']}, OpenBao cluster {ports['bao_cluster_port']}\n"
        f"state in {env.state_dir}; CA bundle {env.ca_bundle}\n"
        f'next: eval "$(fiolake stack env)"   (roles: {", ".join(ROLE_NAMES)})',
        err=True,
    )


@stack.command()
@_state_dir_option
@click.option("--purge", is_flag=True, help="Also delete the state dir (data, keys, secrets).")
def down(state_dir: Path | None, purge: bool) -> None:
    """Stop MinIO and OpenBao (state is kept unless --purge)."""
    from fiolake.stack.local import stack_down

    state = _resolve_state(state_dir)
    stack_down(state, purge=purge)
    click.echo(f"stack down{' and purged' if purge else ''}: {state}", err=True)


@stack.command()
@_state_dir_option
@click.option(
    "--role",
    type=click.Choice(ROLE_NAMES),
    default="admin",
    show_default=True,
    help="Whose credentials: admin (MinIO root + OpenBao root token), runner, publisher, analyst.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["sh", "json", "env"]),
    default="sh",
    show_default=True,
    help='sh: export lines for `eval "$(fiolake stack env)"`; json: an object; '
    "env: NAME=value lines (docker --env-file, kubectl --from-env-file).",
)
def env(state_dir: Path | None, role: str, fmt: str) -> None:
    """Print the environment that points fiolake, boto3 and bao at the running stack."""
    from fiolake.stack.local import load_stack

    variables = load_stack(_resolve_state(state_dir)).environ(role)
    if fmt == "json":
        click.echo(json.dumps(variables, indent=2, sort_keys=True))
        return
    for name, value in variables.items():
        click.echo(f"{name}={value}" if fmt == "env" else f"export {name}={shlex.quote(value)}")


@stack.command()
@_state_dir_option
@format_option()
def status(state_dir: Path | None, fmt: str) -> None:
    """Pid, address and health of each component; exit 1 unless all are healthy."""
    from fiolake.stack.local import stack_status

    columns = ["component", "pid", "address", "health"]
    rows = stack_status(_resolve_state(state_dir))
    emit(columns, [[row[c] for c in columns] for row in rows], fmt)
    if any(row["health"] != "ok" for row in rows):
        raise click.exceptions.Exit(1)


@stack.command("init-remote")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Shared directory for configs, certs, secrets and per-role env files.",
)
@click.option("--bao-addr", default="https://openbao:8200", show_default=True)
@click.option("--bao-listen", default="0.0.0.0:8200", show_default=True)
@click.option("--bao-cluster-listen", default="0.0.0.0:8201", show_default=True)
@click.option(
    "--bao-data-dir",
    type=click.Path(path_type=Path),
    default=Path("/bao/data"),
    show_default=True,
    help="OpenBao's Raft directory as seen inside the openbao container.",
)
@click.option(
    "--bao-name", multiple=True, help="Names on OpenBao's cert [openbao, localhost, 127.0.0.1]."
)
@click.option("--minio-endpoint", default="https://minio:9000", show_default=True)
@click.option(
    "--minio-name", multiple=True, help="Names on MinIO's cert [minio, localhost, 127.0.0.1]."
)
@click.option("--bucket", default="fiolake", show_default=True)
@click.option("--timeout", type=float, default=180.0, show_default=True, help="Seconds per wait.")
@click.option(
    "--app-url",
    default=None,
    help="Also sign readers in to the app at this URL through OpenBao (its OIDC provider): "
    "writes OUT/app-login/auth.toml for `fiolake app --auth` (see `stack app-login`).",
)
@click.option(
    "--app-user",
    "app_users",
    multiple=True,
    metavar="NAME:ROLE",
    help="With --app-url: a reader (viewer or analyst); repeat. "
    "Passwords: OUT/app-login/users.json.",
)
def init_remote(
    out: Path,
    bao_addr: str,
    bao_listen: str,
    bao_cluster_listen: str,
    bao_data_dir: Path,
    bao_name: tuple[str, ...],
    minio_endpoint: str,
    minio_name: tuple[str, ...],
    bucket: str,
    timeout: float,
    app_url: str | None,
    app_users: tuple[str, ...],
) -> None:
    """Set up OpenBao and MinIO running as services (compose's `init`); idempotent.

    Writes OpenBao's config and bootstrap TLS, waits for OpenBao, initialises and
    unseals it, configures PKI/transit/KV/AppRole, issues MinIO's certificate, waits
    for MinIO, creates the bucket and role users, and writes OUT/env/<role>.env.
    """
    from fiolake.cli.app_login import callback_url, parse_user, set_up_app_login
    from fiolake.errors import UsageProblem
    from fiolake.stack.remote import RemoteTopology, init_remote

    readers = [parse_user(text) for text in app_users]
    if app_url is not None:
        callback_url(app_url)  # bad input stops here, before anything is set up
    elif readers:
        raise UsageProblem("--app-user needs --app-url — give the address readers open")
    defaults = RemoteTopology()
    topo = RemoteTopology(
        bao_addr=bao_addr,
        bao_listen=bao_listen,
        bao_cluster_listen=bao_cluster_listen,
        bao_data_dir=bao_data_dir,
        bao_names=list(bao_name) or defaults.bao_names,
        minio_endpoint=minio_endpoint,
        minio_names=list(minio_name) or defaults.minio_names,
        bucket=bucket,
        timeout_s=timeout,
    )
    env = init_remote(out, topo)
    _probe_new_lake(env.bucket, env.s3_settings("admin"))
    click.echo(f"stack initialised: MinIO {env.endpoint}, OpenBao {env.vault_addr}", err=True)
    click.echo(f"role environments in {out / 'env'}", err=True)
    if app_url is not None:
        auth, _ = set_up_app_login(
            out / "app-login",
            bao_addr=env.vault_addr,
            ca=env.vault_cacert,
            root_token=env.root_token,
            app_url=app_url,
            users=readers,
        )
        click.echo(f"app login: {auth} (readers' passwords in {auth.parent}/users.json)", err=True)


def _probe_new_lake(bucket: str, s3: S3Settings) -> None:
    """The store probe on the new bucket (StoreRefused, exit 2, if it ignores If-*)."""
    from fiolake.config import Settings
    from fiolake.store import S3Store
    from fiolake.storeprobe import require_safe_store

    require_safe_store(S3Store(bucket, "", s3), Settings.from_env().probe_cache)


@stack.command("app-login")
@_state_dir_option
@click.option(
    "--app-url",
    required=True,
    help="The app as readers' browsers reach it, e.g. http://127.0.0.1:8501 or "
    "https://fiolake.example.org (its /oauth2callback becomes the redirect URI).",
)
@click.option(
    "--user",
    "users",
    multiple=True,
    metavar="NAME:ROLE",
    help="A reader and their role: viewer (every page but SQL) or analyst; repeat. "
    "Readers of earlier runs are kept, with their passwords.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="How to print the readers and their passwords (stdout).",
)
def app_login(state_dir: Path | None, app_url: str, users: tuple[str, ...], fmt: str) -> None:
    """Sign readers in to the app through the stack's OpenBao (its OIDC provider).

    Configures the provider (a client for the app at --app-url, userpass users in the
    groups fiolake-viewers / fiolake-analysts) and writes STATE/app-login/auth.toml
    (0600) for `fiolake app --auth`. Passwords are made once, kept in
    STATE/app-login/users.json (0600) and printed; readers sign in on OpenBao's page
    with them. Run it again to add readers or change the app's address.
    """
    from fiolake.cli.app_login import callback_url, parse_user, readers_json, set_up_app_login
    from fiolake.stack.local import load_stack

    wanted = [parse_user(text) for text in users]
    callback_url(app_url)  # bad input stops here, before the stack is asked
    stack_env = load_stack(_resolve_state(state_dir))
    auth, readers = set_up_app_login(
        stack_env.state_dir / "app-login",
        bao_addr=stack_env.vault_addr,
        ca=stack_env.vault_cacert,
        root_token=stack_env.root_token,
        app_url=app_url,
        users=wanted,
    )
    if fmt == "json":
        click.echo(readers_json(readers))
    else:
        emit(["user", "role", "password"], [(r.name, r.role, r.password) for r in readers], "table")
    click.echo(f"login file {auth}\nnext: fiolake app --auth {auth}", err=True)
