"""Arrow string arrays of ids, made without pandas.

`pa.array` on a Python list imports pandas (0.12 s, checking whether the list is a pandas
object), which a command that opens a lake otherwise never needs. Readers and compaction
look a few listed ids up among a year's (1,000,000 runs) in Arrow: against a Python set
of the year's ids that lookup cost 0.2–0.35 s each time (issue 44). pyarrow has no other
constructor from Python strings, so this one builds the array's two buffers itself.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa


def ids_array(ids: Iterable[str]) -> pa.Array:
    """`ids` as an Arrow string array, in their order (UTF-8, as `pa.array` would)."""
    encoded = [i.encode() for i in ids]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    data = pa.py_buffer(b"".join(encoded))
    array = pa.LargeStringArray.from_buffers(len(encoded), pa.py_buffer(offsets.tobytes()), data)
    return array.cast(pa.string())
