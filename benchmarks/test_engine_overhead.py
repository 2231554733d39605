"""Per-node overhead of the engine: pytest-benchmark timings, each asserting its exact count.

    pytest benchmarks/ --benchmark-only

A trivial pure-Python ``yewpy.Enumeration`` (complete ternary tree of depth 9) against two
hand-written recursions over the same tree (one calling the same ``children``, isolating the
engine's cost; one fully inlined), and the compiled n-queens core for the other end of the
scale.  The project's default ``pytest`` run does not collect this folder (testpaths = tests).
"""

from __future__ import annotations

from typing import Any

import yewpy
from yewpy.apps.nqueens import NQueens

DEPTH = 9
TERNARY_NODES = (3 ** (DEPTH + 1) - 1) // 2          # 29524
NQUEENS_N, NQUEENS_SOLUTIONS = 11, 2680


class Ternary(yewpy.Enumeration):
    """Node = its depth; every node above DEPTH has three children.  The default value counts."""

    def root(self) -> int:
        return 0

    def children(self, node: int) -> tuple:
        d = node + 1
        return (d, d, d) if node < DEPTH else ()


def count_same_children(tree: Ternary, node: int) -> int:
    """Hand recursion through the same ``children``: what the engine's driving loop replaces."""
    n = 1
    for child in tree.children(node):
        n += count_same_children(tree, child)
    return n


def count_inline(depth: int) -> int:
    """The plain recursion a user would write for this tree."""
    n = 1
    if depth < DEPTH:
        for _ in range(3):
            n += count_inline(depth + 1)
    return n


def _run(benchmark: Any, fn: Any, rounds: int) -> Any:
    return benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=1)


def test_python_enumeration(benchmark: Any) -> None:
    """The engine driving a pure-Python enumeration through the PyCore adapter."""
    tree = Ternary()
    result = _run(benchmark, tree.search, rounds=15)
    benchmark.extra_info["nodes"] = TERNARY_NODES
    assert result.value == TERNARY_NODES and result.nodes == TERNARY_NODES


def test_recursion_same_children(benchmark: Any) -> None:
    """The hand recursion over the same ``children``: the baseline for the engine's overhead."""
    tree = Ternary()
    count = _run(benchmark, lambda: count_same_children(tree, 0), rounds=15)
    benchmark.extra_info["nodes"] = TERNARY_NODES
    assert count == TERNARY_NODES


def test_recursion_inline(benchmark: Any) -> None:
    """The fully inlined recursion: the cheapest pure-Python count of the tree."""
    count = _run(benchmark, lambda: count_inline(0), rounds=15)
    benchmark.extra_info["nodes"] = TERNARY_NODES
    assert count == TERNARY_NODES


def test_nqueens_compiled(benchmark: Any) -> None:
    """The compiled n-queens core: the engine's per-node cost when no Python runs per node."""
    result = _run(benchmark, lambda: NQueens(NQUEENS_N).search(), rounds=25)
    benchmark.extra_info["nodes"] = result.nodes
    assert result.value == NQUEENS_SOLUTIONS
