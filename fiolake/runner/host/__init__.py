"""The host a run measures: the target directory (`target`), the environment fingerprint
(`sysinfo`) and whether the run was alone (`contention`). Imports the core,
`runner.policy` and `runner.fio` only."""
