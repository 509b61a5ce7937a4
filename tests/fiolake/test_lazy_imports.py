"""Reading the lake does not import what only signing needs (hvac, cryptography)."""

from __future__ import annotations

import subprocess
import sys


def test_reading_the_lake_loads_no_signing_library() -> None:
    code = (
        "import sys, fiolake.config, fiolake.aggregator.lake.lake, fiolake.cli.comparisons\n"
        "print(sorted(m for m in ('hvac', 'cryptography') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"


def test_the_signing_names_still_resolve() -> None:
    from fiolake import signing
    from fiolake.config import Settings

    assert signing.DEFAULT_TRANSIT_KEY == Settings().transit_key == "manifests"
    assert Settings().keyring_path == signing.DEFAULT_KEYRING
    assert signing.LocalSigner.__module__ == "fiolake.signing.local_key"
    assert signing.vault_keyid.__module__ == "fiolake.signing.vault"


def test_the_questions_load_no_delta_writer() -> None:
    # deltalake is compaction's (30 ms of every question's imports, issue 44)
    code = (
        "import sys, fiolake.aggregator.stats.gate, fiolake.aggregator.stats.compare, "
        "fiolake.aggregator.stats.trend, fiolake.aggregator.stats.regressions\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('deltalake', 'arro3')))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"


def test_opening_the_lake_and_the_gate_load_no_arrow_compute() -> None:
    # pyarrow.compute is compaction's: 40 ms of imports, on the thread that connects,
    # that the gate and a campaign's compare need not pay (issue 44)
    code = (
        "import sys, fiolake.cli.gate, fiolake.cli.comparisons, fiolake.aggregator.lake.lake, "
        "fiolake.aggregator.stats.gate, fiolake.aggregator.stats.compare\n"
        "print('pyarrow.compute' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "False"
