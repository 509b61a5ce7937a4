"""The roles of the stack: the one list (cheap to import: `stack --help` needs it)."""

# Every role the stack hands out credentials for (`fiolake stack env --role`): the one list.
ROLE_NAMES = ("admin", "runner", "publisher", "analyst", "compactor", "importer")
# The least-privilege roles: each gets its own MinIO user + policy and an OpenBao AppRole.
SERVICE_ROLES = tuple(role for role in ROLE_NAMES if role != "admin")
