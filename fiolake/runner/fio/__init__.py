"""The fio process: which binary (`binary`) and how it is run and watched (`process`).
Imports the core only."""
