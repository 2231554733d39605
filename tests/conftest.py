"""Fixtures shared by the tests."""

from pathlib import Path

import pytest

from support import INSTANCES, require_shared


@pytest.fixture(scope="session")
def instances() -> Path:
    """shared/instances; a missing folder fails the test rather than skipping it."""
    require_shared()
    return INSTANCES
