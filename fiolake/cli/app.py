"""`fiolake app`: serve the Streamlit app, with an OIDC login when it is shared."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import click

from fiolake.cli import lake_option
from fiolake.cli.extras import require_extras
from fiolake.errors import UsageProblem

# \b keeps click from re-wrapping the lines that follow it.
APP_HELP = """Serve the Streamlit app on http://ADDRESS:PORT (reads the lake, never writes).

On 127.0.0.1 (the default) no one else can reach it and there is no login. Beyond
localhost (--address 0.0.0.0, a LAN address, a host name) it needs a login: --auth FILE
names an OIDC configuration (Streamlit's [auth] plus fiolake's roles); every page then
asks for a sign-in, viewers get every page but SQL, analysts get SQL too. The lake's
credentials stay in this process; the browser holds only a signed login cookie.

\b
  fiolake app                                     # http://127.0.0.1:8501, no login
  fiolake stack app-login --app-url http://HOST:8501 --user ana:analyst
  fiolake app --address 0.0.0.0 --auth ~/.local/state/fiolake/app-login/auth.toml
  fiolake app --address 0.0.0.0 --insecure-no-login   # only behind your own login proxy

The file's format and the provider choices (OpenBao, Keycloak, Dex, Google):
docs/deploy.md "Sharing the app".
"""


def _login_problem(address: str) -> UsageProblem:
    return UsageProblem(
        f"fiolake app on {address} would show the lake to anyone who can reach it without "
        "a login — give --auth FILE (an OIDC login; `fiolake stack app-login` writes one, "
        'docs/deploy.md "Sharing the app"), use --address 127.0.0.1, or pass '
        "--insecure-no-login if your own proxy signs people in"
    )


def _child_env(lake: str, auth: Path | None) -> dict[str, str]:
    from fiolake.app.access import AUTH_ENV, load_auth_config

    env = dict(os.environ, FIOLAKE_LAKE=lake)
    env.pop(AUTH_ENV, None)  # only a file this command checked reaches the pages
    if auth is not None:
        config = load_auth_config(auth)
        env[AUTH_ENV] = str(config.path)
        if config.ca_file is not None:
            # Streamlit's OIDC client (Authlib over httpx) trusts this CA for the
            # provider's metadata, keys and tokens; nothing else in the app uses httpx.
            env["SSL_CERT_FILE"] = str(config.ca_file)
    return env


def _streamlit_command(entry: Path, address: str, port: int, auth: Path | None) -> list[str]:
    # Through fiolake.app.serve: Streamlit, with the pages' imports and the lake warmed in
    # the server process while it starts (the first visit of Home paid for them).
    cmd = [sys.executable, "-m", "fiolake.app.serve", "run", str(entry)]
    cmd += ["--server.address", address, "--server.port", str(port)]
    cmd += ["--server.headless", "true", "--browser.gatherUsageStats", "false"]
    # Viewer toolbar: readers get no "Deploy" button or developer menu.
    cmd += ["--client.toolbarMode", "viewer"]
    # No watching of source files: readers never edit the pages, and each script run
    # walked every imported module (thousands: pyarrow, scipy, pandas) to watch its file:
    # ~0.2 s of a first visit on the million-run lake, and CPU on every rerun.
    cmd += ["--server.fileWatcherType", "none"]
    if auth is not None:
        cmd += ["--secrets.files", str(auth.absolute())]
    return cmd


@click.command(help=APP_HELP)
@lake_option
@click.option("--port", type=click.IntRange(1, 65535), default=8501, show_default=True)
@click.option(
    "--address",
    default="127.0.0.1",
    show_default=True,
    help="Interface to listen on; anything but loopback needs --auth (or --insecure-no-login).",
)
@click.option(
    "--auth",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="FIOLAKE_APP_AUTH",
    show_envvar=True,
    help="Login configuration (TOML: [auth] for Streamlit's OIDC login, [fiolake.roles]).",
)
@click.option(
    "--insecure-no-login",
    is_flag=True,
    help="Serve beyond localhost without a login (only behind a proxy that signs people in).",
)
def app(lake: str, port: int, address: str, auth: Path | None, insecure_no_login: bool) -> None:
    from fiolake.app.access import is_local_address

    # Streamlit runs in a child process: a missing one is named here (the app extra,
    # which installs the analysis extra too), not in the child's traceback.
    require_extras("app", "analysis")
    if auth is not None and insecure_no_login:
        raise UsageProblem("--auth and --insecure-no-login contradict each other — give one")
    if auth is None and not insecure_no_login and not is_local_address(address):
        raise _login_problem(address)
    import fiolake.app as app_package

    entry = Path(app_package.__file__).resolve().parent / "main.py"
    if not entry.exists():
        raise click.ClickException(f"the app is not installed: {entry} is missing")
    env = _child_env(lake, auth)
    login = "OIDC login" if auth is not None else "no login"
    click.echo(
        f"fiolake app on http://{address}:{port} (lake {lake}, {login}); Ctrl-C stops it",
        err=True,
    )
    proc = subprocess.Popen(_streamlit_command(entry, address, port, auth), env=env)
    # A service manager stops us with SIGTERM: pass it on so Streamlit does not linger.
    signal.signal(signal.SIGTERM, lambda signum, _frame: proc.send_signal(signum))
    while True:
        try:
            code = proc.wait()
            break
        except KeyboardInterrupt:
            continue  # the terminal sent SIGINT to Streamlit too; wait for it to exit
    if code not in (0, -signal.SIGTERM, -signal.SIGINT):
        raise click.exceptions.Exit(code)
