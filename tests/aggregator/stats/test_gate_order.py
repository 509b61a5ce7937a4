"""The gate's table order: the same rows always print in the same order."""

from __future__ import annotations

import itertools

from fiolake.aggregator.stats import gate
from fiolake.aggregator.stats.compare import INCONCLUSIVE, WORSE, CompareRow


def _row(backend: str, metric: str, ratio: float, verdict: str = INCONCLUSIVE) -> gate.GateRow:
    row = CompareRow("new", "random-reads", "job1", "read", metric, "sha", 3, 3, 1.0, ratio,
                     None, None, None, None, None, None, verdict)  # fmt: skip
    return gate.GateRow(backend, row)


def test_rows_of_equal_size_keep_one_order_whatever_order_sql_gave() -> None:
    # 1.04 and 1/1.04 are one size of change, to the last bits or not: a tie.
    rows = [
        _row("tmpfs", "iops", 1.04),
        _row("nvme", "lat_mean_ns", 1 / 1.04),
        _row("nvme", "iops", 1.04 * (1 + 1e-15)),
        _row("ceph", "iops", 0.5, WORSE),
        _row("nvme", "bw_bytes", 1.01),
    ]
    orders = {
        tuple((g.backend, g.row.metric) for g in sorted(shuffled, key=gate._order))
        for shuffled in itertools.permutations(rows)
    }
    assert orders == {
        (("ceph", "iops"), ("nvme", "iops"), ("nvme", "lat_mean_ns"), ("tmpfs", "iops"),
         ("nvme", "bw_bytes")),
    }  # fmt: skip
