"""mypy on the package as it is installed (``yewpy.skeletons`` and ``yewpy.apps`` come from
``skeletons/`` and ``apps/``): the core package, the runtime's protocols and every coordination
type-check clean (pyproject.toml's ``[tool.mypy]``; the apps are not checked yet)."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    """A folder holding ``yewpy`` laid out as installed, made of links to the sources."""
    root = tmp_path_factory.mktemp("typed")
    package = root / "yewpy"
    package.mkdir()
    for entry in (REPO / "yewpy").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    (package / "skeletons").symlink_to(REPO / "skeletons")
    (package / "apps").symlink_to(REPO / "apps")
    return root


def _mypy(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"),
                           "--cache-dir", str(root / ".mypy_cache"), *args],
                          capture_output=True, text=True, cwd=root, timeout=600)


def test_the_package_type_checks(staged):
    out = _mypy(staged, "-p", "yewpy")
    assert out.returncode == 0 and "Success" in out.stdout, out.stdout + out.stderr


def test_a_transport_missing_methods_fails_the_check(staged):
    """The check can fail: Ordered's one-task ``Slices`` is not a whole ``Transport``."""
    (staged / "partial.py").write_text(
        "from yewpy.runtime.interfaces import Slices, Transport\n"
        "from yewpy.skeletons.ordered import _Alone\n\n"
        "slices: Slices = _Alone()\n"
        "transport: Transport = _Alone()\n")
    out = _mypy(staged, "--follow-imports=silent", "partial.py")
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and "partial.py:5:" in errors[0] and '"Transport"' in errors[0], out.stdout
