"""stats.special: scipy.special without running numpy's tool packages (issue 44)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
import fiolake.aggregator.stats.gate
print("scipy imported", "scipy.special" in sys.modules)
from fiolake.aggregator.stats.special import special
p = float(special.stdtr(3, -1.0))
ran = sorted(m for m in sys.modules if m.startswith(("numpy.f2py.", "numpy.testing.")))
print(ran, p, "scipy.special" in sys.modules)
import numpy.testing
numpy.testing.assert_allclose(1.0, 1.0)  # a deferred package still works when used
print("used", "numpy.testing._private.utils" in sys.modules)
"""


def test_the_statistics_import_scipy_without_running_numpy_tool_packages() -> None:
    # a new interpreter: this one's tests have imported numpy.testing already
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    # scipy on the first function used, not with the statistics (it imports meanwhile)
    assert out == ["scipy imported False", "[] 0.19550110947788524 True", "used True"]
