"""`python -m fiolake` is the `fiolake` command."""

from fiolake.cli import main

main()
