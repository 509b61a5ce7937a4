"""The lake itself: how the aggregator reads and maintains it.

Holds the DuckDB connection and its views (`lake.Lake`; SQL text in `sqltext`; the schemas
of files kept so views bind from one footer, `footers`), the commit snapshot and its cache,
compaction (generation records, the Delta layer, the lock), the kept loose rows, prune,
check, raw SQL, the outside-engine translation, gang views and what each column means
(`columns`). Imports the core only: nothing in `rows`, `stats` or `report`.
"""
