"""Fixtures of the object-store tests: a store that ignores conditional headers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fiolake.stack.env import StackEnv
from tests.stack.ignoring_proxy import in_front_of


@pytest.fixture(scope="session")
def ignoring_endpoint(stack: StackEnv) -> Iterator[str]:
    """The https:// endpoint of a store that drops If-None-Match/If-Match (the session's
    MinIO behind tests.stack.ignoring_proxy; same CA, same keys)."""
    with in_front_of(stack) as endpoint:
        yield endpoint
