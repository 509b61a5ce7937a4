"""`ids_array`, `positions_array`, `numbers`: numpy and Python to Arrow and back without
pandas, equal to what `pa.array` and `to_numpy` make."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fiolake.aggregator.lake.idarrays import ids_array, numbers, positions_array


@given(st.lists(st.text()))
def test_ids_array_equals_pa_array(ids: list[str]) -> None:
    made = ids_array(ids)
    assert made.type == pa.string()
    assert made.equals(pa.array(ids, pa.string()))
    assert made.to_pylist() == ids


def test_ids_array_imports_no_pandas() -> None:
    code = (
        "import sys\n"
        "from fiolake.aggregator.lake.idarrays import ids_array, numbers, positions_array\n"
        "assert ids_array(['run-1', 'run-2']).to_pylist() == ['run-1', 'run-2']\n"
        "import duckdb, numpy as np\n"
        "from fiolake.aggregator.lake.idarrays import numbers, positions_array\n"
        "t = duckdb.connect().execute('SELECT range AS a FROM range(4)').to_arrow_table()\n"
        "assert numbers(t.take(positions_array(np.array([3, 1])))['a']).tolist() == [3, 1]\n"
        "assert len(numbers(t.slice(0, 0)['a'])) == 0\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "False\n"


@given(st.lists(st.integers(-(2**63), 2**63 - 1)), st.integers(0, 5))
def test_numbers_and_positions_round_trip(values: list[int], skip: int) -> None:
    column = pa.chunked_array([pa.array(values, pa.int64()), pa.array([7, 8], pa.int64())])
    whole = values + [7, 8]
    assert numbers(column).tolist() == whole
    assert numbers(column.combine_chunks().slice(skip)).tolist() == whole[skip:]
    picked = np.arange(len(whole))[::-1]
    table = pa.table({"a": column})
    assert table.take(positions_array(picked))["a"].to_pylist() == whole[::-1]


def test_numbers_refuses_nulls_and_text() -> None:
    with pytest.raises(ValueError, match="1 nulls in a column read as numbers"):
        numbers(pa.array([1.5, None]))
    with pytest.raises(TypeError, match="string is not a numeric column"):
        numbers(pa.array(["1"]))
