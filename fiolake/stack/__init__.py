"""The local stack: MinIO over TLS + OpenBao (PKI, transit, KV, AppRole) + least-privilege IAM.

`stack_up` starts both as background processes of one state directory and configures
them; `load_stack` describes a running stack; the rest stop, restart or inspect it.
"""
