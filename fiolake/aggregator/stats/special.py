"""scipy.special, the one import of scipy here (its t, noncentral t and normal ufuncs),
without the numpy tool packages scipy's import touches but nothing here runs.

`from scipy import special` goes through scipy's array-API layer, which copies every
public name of numpy (`array_api_compat.clone_module`: `getattr(numpy, name)` for each
name in `dir(numpy)`). numpy loads its submodules on first attribute access, so that
loop imports numpy.f2py (the Fortran wrapper generator, ~50 ms of regular expressions
compiled at import) and numpy.testing (unittest) into every command that compares runs:
35 ms of a 1 s `gate` (issue 44). Registered first with the standard library's
`importlib.util.LazyLoader`, they are module objects whose code runs on the first use
of one of their attributes, which no fiolake command makes.

Only modules nothing uses at run time are deferred: before Python 3.12 a lazy module
first touched by two threads at once may run twice (numpy.ma, which pandas uses from
the app's threads, stays as it is).

`special` itself imports scipy.special on the first use of one of its functions, not
when a statistics module is imported: a command then reads the lake (DuckDB, the GIL
released) while a thread imports scipy (`cli.common.import_meanwhile`, after the
command's modules), where the gate used to wait for scipy before its first query (0.1–0.2 s of
~1 s on 2 cores, issue 44). A function's first use imports it if that thread has not
(or waits for it: the module lock).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

import numpy  # noqa: F401  (the package whose submodules are deferred)

DEFERRED = ("numpy.f2py", "numpy.testing")


def defer(names: tuple[str, ...] = DEFERRED) -> None:
    """Register each of `names` (a submodule of an imported package) as a lazy module,
    unless it is imported already or cannot be found."""
    for name in names:
        parent, _, child = name.rpartition(".")
        if name in sys.modules or parent not in sys.modules:
            continue
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            continue
        spec.loader = importlib.util.LazyLoader(spec.loader)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)  # registers it; its code runs on first use
        # as the import system does: `import numpy.f2py as f2py` reads the attribute
        setattr(sys.modules[parent], child, module)


SCIPY = "scipy.special"


class _Special:
    """scipy.special's functions by name, the module imported on the first one asked."""

    def __getattr__(self, name: str) -> Any:
        value = getattr(importlib.import_module(SCIPY), name)
        setattr(self, name, value)  # found without this call from now on
        return value


defer()  # before any import of scipy: the reason for this module
special: Any = _Special()

__all__ = ["SCIPY", "special"]
