"""The shipped fio profiles: plain `.fio` files, package data of `fiolake.job_files`."""
