"""The pieces of work stealing, in one process: the thief's share, the wire format, the tree, victims.

Random trees (hypothesis) are searched by a victim that hands shares to a thief at random moments;
every node must be searched exactly once, whatever the steal mode, the coordination and the moments.
"""

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from support import DepthHistogram
from yewpy._engine import BUDGET, Engine
from yewpy.apps.knapsack_python import KnapsackPy
from yewpy.runtime import taskpack
from yewpy.runtime.mpi import Victims
from yewpy.runtime.share import STEALS, give
from yewpy.runtime.tree import SpanningTree
from yewpy.search import core_of
from yewpy.skeletons import DepthPool, DequePool, coordination

SETTINGS = settings(max_examples=40, deadline=None)


def shapes():
    """A random tree as {parent: [children]} on nodes 0..n-1 (each child after its parent)."""
    return st.lists(st.integers(min_value=0, max_value=10 ** 6), min_size=0, max_size=300).map(
        lambda picks: _shape(picks))


def _shape(picks):
    shape = {}
    for child, pick in enumerate(picks, start=1):
        shape.setdefault(pick % child, []).append(child)
    return shape


def _oracle(shape):
    """Nodes per depth, by plain recursion: the independent answer."""
    counts = Counter()

    def walk(node, depth):
        counts[depth] += 1
        for child in shape.get(node, ()):
            walk(child, depth + 1)

    walk(0, 0)
    return tuple(sorted(counts.items()))


def _two_workers(problem, coord, mode, seed, **engine_options):
    """A victim searching in slices that hands ``give`` shares to a thief at random moments; the
    thief then searches what it got, handing shares back.  Returns both engines."""
    rng = random.Random(seed)
    options = {**coord.engine_options(), **engine_options}
    workers = [(Engine(core_of(problem), **options), coord.make_pool()) for _ in range(2)]
    workers[0][0].start_root()
    turn = 0
    while any(engine.active or len(pool) for engine, pool in workers):
        engine, pool = workers[turn]
        if not engine.active and len(pool):
            engine.start(pool.pop_local())
        if engine.active:
            status = engine.run(rng.randint(1, 7))
            pool.extend(engine.spawned)
            engine.spawned.clear()
            if status == BUDGET:
                pool.extend(coord.after_budget(engine))
            if rng.random() < 0.5:
                other = workers[1 - turn]
                shared = give(engine, pool, mode)
                assert shared or not len(pool)      # a victim with pooled tasks always gives
                other[1].extend(taskpack.unpack(taskpack.pack(shared)))
        turn = 1 - turn if rng.random() < 0.3 else turn
    return [engine for engine, _ in workers]


COORDINATIONS = [("stacksteal", {}), ("depthbounded", {"spawn_depth": 2}), ("budget", {"backtracks": 5}),
                 ("budget", {"backtracks": 3, "spawn_all": True, "pool": "deque"})]


@SETTINGS
@given(shape=shapes(), mode=st.sampled_from(STEALS), which=st.sampled_from(COORDINATIONS),
       seed=st.integers(0, 1000))
def test_every_node_is_searched_once_under_every_steal_mode(shape, mode, which, seed):
    problem = DepthHistogram(shape)
    engines = _two_workers(problem, coordination(which[0], **which[1]), mode, seed)
    value = problem.combine(engines[0].take_value(), engines[1].take_value())
    assert value == _oracle(shape)
    assert engines[0].nodes + engines[1].nodes == sum(count for _, count in value)


@SETTINGS
@given(items=st.lists(st.tuples(st.integers(1, 60), st.integers(1, 40)), min_size=1, max_size=11),
       mode=st.sampled_from(STEALS), seed=st.integers(0, 1000))
def test_shared_work_keeps_the_optimum(items, mode, seed):
    profits, weights = [p for p, _ in items], [w for _, w in items]
    capacity = sum(weights) // 2
    best = max(sum(p for p, _, take in zip(profits, weights, mask) if take)
               for mask in ([(m >> i) & 1 for i in range(len(items))] for m in range(1 << len(items)))
               if sum(w for w, take in zip(weights, mask) if take) <= capacity)
    problem = KnapsackPy(profits, weights, capacity)
    engines = _two_workers(problem, coordination("stacksteal"), mode, seed, prune_level=True)
    found = [e.witness_objective for e in engines if e.witness_objective is not None]
    assert max(found, default=0) == best


@given(tasks=st.lists(st.tuples(st.integers(0, 50), st.integers(0, 9)), max_size=60),
       mode=st.sampled_from(STEALS), deque=st.booleans())
def test_a_pool_steal_splits_the_pool(tasks, mode, deque):
    pool = DequePool() if deque else DepthPool()
    pool.extend(tasks)
    taken = pool.steal(mode)
    assert Counter(taken) + Counter(pool.tasks()) == Counter(tasks)
    assert bool(taken) == bool(tasks)
    if mode == "half" and tasks:
        assert len(taken) == (len(tasks) + 1) // 2 if not deque else len(taken) == max(1, len(tasks) // 2)
    if mode == "one" and tasks:
        assert len(taken) == 1


@given(st.lists(st.tuples(st.integers(0, 2**31 - 1), st.binary(max_size=40)), max_size=50))
def test_task_buffers_round_trip(tasks):
    """Packed in C and in Python, the same buffers; each unpacks the other's."""
    packed = {}
    try:
        for compiled in (True, False):
            taskpack.COMPILED = compiled
            packed[compiled] = taskpack.pack(tasks)
            assert taskpack.unpack(packed[compiled]) == tasks
            if tasks:
                assert packed[compiled][0] == "bytes"
            mixed = [(1, (2, "x"))] + tasks + [(3, bytearray(b"y"))]
            assert taskpack.unpack(taskpack.pack(mixed)) == mixed
        assert packed[True] == packed[False]
        taskpack.COMPILED = True
        assert taskpack.unpack(packed[False]) == tasks
    finally:
        taskpack.COMPILED = True


def test_the_spanning_tree_reaches_every_rank_in_log_hops():
    for size in range(1, 300):
        trees = [SpanningTree(r, size) for r in range(size)]
        depth = {0: 0}
        for tree in trees:
            for child in tree.children:
                assert trees[child].parent == tree.rank
                depth[child] = depth[tree.rank] + 1
        assert sorted(depth) == list(range(size))
        assert max(depth.values()) == trees[0].depth() <= size.bit_length()
        assert all(len(t.neighbours) <= 3 for t in trees)


def test_victims_try_their_node_first_then_remote_ranks_then_the_last_giver():
    victims = Victims(rank=1, size=8, local=[0, 1, 2, 3])
    picks = {victims.choose() for _ in range(50)}
    assert picks <= {0, 2, 3}
    for _ in range(3):
        victims.lost()
    assert {victims.choose() for _ in range(50)} <= {4, 5, 6, 7}
    victims.won(6)
    assert victims.choose() == 6 and victims.failures == 0
    victims.lost()
    assert victims.choose() in {0, 2, 3}
    alone = Victims(rank=0, size=3, local=[0, 1, 2])
    for _ in range(10):
        alone.lost()
    assert alone.choose() in {1, 2}
