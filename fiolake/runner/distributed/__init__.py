"""The stateless distributed runner: discover open jobs (`discovery`), verify, claim, run
and commit them (`service`; its settings and counters in `config`), gang jobs (`gang`),
the fleet status (`fleet`) and the recorded client history for the fault checker
(`history`). Imports the core and the rest of `fiolake.runner`; nothing imports it but
the CLI."""
