"""Fixtures of the object-store tests: a store that ignores conditional headers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fiolake.stack.env import StackEnv
from tests.stack.ignoring_proxy import ignoring_proxy


@pytest.fixture(scope="session")
def ignoring_endpoint(stack: StackEnv) -> Iterator[str]:
    """The https:// endpoint of a store that drops If-None-Match/If-Match (the session's
    MinIO behind tests.stack.ignoring_proxy; same CA, same keys)."""
    certs = stack.state_dir / "minio-certs"
    secrets = {creds.access_key: creds.secret_key for creds in stack.roles.values()}
    with ignoring_proxy(stack.endpoint, stack.ca_bundle, certs / "public.crt",
                        certs / "private.key", secrets) as endpoint:  # fmt: skip
        yield endpoint
