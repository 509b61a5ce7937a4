"""The runner stage: a job file in, one run attempt of fio out, as lake tables.

`attempt` is the one run-attempt pipeline every caller goes through — check (the one
policy-check entry point) → run → write under an explicit durability rule → commit;
`local` is `fiolake run`'s campaign on it. Under it: `execute` runs one job file (policy →
canonical job file → fio → tables) and fills the attempt's record (`outcome`);
`precondition` runs a job on its files first; `lake_writer`, `spool` and `heartbeat` put
an attempt into the lake; `distributed` is the stateless runner loop that pulls signed
jobs (solo and gang attempts, both through `attempt`). Sub-packages: `policy` (untrusted
job files), `fio` (the fio process), `report` (fio's output → rows), `host` (target dir,
environment, contention). May import the core (`fiolake.*` modules) and its own sub-packages, never
the CLI, the aggregator, the app or the stack.
"""
