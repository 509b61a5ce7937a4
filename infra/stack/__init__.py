"""The local stack: MinIO over TLS + OpenBao (PKI, transit, KV, AppRole) + least-privilege IAM.

`stack_up` starts both as background processes of one state directory and configures
them; `load_stack` describes a running stack; the rest stop, restart or inspect it.
"""

from fiolake.stack.env import ROLE_NAMES, RoleCredentials, StackEnv
from fiolake.stack.local import (
    default_state_dir,
    load_stack,
    resolve_ports,
    restart_minio,
    stack_down,
    stack_status,
    stack_up,
    start_minio,
    start_openbao,
    stop_minio,
    stop_openbao,
)

__all__ = [
    "ROLE_NAMES",
    "RoleCredentials",
    "StackEnv",
    "default_state_dir",
    "load_stack",
    "resolve_ports",
    "restart_minio",
    "stack_down",
    "stack_status",
    "stack_up",
    "start_minio",
    "start_openbao",
    "stop_minio",
    "stop_openbao",
]
