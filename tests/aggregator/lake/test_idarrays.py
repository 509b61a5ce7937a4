"""`ids_array`: Python strings to Arrow without pandas, equal to what `pa.array` makes."""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from fiolake.aggregator.lake.idarrays import ids_array


@given(st.lists(st.text()))
def test_ids_array_equals_pa_array(ids: list[str]) -> None:
    made = ids_array(ids)
    assert made.type == pa.string()
    assert made.equals(pa.array(ids, pa.string()))
    assert made.to_pylist() == ids


def test_ids_array_imports_no_pandas() -> None:
    code = (
        "import sys\n"
        "from fiolake.aggregator.lake.idarrays import ids_array\n"
        "assert ids_array(['run-1', 'run-2']).to_pylist() == ['run-1', 'run-2']\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "False\n"
