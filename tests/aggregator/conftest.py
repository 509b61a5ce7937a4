"""Fixtures for aggregator tests: small synthetic lakes (see lakegen.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.aggregator import lakegen


@pytest.fixture
def two_backends(tmp_path: Path) -> Path:
    """Campaign c1: backend a (iops 1000) and b (iops 800), 3 repetitions each, ±1% jitter."""
    store = lakegen.local_store(tmp_path / "lake")
    lakegen.write_campaign(
        store,
        "c1",
        {
            "a": {("job1", "read"): {"iops": 1000.0}, ("job1", "write"): {"iops": 500.0}},
            "b": {("job1", "read"): {"iops": 800.0}, ("job1", "write"): {"iops": 500.0}},
        },
        3,
        jitter=0.01,
    )
    return tmp_path / "lake"
