"""The job-file policy: fio job files are untrusted input, even when signed.

`jobfile` reads them, `options` knows fio's options, `checks` judges one occurrence,
`duration` bounds how long a job must run, `check` puts it together. Imports only the
core, this package and `runner.fio` (to run `fio --parse-only`): no store, no network.
"""
