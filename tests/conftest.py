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


def _mapped_files() -> set[str]:
    """Every file some live process has mapped (what it still uses)."""
    import os

    mapped = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/maps") as maps:
                mapped.update(line.split(None, 5)[5].strip() for line in maps if line.count(" ") >= 5
                              and "/dev/shm/" in line)
        except (OSError, IndexError):
            continue
    return mapped


@pytest.fixture(scope="session", autouse=True)
def mpich_shared_memory():
    """Remove the shared-memory segments that ranks killed by the tests leave in /dev/shm (MPICH
    and Open MPI unlink them only when a job ends normally; a leftover one made a later job with
    the same Slurm step id fail in MPI_Init): only ones made during this session and mapped by no
    live process."""
    shm = Path("/dev/shm")

    def segments() -> set[Path]:
        return {p for pattern in ("mpich_shm_*", "vader_segment.*") for p in shm.glob(pattern)}

    before = segments() if shm.is_dir() else set()
    yield
    if not shm.is_dir():
        return
    in_use = _mapped_files()
    for path in segments() - before:
        if str(path) not in in_use:
            path.unlink(missing_ok=True)


@pytest.fixture(scope="session", autouse=True)
def jit_cache(tmp_path_factory) -> Path:
    """The tests' own cache of compiled ``@yewpy.jit`` searches, inherited by every process they
    start (MPI ranks load what the first process compiled), never the user's."""
    import os

    path = tmp_path_factory.mktemp("jit-cache")
    os.environ["YEWPY_JIT_CACHE"] = str(path)
    return path
