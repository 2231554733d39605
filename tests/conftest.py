"""Fixtures shared by the tests."""

from pathlib import Path

import pytest

from support import INSTANCES, require_shared


@pytest.fixture(scope="session")
def instances() -> Path:
    """shared/instances; a missing folder fails the test rather than skipping it."""
    require_shared()
    return INSTANCES


@pytest.fixture(scope="session", autouse=True)
def checkpoint_key(tmp_path_factory) -> Path:
    """The tests' own checkpoint key (inherited by every process they start), so that they never
    make or use the key in the user's home."""
    import os

    from yewpy.operations.checkpoint import KEY_ENV

    path = tmp_path_factory.mktemp("key") / "checkpoint-key"
    os.environ[KEY_ENV] = str(path)
    return path
