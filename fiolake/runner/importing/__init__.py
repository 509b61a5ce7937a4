"""fio output made elsewhere → lake runs (`fiolake import`): documents read out of any text
(`reading`), old layouts brought to today's (`eras`), one run per document and host with
ids from its content (`runs`), written like a runner writes (`writer`). Parsing reuses
runner.report; imports the core only (no duckdb, scipy or pandas)."""
