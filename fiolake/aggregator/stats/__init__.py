"""Statistics and verdicts: the tests (`stats`), per-run values of comparable runs
(`runsets`), compare (with the notes on a job run as several versions, `job_versions`,
and its adjustment family in words, `family_words`), the gate, trends, change points and
regressions, and the verdict vocabulary (`verdict_text`).

Imports `fiolake.aggregator.lake`, `fiolake.aggregator.rows` and the core; never `report`.
"""
