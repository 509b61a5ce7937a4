"""click subcommands, one module per area; see fiolake.cli.COMMANDS."""
