"""The three Python search kinds on the engine: monoids, bounds, senses, limits, errors, oracles."""

import pickle
import traceback

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import yewpy
from support import DepthHistogram
from support import ShapeTree as Tree

COORDINATIONS = [("seq", {}), ("stacksteal", {}), ("stacksteal", {"chunked": True}),
                 ("depthbounded", {"spawn_depth": 1}), ("depthbounded", {"spawn_depth": 3}),
                 ("budget", {"backtracks": 1}), ("budget", {"backtracks": 4, "spawn_all": True}),
                 ("budget", {"backtracks": 2, "pool": "deque"})]


@st.composite
def trees(draw):
    """Random trees up to 60 nodes: each new node hangs under an earlier one."""
    n = draw(st.integers(1, 60))
    shape = {}
    for child in range(1, n):
        shape.setdefault(draw(st.integers(0, child - 1)), []).append(child)
    return shape


def _depths(shape):
    depth, todo = {0: 0}, [0]
    while todo:
        node = todo.pop()
        for c in shape.get(node, ()):
            depth[c] = depth[node] + 1
            todo.append(c)
    return depth


@settings(max_examples=60, deadline=None)
@given(trees(), st.sampled_from(COORDINATIONS), st.one_of(st.none(), st.integers(1, 6)))
def test_random_trees_count_the_same_under_every_coordination(shape, coordination, max_depth):
    depth = _depths(shape)
    expected = sum(1 for d in depth.values() if max_depth is None or d < max_depth)
    result = Tree(shape).search(coordination[0], max_depth=max_depth, **coordination[1])
    assert (result.value, result.nodes) == (expected, expected)
    histogram = DepthHistogram(shape).search(coordination[0], max_depth=max_depth, **coordination[1]).value
    want = {}
    for d in depth.values():
        if max_depth is None or d < max_depth:
            want[d] = want.get(d, 0) + 1
    assert dict(histogram) == want


class Subsets(yewpy.Optimisation):
    """Choose items (value, cost pairs) with total cost <= limit; node = (next index, value, cost)."""

    def __init__(self, items, limit, sense="max"):
        self.items, self.limit, self.sense = items, limit, sense

    def root(self):
        return (0, 0, 0)

    def children(self, node):
        i, value, cost = node
        for j in range(i, len(self.items)):
            v, c = self.items[j]
            if cost + c <= self.limit:
                yield (j + 1, value + v, cost + c)

    def objective(self, node):
        return node[1]

    def bound(self, node):
        rest = [v for v, _ in self.items[node[0]:]]
        if self.sense == "max":
            return node[1] + sum(v for v in rest if v > 0)
        return node[1] + sum(v for v in rest if v < 0)


def _best_subset(items, limit, sense):
    import itertools

    best = None
    for k in range(1, len(items) + 1):
        for combo in itertools.combinations(items, k):
            if sum(c for _, c in combo) <= limit:
                v = sum(x for x, _ in combo)
                if best is None or (v > best if sense == "max" else v < best):
                    best = v
    return best


ORDERED = [("ordered", {"spawn_depth": 1}), ("ordered", {"spawn_depth": 2, "discrepancy": True})]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-20, 20), st.integers(0, 9)), max_size=8), st.integers(0, 30),
       st.sampled_from(["max", "min"]), st.sampled_from(COORDINATIONS + ORDERED))
def test_optimisation_both_senses_against_brute_force(items, limit, sense, coordination):
    best = _best_subset(items, limit, sense)
    result = Subsets(items, limit, sense).search(coordination[0], **coordination[1])
    assert result.objective == best
    if best is not None:
        i, value, cost = result.solution
        assert value == best and cost <= limit


def test_a_bound_is_optional():
    class NoBound(Subsets):
        bound = yewpy.Optimisation.bound

    items = [(5, 3), (4, 2), (3, 2), (-1, 0)]
    assert NoBound(items, 5).search().objective == Subsets(items, 5).search().objective == 9
    assert NoBound(items, 5).search().nodes > Subsets(items, 5).search().nodes


def test_initial_bound_seeds_the_incumbent():
    items = [(5, 3), (4, 2), (3, 2)]
    seeded = Subsets(items, 5).search(initial_bound=9, initial_solution="given")
    assert (seeded.objective, seeded.solution) == (9, "given")     # nothing beats 9: the seed stands
    better = Subsets(items, 5).search(initial_bound=6)
    assert better.objective == 9 and better.solution[1] == 9


class Reach(yewpy.Decision):
    """Is there a path in a counter tree reaching ``objective >= target``? node = value."""

    def root(self):
        return 0

    def children(self, node):
        if node < 10:
            yield node + 2
            yield node + 1

    def objective(self, node):
        return node

    def bound(self, node):
        return 11 if node < 10 else node


@pytest.mark.parametrize("coordination,params", COORDINATIONS + ORDERED)
def test_decision_found_and_not_found(coordination, params):
    found = Reach().search(coordination, target=11, **params)
    assert found.found and found.solution >= 11 and found.status == "found"
    missing = Reach().search(coordination, target=12, **params)
    assert not missing.found and missing.solution is None and missing.status == "exhausted"
    assert missing.nodes == 3         # the root, then both children fail the bound


def test_decision_needs_a_target():
    with pytest.raises(ValueError, match="target"):
        Reach().search()


def test_user_exception_propagates_with_its_traceback():
    class Broken(Tree):
        def children(self, node):
            if node == 2:
                raise KeyError("planted in children")
            return super().children(node)

    with pytest.raises(KeyError, match="planted") as info:
        Broken({0: [1, 2], 2: [3]}).search()
    frames = traceback.extract_tb(info.tb)
    assert any(f.name == "children" and "planted" in (f.line or "") for f in frames)


def test_time_limit_stops_an_infinite_tree():
    class Endless(yewpy.Enumeration):
        def root(self):
            return 0

        def children(self, node):
            yield node + 1

    result = Endless().search(time_limit=0.2)
    assert result.status == "time_limit" and result.nodes > 1000


def test_unknown_coordination_and_parameters_are_refused():
    tree = Tree({0: [1]})
    with pytest.raises(ValueError, match="unknown coordination"):
        tree.search("nonsense")
    with pytest.raises(TypeError, match="backtracks"):
        tree.search("depthbounded", backtracks=3)
    with pytest.raises(yewpy.UsageError, match="ordered is for decision and optimisation"):
        tree.search("ordered")
    assert tree.search(yewpy.Budget(backtracks=1)).value == 2
    with pytest.warns(UserWarning, match="no parallelism"):
        yewpy.DepthBounded(spawn_depth=0)


def test_result_is_picklable_and_serialisable():
    result = Tree({0: [1, 2]}).search()
    assert pickle.loads(pickle.dumps(result)) == result
    assert result.to_dict()["value"] == 3


@pytest.mark.parametrize("discrepancy", [False, True])
def test_ordered_is_replicable_and_follows_its_priority(discrepancy):
    items = [(7, 3), (5, 2), (4, 2), (3, 1), (6, 4), (2, 1), (8, 5)]
    runs = [Subsets(items, 9).search("ordered", spawn_depth=2, discrepancy=discrepancy) for _ in range(3)]
    assert {(r.objective, r.nodes, tuple(r.metrics["nodes"])) for r in runs} == {
        (runs[0].objective, runs[0].nodes, tuple(runs[0].metrics["nodes"]))}
    assert runs[0].objective == _best_subset(items, 9, "max")


def test_an_infinite_objective_never_becomes_the_incumbent():
    class Paths(yewpy.Optimisation):
        """Minimise: only complete paths (length 3) have a finite objective."""
        sense = "min"

        def root(self):
            return ()

        def children(self, node):
            if len(node) < 3:
                yield from (node + (k,) for k in (2, 1))

        def objective(self, node):
            return sum(node) if len(node) == 3 else float("inf")

    stopped = Paths().search(node_limit=3)          # only partial paths seen so far
    assert stopped.status == "node_limit" and stopped.objective is None and stopped.solution is None
    full = Paths().search()
    assert (full.objective, full.solution) == (3, (1, 1, 1))
