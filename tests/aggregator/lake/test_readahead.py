"""lake.readahead: a query read beside the block, its rows dropped, never left running."""

from __future__ import annotations

import time
from pathlib import Path

from fiolake.aggregator.lake.columns import HEADLINE_METRICS
from fiolake.aggregator.lake.lake import connect
from fiolake.aggregator.lake.readahead import campaigns_sql, read_ahead


def test_the_campaigns_query_reads_their_results_rows(two_backends: Path) -> None:
    with connect(str(two_backends)) as lake:
        sql = campaigns_sql(["c1"], ["iops"])
        got = lake.con.execute(sql.replace("SELECT ", "SELECT count(*), ", 1)).fetchone()
        rows = lake.con.execute(
            "SELECT count(*) FROM results WHERE run_id IN "
            "(SELECT run_id FROM runs WHERE campaign_id = 'c1')"
        ).fetchone()
        assert got is not None and rows is not None
        assert got[0] == rows[0] > 0  # every row of the campaign, no other
        assert got[-1] is not None  # the metric's column was read
        none = lake.con.execute(campaigns_sql(["nothing"], list(HEADLINE_METRICS))).fetchone()
        assert none is not None and none[0] is None


def test_a_read_ahead_still_running_is_interrupted_when_the_block_ends(
    two_backends: Path,
) -> None:
    endless = "SELECT count(*) FROM range(1000000000000) a WHERE a.range % 7 = 3"
    with connect(str(two_backends)) as lake:
        start = time.monotonic()
        with read_ahead(lake, endless):
            pass
        assert time.monotonic() - start < 10  # interrupted, not waited for
        # the connection it ran beside still answers
        assert lake.con.execute("SELECT count(*) FROM runs").fetchone() == (6,)


def test_a_read_ahead_that_fails_leaves_the_question_to_report(two_backends: Path) -> None:
    with connect(str(two_backends)) as lake, read_ahead(lake, "SELECT * FROM no_such_view"):
        assert lake.con.execute("SELECT count(*) FROM runs").fetchone() == (6,)
