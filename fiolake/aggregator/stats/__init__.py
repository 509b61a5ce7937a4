"""Statistics and verdicts: the tests (`stats`), per-run values of comparable runs
(`runsets`), compare, the gate, trends, change points and regressions, and the verdict
vocabulary (`verdict_text`).

Imports `fiolake.aggregator.lake`, `fiolake.aggregator.rows` and the core; never `report`.
"""
