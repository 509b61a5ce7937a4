"""The gate's table order: the same rows always print in the same order."""

from __future__ import annotations

import itertools

from fiolake.aggregator.stats import gate, stats
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
        tuple((g.backend, g.row.metric) for g in gate._ordered(list(shuffled)))
        for shuffled in itertools.permutations(rows)
    }
    assert orders == {
        (("ceph", "iops"), ("nvme", "iops"), ("nvme", "lat_mean_ns"), ("tmpfs", "iops"),
         ("nvme", "bw_bytes")),
    }  # fmt: skip


def test_sizes_either_side_of_a_rounding_boundary_are_still_a_tie() -> None:
    # 12-digit rounding split these two (…912 and …913) though they differ by 2e-16: the
    # last bits of a parallel float sum, different from one run of a query to the next.
    below, above = 0.0123456789124999, 0.0123456789125001
    rows = [_row("nvme", "iops", 1 + above), _row("ceph", "lat_mean_ns", 1 / (1 + below))]
    for shuffled in itertools.permutations(rows):
        assert [g.backend for g in gate._ordered(list(shuffled))] == ["ceph", "nvme"]


def test_size_classes_join_chains_of_near_equal_sizes_only() -> None:
    sizes = [0.5, 0.25, 0.25 * (1 + 1e-12), 0.25 * (1 - 1e-12), 0.2, 0.0, 0.0]
    classes = stats.size_classes(sizes)
    assert classes[:2] == [0.5, 0.25 * (1 + 1e-12)]
    assert classes[2] == classes[3] == classes[1]
    assert classes[4:] == [0.2, 0.0, 0.0]
