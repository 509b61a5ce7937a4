"""fio's output → lake rows: the JSON report (`document`), which job each fio thread belongs
to (`threads`), results and percentiles (`results`), per-second logs (`logs`), disk/iodepth/
latency bins (`extras`) and the per-job summary (`summary`). Pure parsing of fio's files:
imports the core only."""
