"""fio's JSON layouts of every era → today's, so runner.report reads them all one way.

docs/fio-output.md §3 has the rules. Before fio 2.21 `io_bytes` is in KiB (2.21 made it
bytes and added `io_kbytes`); before 2.99 (3.0) latencies are `slat`/`clat`/`lat` in µs,
percentiles included (3.0 made them `*_ns` in ns); json+ bins (from 2.2.11) are keyed by
bucket index with fio's FIO_IO_U_PLAT_* constants until 2.20, then by bucket value (µs
until 2.99, ns after). Every conversion is exact: integers times 1024 or 1000.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from fiolake.errors import FioError
from fiolake.fio_bins import PLAT_BITS, PLAT_VAL, plat_idx_to_val
from fiolake.runner.report.document import DIRECTIONS, LAT_TYPES

NS_PER_US = 1000
BYTES_PER_KIB = 1024
_SECTIONS = (*DIRECTIONS, "mixed")
_INDEX_KEYS = ("FIO_IO_U_PLAT_BITS", "FIO_IO_U_PLAT_VAL", "FIO_IO_U_PLAT_NR")


def entries(doc: dict) -> Iterator[dict]:
    """Every per-job entry of a document: jobs[] and, from fio's client, client_stats[]."""
    for key in ("jobs", "client_stats"):
        for entry in doc.get(key) or []:
            if isinstance(entry, dict):
                yield entry


def normalise(doc: dict) -> dict:
    """A copy of `doc` in today's layout (bytes, ns, `*_ns` blocks, bins keyed by ns)."""
    out = copy.deepcopy(doc)
    for entry in entries(out):
        for name in _SECTIONS:
            section = entry.get(name)
            if isinstance(section, dict):
                _bytes(section)
                for kind in LAT_TYPES:
                    if kind in section and f"{kind}_ns" not in section:
                        section[f"{kind}_ns"] = _usec_block(section.pop(kind))
    return out


def _bytes(section: dict[str, Any]) -> None:
    # Without io_kbytes fio wrote io_bytes in KiB (fio < 2.21).
    if "io_kbytes" not in section and isinstance(section.get("io_bytes"), int):
        section["io_kbytes"] = section["io_bytes"]
        section["io_bytes"] = section["io_bytes"] * BYTES_PER_KIB


def _usec_block(block: Any) -> Any:
    if not isinstance(block, dict):
        return block
    out = dict(block)
    for key in ("min", "max", "mean", "stddev"):
        if isinstance(out.get(key), int | float):
            out[key] = out[key] * NS_PER_US
    if isinstance(out.get("percentile"), dict):
        out["percentile"] = {p: _times(v, NS_PER_US) for p, v in out["percentile"].items()}
    if isinstance(out.get("bins"), dict):
        out["bins"] = _usec_bins(out["bins"])
    return out


def _times(value: Any, factor: int) -> Any:
    return value * factor if isinstance(value, int | float) else value


def _usec_bins(bins: dict[str, Any]) -> dict[str, Any]:
    """µs-era json+ bins → {ns value: count}; by index (fio 2.2.11–2.19) or by µs value."""
    if not any(key in bins for key in _INDEX_KEYS):
        return {str(int(value) * NS_PER_US): count for value, count in bins.items()}
    if (bins.get("FIO_IO_U_PLAT_BITS"), bins.get("FIO_IO_U_PLAT_VAL")) != (PLAT_BITS, PLAT_VAL):
        raise FioError(
            "json+ bins with FIO_IO_U_PLAT_BITS="
            f"{bins.get('FIO_IO_U_PLAT_BITS')}, FIO_IO_U_PLAT_VAL={bins.get('FIO_IO_U_PLAT_VAL')}"
            f" (fio's are {PLAT_BITS} and {PLAT_VAL})"
        )
    out: dict[str, Any] = {}
    for key, count in bins.items():
        if key in _INDEX_KEYS or not count:
            continue
        value = plat_idx_to_val(int(key)) * NS_PER_US
        out[str(value)] = out.get(str(value), 0) + count
    return out
