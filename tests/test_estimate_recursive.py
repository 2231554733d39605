"""The recursive estimate from the searched part of the tree (``stack_left``, ``pool_left``): exact
on complete trees at every pause, with or without a pool, close on random trees, finite on stacks
thousands of frames deep, and summed across ranks."""

from __future__ import annotations

import copy
import math
import random
import statistics

import pytest
from test_estimate import Complete

import yewpy
from support import ShapeTree
from yewpy._engine import Engine
from yewpy.operations.treesize import Sampler, merge_left
from yewpy.search import core_of


class ListPool:
    """The one part of a pool the estimate reads."""

    def __init__(self) -> None:
        self.items: list = []

    def tasks(self) -> list:
        return list(self.items)


def estimates(problem, slice_nodes: int, spawn_depth: int = -1) -> tuple[int, list]:
    """Search ``problem`` in slices on one engine, like the seq and depth-bounded coordinations,
    and estimate after each: (final node count, [(nodes searched, estimate, variance), ...])."""
    engine = Engine(core_of(problem), spawn_depth=spawn_depth, tracking=True)
    sampler = Sampler(core_of(copy.deepcopy(problem)), {}, seed=1)
    pool = ListPool()
    engine.start_root()
    out = []
    while True:
        if not engine.active:
            if not pool.items:
                return engine.nodes, out
            engine.start(pool.items.pop())
            continue
        engine.run(slice_nodes)
        pool.items.extend(engine.spawned)
        engine.spawned.clear()
        left, var, _ = sampler.left(engine, pool, elapsed=1e9)     # never short of probe time
        out.append((engine.nodes, engine.nodes + left, var))


@pytest.mark.parametrize("branching, depth", [(2, 10), (3, 6), (7, 3), (1, 40)])
@pytest.mark.parametrize("spawn_depth", [-1, 0, 1])
def test_every_estimate_of_a_complete_tree_is_exact(branching, depth, spawn_depth):
    tree = Complete(branching, depth)
    total = sum(branching ** d for d in range(depth + 1))
    nodes, seen = estimates(tree, 7, spawn_depth)
    assert nodes == total and len(seen) > 3
    for searched, estimate, _ in seen:
        assert estimate == pytest.approx(total, rel=1e-9), (searched, estimate, total)


def _random_tree(rng: random.Random) -> ShapeTree:
    shape: dict = {}
    for child in range(1, rng.randrange(300, 1500)):
        shape.setdefault(rng.randrange(child // 2, child), []).append(child)
    return ShapeTree(shape)


def test_estimates_of_random_trees_are_close_by_half_way_and_exact_at_the_end():
    """Over 40 random trees: the estimate half way through is within 25% of the truth in the
    median (measured: about 5%), never below the nodes searched, and exact once all is searched."""
    rng = random.Random(11)
    halfway = []
    for _ in range(40):
        tree = _random_tree(rng)
        nodes, seen = estimates(tree, 13)
        for searched, estimate, var in seen:
            assert estimate >= searched and var >= 0
        assert seen[-1][1] == nodes
        searched, estimate, _ = min(seen, key=lambda s: abs(s[0] - nodes / 2))
        halfway.append(estimate / nodes)
    assert 0.8 < statistics.median(halfway) < 1.25, halfway


def test_a_stack_thousands_of_frames_deep_gives_a_finite_estimate():
    """A product of branching factors over 3,000 frames overflows a double; the sum does not."""
    depth = 3000
    shape = {}
    for k in range(depth):                      # every node on the spine has five children
        shape[2 * k] = [2 * k + 2] + [10 ** 6 + 4 * k + j for j in range(4)]
    tree = ShapeTree(shape)
    total = yewpy.search(tree).nodes
    assert total == 1 + 5 * depth
    nodes, seen = estimates(tree, 2000)
    for _, estimate, var in seen:
        assert math.isfinite(estimate) and math.isfinite(var) and estimate < 100 * total
    assert nodes == total and seen[-1][1] == total


def test_open_work_sums_across_ranks_under_the_better_incumbent():
    assert merge_left((10.0, 4.0, None), (5.0, 1.0, None), 1.0) == (15.0, 5.0, None)
    assert merge_left((10.0, 4.0, 40), (5.0, 1.0, 44), 1.0)[2] == 44       # maximise
    assert merge_left((10.0, 4.0, 40), (5.0, 1.0, 44), -1.0)[2] == 40      # minimise


def test_a_jitted_search_keeps_the_engines_bookkeeping():
    """``@yewpy.jit``'s generated loop keeps what the estimate reads (per frame: opened at, children
    generated and given away; per depth: closed subtree sizes) exactly as the engine's own loop,
    pause after pause, with children split off as tasks in between."""
    from jit_searches import BitQueens

    def frontiers(problem) -> list:
        engine = Engine(core_of(problem), tracking=True)
        engine.start_root()
        out = []
        while engine.active:
            engine.run(251)
            if len(out) % 3 == 2 and engine.active:
                engine.split(False)                     # one child leaves as a task
            out.append(engine.frontier())
        return out

    plain, jitted = frontiers(BitQueens(10)), frontiers(yewpy.jit(BitQueens)(10))
    assert len(plain) > 20 and jitted == plain
    assert any(frame[4] for frames, _ in plain for frame in frames)      # some frame gave a child away


def test_knuths_probes_raise_the_recursive_estimate_but_never_lower_it():
    """Combined by inverse variance where the probes are trusted and above the recursive estimate;
    below it, or too few, or missing the heavy tail (the searched nodes above their range), they
    are left out."""
    from yewpy.operations.treesize import TRUSTED_PROBES, TreeSize

    recursive = TreeSize.recursive(1_000, (9_000.0, 1_000.0 ** 2, None))       # 10,000 +- 1,000
    higher = TreeSize(TRUSTED_PROBES, 12_000.0, 1_000.0)
    both = recursive.combined(higher, 1_000)
    assert both.nodes == pytest.approx(11_000.0) and both.estimator == "kilby-2006-recursive+knuth-1975"
    assert both.stderr == pytest.approx(1_000.0 / math.sqrt(2))
    for probed in (TreeSize(TRUSTED_PROBES, 8_000.0, 1_000.0),            # lower: a likelier miss
                   TreeSize(TRUSTED_PROBES - 1, 12_000.0, 1_000.0),       # too few probes
                   TreeSize(TRUSTED_PROBES, 12_000.0, 100.0)):            # 13,000 searched: out of range
        done = 13_000 if probed.stderr == 100.0 else 1_000
        assert recursive.combined(probed, done) is recursive
