"""The engine contract: bounded slices, splitting off serialisable tasks, restarting from them."""

import pickle
import struct

import pytest

import yewpy
from yewpy._engine import BUDGET, DONE, PAUSED, Engine
from yewpy.apps.knapsack import Knapsack
from yewpy.apps.maxclique import MaxClique
from yewpy.apps.nqueens import NQueens
from yewpy.search import core_of


class Ternary(yewpy.Enumeration):
    def root(self):
        return ()

    def children(self, node):
        if len(node) < 6:
            return (node + (k,) for k in range(3))
        return ()


TERNARY_NODES = sum(3 ** d for d in range(7))


def _cores():
    return {"python": lambda: core_of(Ternary()), "nqueens": lambda: NQueens(8)}


@pytest.mark.parametrize("which", ["python", "nqueens"])
@pytest.mark.parametrize("slice_nodes", [1, 7, 1000])
def test_slices_resume_where_they_stopped(which, slice_nodes):
    engine = Engine(_cores()[which]())
    engine.start_root()
    runs = 0
    while (status := engine.run(slice_nodes)) == PAUSED:
        runs += 1
    assert status == DONE and not engine.active
    expected = {"python": (TERNARY_NODES, TERNARY_NODES), "nqueens": (2057, 92)}[which]
    assert (engine.nodes, engine.take_value()) == expected
    assert runs >= engine.nodes // slice_nodes - 1


@pytest.mark.parametrize("which", ["python", "nqueens"])
@pytest.mark.parametrize("whole_level,all_levels", [(False, False), (True, False), (True, True)])
def test_split_tasks_travel_and_preserve_the_count(which, whole_level, all_levels):
    """Split repeatedly mid-search, pickle the tasks, finish them on another engine: same totals."""
    victim = Engine(_cores()[which]())
    thief = Engine(_cores()[which]())
    victim.start_root()
    tasks = []
    while victim.run(5) == PAUSED:
        tasks += pickle.loads(pickle.dumps(victim.split(whole_level, all_levels)))
    assert tasks, "the search should have given work away"
    assert all(isinstance(t, tuple) and len(t) == 2 and t[0] >= 1 for t in tasks)
    for task in tasks:
        thief.start(task)
        assert thief.run(-1) == DONE
    total = (victim.nodes + thief.nodes, victim.take_value() + thief.take_value())
    assert total == {"python": (TERNARY_NODES, TERNARY_NODES), "nqueens": (2057, 92)}[which]


def _uts_t3():
    from yewpy.apps.uts import UTS, parse_uts_params
    return UTS(**parse_uts_params("-t 0 -b 2000 -q 0.124875 -m 8 -r 42")).core()


def _is_leaf(which, node):
    """Read off the task's bytes, not asked of the core: UTS's binomial rule (a node has children
    when the digest's last word, as a fraction of 2^31, is under q) and n-queens' free squares."""
    if which == "uts":
        return (int.from_bytes(node[16:20], "big") & 0x7FFFFFFF) / 2**31 >= 0.124875
    cols, left, right = (int.from_bytes(node[k:k + 8], "little") for k in (0, 8, 16))
    return ~(cols | left | right) & 0xFF == 0


def _split_while_searching(engine, slice_nodes):
    """Search from the root, splitting every open level after each slice and searching the tasks
    one by one (each split again as it runs): the tasks sent, and the value folded."""
    engine.start_root()
    sent, waiting, value = [], [], 0
    while True:
        while engine.run(slice_nodes) == PAUSED:
            waiting += engine.split(True)
        value += engine.take_value()
        if not waiting:
            return sent, value
        sent.append(waiting.pop())
        engine.start(sent[-1])


@pytest.mark.parametrize("which,slice_nodes,expected", [("uts", 20_000, (4112897, 4112897)),
                                                         ("nqueens", 1, (2057, 92))])
@pytest.mark.parametrize("keep_leaves", [True, False])
def test_a_split_keeps_the_children_its_core_knows_to_be_leaves(which, slice_nodes, expected,
                                                                 keep_leaves):
    """``Core.leaf``: a split searches a known leaf itself rather than sending a task of one node;
    with ``keep_leaves`` off the leaves travel as before. Every task is split again while it runs,
    so tasks come from every depth; the totals are the same either way."""
    engine = Engine(_uts_t3() if which == "uts" else NQueens(8))
    engine.keep_leaves = keep_leaves
    sent, value = _split_while_searching(engine, slice_nodes)
    leaves = sum(_is_leaf(which, node) for _, node in sent)
    assert len(sent) > 20
    assert leaves == 0 if keep_leaves else leaves > len(sent) // 10
    assert (engine.nodes, value) == expected


@pytest.mark.parametrize("keep_leaves", [True, False])
def test_spawning_keeps_the_children_its_core_knows_to_be_leaves(keep_leaves):
    """Depth-bounded spawning (``spawn_depth``) also searches a known leaf in place rather than
    making it a task: on UTS T3 at spawn depth 2, 467 tasks instead of 3,864."""
    engine = Engine(_uts_t3(), spawn_depth=2)
    engine.keep_leaves = keep_leaves
    engine.start_root()
    assert engine.run(-1) == DONE
    tasks, engine.spawned, done = engine.spawned, [], 0
    while done < len(tasks):
        engine.start(tasks[done])
        assert engine.run(-1) == DONE
        tasks += engine.spawned
        engine.spawned = []
        done += 1
    leaves = sum(_is_leaf("uts", node) for _, node in tasks)
    assert (engine.nodes, engine.take_value()) == (4112897, 4112897)
    assert (len(tasks), leaves) == ((467, 0) if keep_leaves else (3864, 3397))


class Binomial(yewpy.Enumeration):
    """40 root children; below them a node has 4 children or none, by a hash of its number."""

    def root(self):
        return (0, 0)

    def fanout(self, node):
        if node[1] == 0:
            return 40
        return 4 if node[1] < 12 and (node[0] * 2654435761) % 7 < 2 else 0

    def children(self, node):
        for i in range(self.fanout(node)):
            yield ((node[0] * 31 + i + 1) % 1000003, node[1] + 1)

    def leaf(self, node):
        return self.fanout(node) == 0


class BinomialNoLeaf(Binomial):
    leaf = yewpy.Enumeration.leaf


def _binomial_size(tree, node):
    """Counted by plain recursion, apart from the engine."""
    return 1 + sum(_binomial_size(tree, child) for child in tree.children(node))


def _as_node(payload):
    """A task's node: a Python search's tuple, or a jitted search's record of two int64 slots."""
    return struct.unpack("<2q", payload) if isinstance(payload, bytes) else payload


@pytest.mark.parametrize("jitted", [False, True])
def test_a_python_search_may_say_which_nodes_are_leaves(jitted):
    """``leaf(node)`` on a Python or ``@yewpy.jit`` search: splits keep those children, as with a
    compiled core's ``Core.leaf``; a class without it sends them. Same totals either way."""
    counts, tree = {}, Binomial()
    for cls in (Binomial, BinomialNoLeaf):
        engine = Engine(core_of(yewpy.jit(cls)() if jitted else cls()))
        sent, value = _split_while_searching(engine, 1)
        leaves = [task for task in sent if tree.fanout(_as_node(task[1])) == 0]
        counts[cls] = (engine.nodes, value, len(sent), len(leaves))
    nodes, value, sent, leaves = counts[Binomial]
    size = _binomial_size(tree, tree.root())
    assert (nodes, value) == counts[BinomialNoLeaf][:2] == (size, size)
    assert leaves == 0 and sent > 20
    assert counts[BinomialNoLeaf][3] > counts[BinomialNoLeaf][2] // 10


def test_split_on_optimisation_keeps_the_optimum(instances):
    graph = MaxClique.from_file(str(instances / "clique" / "brock200_4.clq"))
    victim, thief = Engine(graph.core(), prune_level=True), Engine(graph.core(), prune_level=True)
    victim.start_root()
    tasks = []
    while victim.run(200) == PAUSED:
        tasks += victim.split(False)
    for task in tasks:
        thief.offer(victim.incumbent)
        thief.start(task)
        thief.run(-1)
    best = max(e.witness_objective for e in (victim, thief) if e.witness_objective is not None)
    assert best == 17
    witness = victim.witness if victim.witness_objective == 17 else thief.witness
    labels = [graph.labels[graph.order[v]] for v in witness]
    assert len(labels) == 17 and graph.is_clique(labels)


def test_budget_returns_control_after_the_budget():
    engine = Engine(NQueens(8), backtrack_budget=10)
    engine.start_root()
    assert engine.run(-1) == BUDGET
    assert sum(engine.metrics()["backtracks"]) == 10


def test_offer_only_adopts_better_values():
    engine = Engine(Knapsack([5, 4], [1, 1], 1).core())
    assert engine.incumbent is None
    assert engine.offer(3) and engine.incumbent == 3
    assert not engine.offer(2) and engine.incumbent == 3


def test_compiled_cores_pickle():
    core = pickle.loads(pickle.dumps(NQueens(6)))
    assert core.search().value == 4
    kp = Knapsack([60, 100, 120], [10, 20, 30], 50)
    assert pickle.loads(pickle.dumps(kp.core())).search(prune_level=True).objective == 220


def test_max_depth_must_allow_the_root():
    with pytest.raises(ValueError, match="max_depth"):
        Engine(NQueens(4), max_depth=0)


def test_time_slices_return_control():
    engine = Engine(NQueens(14))
    engine.start_root()
    assert engine.run(-1, 0.002) == PAUSED
    assert 0 < engine.nodes < 27_358_553


@pytest.mark.parametrize("which", ["python", "nqueens", "jit"])
def test_a_raised_flag_ends_the_slice_within_256_nodes(which):
    """``pause_on``: the MPI runtime's doorbell. A raised flag ends a slice with no node limit at
    the next 256-node mark, on the per-node path and on a core that walks its own frames (jit);
    lowered, the search runs on to the exact count; None forgets the flag."""
    from jit_searches import BitQueens

    make = {**_cores(), "nqueens": lambda: NQueens(9), "jit": lambda: core_of(yewpy.jit(BitQueens)(9))}[which]
    engine = Engine(make())
    flag = bytearray(1)
    engine.pause_on(flag)
    engine.start_root()
    flag[0] = 1
    assert engine.run() == PAUSED and engine.active
    assert 1 < engine.nodes <= 1 + 256           # the root, then at most 256 more
    before = engine.nodes
    assert engine.run() == PAUSED and 0 < engine.nodes - before <= 256
    flag[0] = 0
    assert engine.run() == DONE
    reference = Engine(make())
    reference.start_root()
    assert reference.run() == DONE
    assert engine.nodes == reference.nodes > 2 * 256 and engine.take_value() == reference.take_value()
    engine.pause_on(None)
    flag[0] = 1
    engine.start_root()
    assert engine.run() == DONE
