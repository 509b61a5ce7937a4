"""What a question imports: not what only signing (hvac, cryptography) or compaction
(deltalake, pyarrow.compute) needs."""

from __future__ import annotations

import subprocess
import sys


def printed_after(imports: str, expression: str) -> str:
    """What `expression` prints in a fresh interpreter after `import sys, <imports>`."""
    code = f"import sys, {imports}\nprint({expression})"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return out.stdout.strip()


def test_reading_the_lake_loads_no_signing_library() -> None:
    imports = "fiolake.config, fiolake.aggregator.lake.lake, fiolake.cli.comparisons"
    found = "sorted(m for m in ('hvac', 'cryptography') if m in sys.modules)"
    assert printed_after(imports, found) == "[]"


def test_the_signing_names_still_resolve() -> None:
    from fiolake import signing
    from fiolake.config import Settings

    assert signing.DEFAULT_TRANSIT_KEY == Settings().transit_key == "manifests"
    assert Settings().keyring_path == signing.DEFAULT_KEYRING
    assert signing.LocalSigner.__module__ == "fiolake.signing.local_key"
    assert signing.vault_keyid.__module__ == "fiolake.signing.vault"


def test_the_questions_load_no_delta_writer() -> None:
    # deltalake is compaction's (30 ms of every question's imports, issue 44)
    imports = (
        "fiolake.aggregator.stats.gate, fiolake.aggregator.stats.compare, "
        "fiolake.aggregator.stats.trend, fiolake.aggregator.stats.regressions"
    )
    found = "sorted(m for m in sys.modules if m.split('.')[0] in ('deltalake', 'arro3'))"
    assert printed_after(imports, found) == "[]"


def test_opening_the_lake_and_the_gate_load_no_arrow_compute() -> None:
    # pyarrow.compute is compaction's: 40 ms of imports, on the thread that connects,
    # that the gate and a campaign's compare need not pay (issue 44)
    imports = (
        "fiolake.cli.gate, fiolake.cli.comparisons, fiolake.aggregator.lake.lake, "
        "fiolake.aggregator.stats.gate, fiolake.aggregator.stats.compare"
    )
    assert printed_after(imports, "'pyarrow.compute' in sys.modules") == "False"
