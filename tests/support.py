"""Test helpers: where shared/ lives, its answer tables, and how to run a command on real MPI ranks."""

from __future__ import annotations

import functools
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import yewpy

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("YEWPY_SHARED", ROOT.parent / "shared"))
INSTANCES = SHARED / "instances"


def same_optimum(found: Any, oracle: Any) -> bool:
    """Assert that a pruned search found the oracle's optimum, or like it none; true when there is one."""
    import math

    import pytest

    if oracle.objective is None or math.isinf(oracle.objective):
        assert found.objective is None or math.isinf(found.objective)
        return False
    assert found.objective == pytest.approx(oracle.objective, rel=1e-12)
    return True


def require_shared() -> None:
    """Fail (never skip) when the reference instances are missing: tests without them are vacuous."""
    if not INSTANCES.is_dir():
        raise RuntimeError(f"reference instances not found at {INSTANCES}; set YEWPY_SHARED")


def readme_table(path: Path) -> list[dict]:
    """The rows of the first markdown table in ``path`` whose header has a 'file' or 'n' column."""
    rows, header = [], None
    for line in path.read_text().splitlines():
        if not line.startswith("|"):
            if header and rows:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not set(line) <= set("|-: "):
            rows.append(dict(zip(header, cells)))
    return rows


def assert_names_line(read: Callable[[str], Any], path: Path, text: str, line: int) -> None:
    """Writing ``text`` to ``path`` and reading it raises InputError saying ``PATH:LINE: ...``."""
    from yewpy.errors import InputError

    path.write_text(text)
    try:
        read(str(path))
    except InputError as error:
        assert error.line == line, str(error)
        assert str(error).startswith(f"{path}:{line}: "), str(error)
    else:
        raise AssertionError(f"{path} was accepted:\n{text}")


def number(text: str) -> int:
    return int(re.sub(r"[,\s]", "", text))


def mpiexec() -> str:
    """The mpiexec beside this Python (the mpich wheel's), else the one on PATH."""
    from yewpy.tools.launch import find_mpiexec

    return find_mpiexec()


@functools.cache
def launcher_is_open_mpi() -> bool:
    """True when the tests' mpiexec is Open MPI's (the second MPI of ``tests/cluster_tests.sh``),
    whose mpirun handles signals its own way: it exits 1 when signalled, and a second Ctrl-C
    kills the ranks at once."""
    out = subprocess.run([mpiexec(), "--version"], capture_output=True, text=True, timeout=30)
    text = out.stdout + out.stderr
    return any(name in text for name in ("Open MPI", "OpenRTE", "open-mpi.org"))


def run_ranks(n: int, args: list[str], timeout: float = 120, cwd: Path | None = None,
              env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``args`` on ``n`` real MPI ranks (oversubscribing this machine is fine), with ``env``
    added to the environment."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    return subprocess.run([mpiexec(), "-n", str(n), *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=cwd)


def yewpy_cmd() -> list[str]:
    """The installed ``yewpy`` console script (``python -m yewpy`` run from the repository root
    would import the uncompiled source folder instead of the installed package)."""
    script = Path(sys.executable).parent / "yewpy"
    return [str(script)] if script.exists() else [shutil.which("yewpy") or "yewpy"]


class ShapeTree(yewpy.Enumeration):
    """An explicit tree: ``shape[node]`` lists a node's children (nodes are ints, root 0)."""

    def __init__(self, shape: dict) -> None:
        self.shape = shape

    def root(self) -> int:
        return 0

    def children(self, node: int):
        return iter(self.shape.get(node, ()))


def random_tree(rng: random.Random, low: int, high: int, reach: int = 2) -> ShapeTree:
    """A random tree of ``low`` to ``high`` nodes: each new node's parent is drawn from the last
    1 / ``reach`` of the nodes before it (the larger ``reach``, the bushier the tree)."""
    shape: dict = {}
    for child in range(1, rng.randrange(low, high)):
        shape.setdefault(rng.randrange(child // reach, child), []).append(child)
    return ShapeTree(shape)


class DepthHistogram(ShapeTree):
    """Nodes per depth of a shape tree: a non-trivial commutative monoid over (node, depth) nodes."""

    zero = ()

    def root(self) -> tuple:
        return (0, 0)

    def children(self, node: tuple):
        return ((c, node[1] + 1) for c in self.shape.get(node[0], ()))

    def leaf(self, node: tuple) -> bool:
        return not self.shape.get(node[0])

    def value(self, node: tuple) -> tuple:
        return ((node[1], 1),)

    def combine(self, a: tuple, b: tuple) -> tuple:
        counts = dict(a)
        for depth, count in b:
            counts[depth] = counts.get(depth, 0) + count
        return tuple(sorted(counts.items()))
