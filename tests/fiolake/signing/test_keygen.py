from __future__ import annotations

import os
from pathlib import Path

from click.testing import CliRunner

from fiolake.cli import cli
from fiolake.signing import LocalSigner, load_public_key


def test_keygen_writes_a_private_key_and_its_public_key_once(tmp_path: Path) -> None:
    key = tmp_path / "signing.key"
    result = CliRunner().invoke(cli, ["keygen", str(key)])
    assert result.exit_code == 0, result.output
    keyid, pub = result.stdout.strip().split("\t")
    assert pub == f"{key}.pub"
    assert os.stat(key).st_mode & 0o777 == 0o600
    assert load_public_key(Path(pub))[0] == keyid == LocalSigner.load(key).keyid
    again = CliRunner().invoke(cli, ["keygen", str(key)])
    assert again.exit_code == 1
    assert again.output == (
        f"Error: {key} already exists; refusing to overwrite a key file — choose another "
        "PATH, or move the old key and its .pub away first\n"
    )
