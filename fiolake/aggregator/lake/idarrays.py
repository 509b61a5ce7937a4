"""Arrow string arrays of ids, made without pandas.

`pa.array` on a Python list imports pandas (0.12 s, checking whether the list is a pandas
object), which a command that opens a lake otherwise never needs. Readers and compaction
look a few listed ids up among a year's (1,000,000 runs) in Arrow: against a Python set
of the year's ids that lookup cost 0.2–0.35 s each time (issue 44). pyarrow has no other
constructor from Python strings, so this one builds the array's two buffers itself; and
`positions_array` does the same for row positions from numpy, and `numbers` reads a
numeric column back into numpy from its buffer (`to_numpy` imports pandas too).
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


def positions_array(positions: np.ndarray) -> pa.Array:
    """Row positions (for `Table.take`) as an Arrow int64 array over numpy's buffer."""
    values = np.ascontiguousarray(positions, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def numbers(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A numeric Arrow column without nulls as a numpy array (a copy of its values)."""
    if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
        raise TypeError(f"{column.type} is not a numeric column")
    dtype = np.dtype(column.type.to_pandas_dtype())
    if len(column) == 0:  # combining no chunks would build an empty array: pandas again
        return np.zeros(0, dtype)
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if array.null_count:
        raise ValueError(f"{array.null_count} nulls in a column read as numbers")
    data = array.buffers()[1]
    return np.frombuffer(data, dtype, count=len(array), offset=array.offset * dtype.itemsize).copy()
