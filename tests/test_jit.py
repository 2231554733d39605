"""``@yewpy.jit``: the same class plain and compiled gives the same answers and node counts, under
every coordination, on real MPI ranks and across checkpoints; what cannot compile is refused
with its file, line and construct; compiled code is cached on disk for later processes.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jit_searches import (
    BitQueens,
    BitsetClique,
    CliqueDecision,
    MaskKnapsack,
    random_graph,
    tutorial_knapsack,
)

import yewpy
from support import readme_table, run_ranks
from yewpy.apps.knapsack import Knapsack, read_knapsack
from yewpy.apps.maxclique import MaxClique
from yewpy.apps.nqueens import NQueens

TESTS = Path(__file__).resolve().parent
JQueens = yewpy.jit(BitQueens)
JKnapsack = yewpy.jit(MaskKnapsack)
JClique = yewpy.jit(BitsetClique)


# -- the same class, plain and compiled --------------------------------------------------------

@pytest.mark.parametrize("n", range(1, 10))
def test_queens_plain_and_jitted_agree(n):
    plain, fast = BitQueens(n).search(), JQueens(n).search()
    assert (fast.value, fast.nodes) == (plain.value, plain.nodes)
    assert type(fast.value) is int


@pytest.mark.parametrize("n", [10, 12])
def test_jitted_queens_builds_the_compiled_apps_tree(n):
    app, fast = NQueens(n).search(), JQueens(n).search()
    assert (fast.value, fast.nodes) == (app.value, app.nodes)


def test_knapsack_plain_and_jitted_agree_with_the_witness():
    args = tutorial_knapsack()
    plain, fast = MaskKnapsack(*args).search(), JKnapsack(*args).search()
    assert (fast.objective, fast.nodes, fast.solution) == (plain.objective, plain.nodes, plain.solution)
    assert fast.objective == 12423 and fast.nodes == 22247          # the tutorial's figures
    assert sum(args[0][i] for i in MaskKnapsack(*args).items(fast.solution)) == 12423


@pytest.mark.parametrize("limit", [10, 300, 3000])
def test_a_stopped_jitted_search_proves_the_plain_ones_bound(limit):
    """``Result.bound`` of a stopped search: the compiled records bound the same open work as the
    plain class's nodes, and no better than the optimum (12423)."""
    args = tutorial_knapsack()
    plain, fast = MaskKnapsack(*args).search(node_limit=limit), JKnapsack(*args).search(node_limit=limit)
    assert plain.status == fast.status == "node_limit"
    assert (fast.objective, fast.bound) == (plain.objective, plain.bound) and fast.bound >= 12423


@pytest.mark.parametrize("name", ["knapPI_11_20_1000_1.kp", "f2_l-d_kp_20_878.kp", "f8_l-d_kp_23_10000.kp",
                                  "knapsackTest1.kp", "f10_l-d_kp_20_879.kp"])
def test_jitted_knapsack_against_the_compiled_app(name, instances):
    inst = read_knapsack(str(instances / "knapsack" / "yewpar_kp" / name))
    app = Knapsack(inst.profits, inst.weights, inst.capacity).search()
    fast = JKnapsack(inst.profits, inst.weights, inst.capacity).search()
    assert (fast.objective, fast.nodes) == (app.objective, app.nodes)
    if inst.optimum is not None:
        assert fast.objective == inst.optimum
    packed = MaskKnapsack(inst.profits, inst.weights, inst.capacity).items(fast.solution)
    assert sum(inst.weights[i] for i in packed) <= inst.capacity
    assert sum(inst.profits[i] for i in packed) == fast.objective


def clique_rows(graph: MaxClique) -> np.ndarray:
    return graph.rows.reshape(graph.size, -1)


@pytest.mark.parametrize("name", ["hamming6-4.clq", "johnson8-4-4.clq", "MANN_a9.clq", "brock200_2.clq",
                                  "c-fat200-1.clq", "p_hat300-1.clq"])
def test_jitted_bitset_clique_against_the_compiled_app(name, instances):
    omega = {row["file"]: int(row["omega"]) for row in readme_table(instances / "clique" / "README.md")
             if "omega" in row}
    graph = MaxClique.from_file(str(instances / "clique" / name))
    app = graph.search()
    problem = JClique(clique_rows(graph), graph.size)
    fast = problem.search()
    assert (fast.objective, fast.nodes) == (app.objective, app.nodes) and fast.objective == omega[name]
    members = problem.members(fast.solution)
    assert len(members) == fast.objective
    labels = [graph.labels[graph.order[v]] for v in members]
    assert graph.is_clique(labels)


@pytest.mark.parametrize("n,p,seed", [(12, 0.5, 1), (40, 0.6, 2), (70, 0.5, 3), (130, 0.3, 4)])
def test_clique_plain_and_jitted_agree_on_random_graphs(n, p, seed):
    rows = random_graph(n, p, seed)
    plain, fast = BitsetClique(rows, n).search(), JClique(rows, n).search()
    assert (fast.objective, fast.nodes) == (plain.objective, plain.nodes)
    assert BitsetClique(rows, n).members(fast.solution) == BitsetClique(rows, n).members(plain.solution)
    import networkx as nx

    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from((a, b) for a in range(n) for b in range(n) if int(rows[a, b >> 6]) >> (b & 63) & 1)
    assert fast.objective == max(len(c) for c in nx.find_cliques(g))          # an independent oracle


@pytest.mark.parametrize("target", [3, 5, 6, 7])
def test_decision_plain_and_jitted_agree(target):
    rows = random_graph(40, 0.5, 7)[:, 0]
    plain = CliqueDecision(rows).search(target=target)
    fast = yewpy.jit(CliqueDecision)(rows).search(target=target)
    assert (fast.found, fast.nodes, fast.solution, fast.status) == (plain.found, plain.nodes, plain.solution,
                                                                     plain.status)


# -- random trees, against the plain class as the oracle ---------------------------------------

class HashShape:
    """A random tree from a seed: a node's child count and values come from a hash of the node."""

    def __init__(self, seed, depth, fan):
        self.seed = seed
        self.depth = depth
        self.fan = fan

    def root(self):
        return (self.seed, 0)

    def children(self, node):
        h, d = node
        if d < self.depth:
            for k in range((h >> 7) % (self.fan + 1)):
                yield ((h * 6364136223846793005 + 1442695040888963407 + k * 97) & 0x7FFFFFFFFFFF, d + 1)


class HashTree(HashShape, yewpy.Enumeration):
    """An enumeration over the random tree, summing a value of each node."""

    def value(self, node):
        return node[0] % 5 + node[1]


class HashMax(HashShape, yewpy.Optimisation):
    """Branch and bound on the random tree: objective h % 100 on even depths, a loose bound."""

    def __init__(self, seed, depth, fan, sense):
        super().__init__(seed, depth, fan)
        self.sense = sense
        self.maximise = sense == "max"
        self.no_solution = -math.inf if self.maximise else math.inf

    def objective(self, node):
        return float(node[0] % 100) if node[1] % 2 == 0 else self.no_solution

    def bound(self, node):
        slack = 100.0 - 10.0 * node[1] / self.depth
        return slack if self.maximise else 100.0 - slack


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 40), depth=st.integers(1, 7), fan=st.integers(0, 5))
def test_random_enumerations_agree(seed, depth, fan):
    plain, fast = HashTree(seed, depth, fan).search(), yewpy.jit(HashTree)(seed, depth, fan).search()
    assert (fast.value, fast.nodes) == (plain.value, plain.nodes)
    assert same_metrics(fast, plain)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 40), depth=st.integers(1, 7), fan=st.integers(0, 5),
       sense=st.sampled_from(["max", "min"]), prune_level=st.booleans())
def test_random_optimisations_agree(seed, depth, fan, sense, prune_level):
    plain = HashMax(seed, depth, fan, sense).search(prune_level=prune_level)
    fast = yewpy.jit(HashMax)(seed, depth, fan, sense).search(prune_level=prune_level)
    assert (fast.objective, fast.nodes, fast.solution) == (plain.objective, plain.nodes, plain.solution)
    assert same_metrics(fast, plain)


class ArrayTree(yewpy.Enumeration):
    """A random tree whose shape depends on arrays made in children() and value() in every form
    the scratch arena serves (yewpy.compiler.scratch); ``size`` past the arena takes the rest
    from numba's allocator."""

    def __init__(self, seed, depth, fan, size):
        self.seed, self.depth, self.fan, self.size = seed, depth, fan, size
        self.weights = np.arange(size, dtype=np.int64) % 3

    def root(self):
        return (self.seed, 0)

    def children(self, node):
        h, d = node
        if d >= self.depth:
            return
        a = np.zeros(self.size, dtype=np.int64)
        b = np.ones(self.size)
        c = np.empty((2, self.size), np.uint64)
        e = np.empty_like(a)
        z = np.zeros_like(b)
        flags = np.zeros(self.size, np.bool_)
        for i in range(self.size):
            a[i] = (h >> (i % 40)) & 7
            c[0, i] = a[i]
            c[1, i] = a[i] * 2
            e[i] = a[i] + 1
            flags[i] = a[i] > 3
        w = self.weights.copy()
        cc = c.copy()
        t = a.copy()
        total = 0
        for i in range(self.size):
            total += int(t[i] * w[i]) + int(b[i]) + int(z[i]) + int(cc[1, i]) - int(e[i]) + int(flags[i])
        for k in range(total % (self.fan + 1) if d else self.fan):
            yield ((h * 1103515245 + total * 12345 + k) & 0x7FFFFFFF, d + 1)

    def value(self, node):
        digits = np.zeros(4, dtype=np.int64)
        for i in range(4):
            digits[i] = (node[0] >> (8 * i)) & 3
        return int(digits.copy().sum())


@pytest.mark.parametrize("seed,size", [(1, 8), (2, 8), (3, 100), (4, 33000)])
def test_arrays_made_in_compiled_methods(seed, size):
    plain = ArrayTree(seed, 4, 3, size).search()
    fast = yewpy.jit(ArrayTree)(seed, 4, 3, size).search()
    assert plain.nodes > 10
    assert (fast.value, fast.nodes) == (plain.value, plain.nodes)


class ComplexArrays(yewpy.Enumeration):
    """A chain whose steps come from complex arrays: a dtype the arena does not take, so each
    constructor falls back to numba's own (np.ones must still give ones)."""

    def __init__(self, n):
        self.n = n

    def root(self):
        return (0,)

    def children(self, node):
        if node[0] < self.n:
            a = np.ones(3, np.complex128)
            b = np.zeros(2, np.complex128)
            c = np.empty(2, np.complex128)
            c[0] = 1.0
            c[1] = 2.0
            yield (node[0] + 1 + int(a.sum().real) + int(b.sum().real) + int(c.sum().real),)

    def value(self, node):
        return node[0]


def test_constructors_the_arena_does_not_take_are_numpys_own():
    plain, fast = ComplexArrays(20).search(), yewpy.jit(ComplexArrays)(20).search()
    assert plain.value == 42
    assert (fast.value, fast.nodes) == (plain.value, plain.nodes)


def test_allocations_are_rewritten_to_the_arena():
    from yewpy.compiler import build

    text = build.plan_of(yewpy.jit(BitsetClique)).methods["children"].text
    assert text.count("_scratch_.copy(self__yewpy_scratch, ") == 3          # rest, p, members
    assert text.count("_scratch_.empty(self__yewpy_scratch, ") == 3         # q, order, colour
    assert "np.empty" not in text and ".copy()" not in text


def same_metrics(a, b) -> bool:
    """Per-depth nodes, backtracks, prunes and spawns: the compiled loop (JitCore.descend) keeps
    the engine's books exactly as the engine's own loop does for the plain class."""
    return all(a.metrics[key] == b.metrics[key] for key in ("nodes", "backtracks", "prunes", "spawns"))


@pytest.mark.parametrize("coordination,params", [("seq", {}), ("depthbounded", {"spawn_depth": 2}),
                                                 ("budget", {"backtracks": 7}),
                                                 ("budget", {"backtracks": 30, "spawn_all": True}),
                                                 ("stacksteal", {})])
def test_the_compiled_loop_keeps_the_engines_books(coordination, params):
    """Enumerations do not depend on timing, so every per-depth count must match the plain
    class's under every coordination, and node limits and depth limits must cut at the same node."""
    for plain, fast in [(BitQueens(8), JQueens(8)), (HashTree(11, 6, 4), yewpy.jit(HashTree)(11, 6, 4))]:
        for extra in ({}, {"max_depth": 5}, {"node_limit": 777}):
            a, b = fast.search(coordination, **params, **extra), plain.search(coordination, **params, **extra)
            assert (a.value, a.nodes, a.status) == (b.value, b.nodes, b.status), (coordination, extra)
            assert same_metrics(a, b), (coordination, extra)
    args = tutorial_knapsack()                    # one process, same order: optimisations match too
    a, b = JKnapsack(*args).search(coordination, **params), MaskKnapsack(*args).search(coordination, **params)
    assert (a.objective, a.nodes, a.solution) == (b.objective, b.nodes, b.solution) and same_metrics(a, b)
    rows = random_graph(40, 0.5, 7)[:, 0]
    for target in (5, 7):
        a = yewpy.jit(CliqueDecision)(rows).search(coordination, target=target, **params)
        b = CliqueDecision(rows).search(coordination, target=target, **params)
        assert (a.found, a.nodes, a.solution) == (b.found, b.nodes, b.solution) and same_metrics(a, b)


# -- every coordination, in one process ---------------------------------------------------------

COORDINATIONS = [("seq", {}), ("depthbounded", {"spawn_depth": 2}), ("budget", {"backtracks": 50}),
                 ("budget", {"backtracks": 50, "spawn_all": True}), ("stacksteal", {}),
                 ("stacksteal", {"chunked": True})]


@pytest.mark.parametrize("coordination,params", COORDINATIONS)
def test_every_coordination_gives_the_sequential_answer(coordination, params):
    queens = JQueens(8).search(coordination, **params)
    assert (queens.value, queens.nodes) == (92, 2057)
    args = tutorial_knapsack()
    assert JKnapsack(*args).search(coordination, **params).objective == 12423
    rows = random_graph(70, 0.5, 3)
    best = BitsetClique(rows, 70).search().objective
    assert JClique(rows, 70).search(coordination, **params).objective == best


@pytest.mark.parametrize("params", [{"spawn_depth": 1}, {"spawn_depth": 2, "discrepancy": True}])
def test_ordered_gives_the_sequential_answer(params):
    args = tutorial_knapsack()
    assert JKnapsack(*args).search("ordered", **params).objective == 12423
    rows = random_graph(40, 0.5, 7)[:, 0]
    jitted = yewpy.jit(CliqueDecision)(rows)
    assert jitted.search("ordered", target=6, **params).found == CliqueDecision(rows).search(target=6).found


def test_limits_depth_and_initial_bound():
    assert JQueens(8).search(max_depth=4).nodes == BitQueens(8).search(max_depth=4).nodes
    assert JQueens(9).search(node_limit=1000).status == "node_limit"
    args = tutorial_knapsack()
    seeded = JKnapsack(*args).search(initial_bound=12000)
    assert seeded.objective == 12423 and seeded.nodes == MaskKnapsack(*args).search(initial_bound=12000).nodes


# -- checkpoint, progress and profile -------------------------------------------------------------

def test_checkpoint_and_resume_are_exact(tmp_path):
    path = tmp_path / "q.ckpt"
    result = JQueens(10).search("stacksteal", checkpoint=str(path), node_limit=5000)
    rounds = 1
    while result.status == "node_limit":
        result = JQueens(10).search("stacksteal", checkpoint=str(path), resume=str(path),
                                    node_limit=result.nodes + 5000)
        rounds += 1
    assert (result.value, result.nodes) == (724, 35539) and rounds > 3
    kpath = tmp_path / "k.ckpt"
    args = tutorial_knapsack()
    first = JKnapsack(*args).search("budget", backtracks=100, checkpoint=str(kpath), node_limit=3000)
    assert first.status == "node_limit"
    done = JKnapsack(*args).search("budget", backtracks=100, checkpoint=str(kpath), resume=str(kpath))
    assert done.objective == 12423
    assert sum(args[0][i] for i in MaskKnapsack(*args).items(done.solution)) == 12423


def test_progress_and_profile(tmp_path, capsys):
    profile = tmp_path / "p.json"
    result = JQueens(13).search(progress=0.01, profile=str(profile))
    assert result.value == 73712
    data = json.loads(profile.read_text())
    assert (data["problem"], data["nodes"], data["status"]) == ("BitQueens", result.nodes, "exhausted")
    assert "nodes" in capsys.readouterr().err


# -- real MPI ranks ---------------------------------------------------------------------------

MPI_SCRIPT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {tests!r})
    import numpy as np
    import yewpy
    from jit_searches import (BitQueens, BitsetClique, CliqueDecision, MaskKnapsack, random_graph,
                          tutorial_knapsack)
    from jit_searches import random_graph, tutorial_knapsack, CliqueDecision
    from yewpy.runtime.ranks import world

    Q, K, C, D = (yewpy.jit(c) for c in (BitQueens, MaskKnapsack, BitsetClique, CliqueDecision))
    rows = random_graph(70, 0.5, 3)
    drows = random_graph(40, 0.5, 7)[:, 0]
    out = []
    for coord, params in {coordinations}:
        q = Q(9).search(coord, **params)
        k = K(*tutorial_knapsack()).search(coord, **params)
        c = C(rows, 70).search(coord, **params)
        d = D(drows).search(coord, target=6, **params)
        out.append([coord, q.value, q.nodes, k.objective, c.objective, d.found, q.metrics["ranks"]])
    for coord, params in [("ordered", {{"spawn_depth": 2}})]:
        k = K(*tutorial_knapsack()).search(coord, **params)
        d = D(drows).search(coord, target=7, **params)
        out.append([coord, 352, 0, k.objective, 0, d.found, 0])
    if world() is None or world().Get_rank() == 0:
        print(json.dumps(out))
""")

MPI_COORDINATIONS = [("seq", {}), ("depthbounded", {"spawn_depth": 2}), ("budget", {"backtracks": 50}),
                     ("stacksteal", {}), ("stacksteal", {"chunked": True}), ("depthbounded",
                     {"spawn_depth": 1, "steal": "one"}), ("budget", {"backtracks": 20, "steal": "level"})]


def _expected():
    rows = random_graph(70, 0.5, 3)
    drows = random_graph(40, 0.5, 7)[:, 0]
    clique = BitsetClique(rows, 70).search().objective
    six = CliqueDecision(drows).search(target=6).found
    seven = CliqueDecision(drows).search(target=7).found
    return clique, six, seven


@pytest.mark.parametrize("ranks", [2, 3, 4, 16])
def test_jitted_searches_on_mpi_ranks(ranks, tmp_path):
    script = tmp_path / "jit_ranks.py"
    script.write_text(MPI_SCRIPT.format(tests=str(TESTS), coordinations=repr(MPI_COORDINATIONS)))
    out = run_ranks(ranks, [sys.executable, str(script)], timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = json.loads(out.stdout.strip().splitlines()[-1])
    clique, six, seven = _expected()
    nodes = NQueens(9).search().nodes
    for coord, qv, qn, kobj, cobj, found, nranks in rows[:-1]:
        assert (qv, qn, kobj, cobj, found, nranks) == (352, nodes, 12423, clique, six, ranks), coord
    assert rows[-1][3] == 12423 and rows[-1][5] == seven


def test_resume_at_another_rank_count(tmp_path):
    script = tmp_path / "resume.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(TESTS)!r})
        import yewpy
        from jit_searches import BitQueens
        Q = yewpy.jit(BitQueens)
        mode, path = sys.argv[1], sys.argv[2]
        if mode == "cut":
            r = Q(11).search("stacksteal", checkpoint=path, node_limit=40000)
        else:
            r = Q(11).search("stacksteal", checkpoint=path, resume=path)
        from yewpy.runtime.ranks import world
        if world() is None or world().Get_rank() == 0:
            print(r.status, r.value, r.nodes)
    """))
    path = str(tmp_path / "q.ckpt")
    cut = run_ranks(3, [sys.executable, str(script), "cut", path], timeout=300, cwd=tmp_path)
    assert cut.returncode == 0 and cut.stdout.split()[0] == "node_limit", cut.stdout + cut.stderr[-2000:]
    done = run_ranks(2, [sys.executable, str(script), "resume", path], timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["exhausted", "2680", str(NQueens(11).search().nodes)], done.stdout


# -- what cannot be compiled is refused, with its file, line and construct --------------------

HEADER = "import math\nimport yewpy\n\ndef helper(x):\n    return x\n\n"
BASE = """
class Bad(yewpy.{kind}):
    def __init__(self):
        self.n = 3
        self.table = {{1: 2}}
        self.name = "x"

    def root(self):
        return {root}

    def children(self, node):
        {children}

    def {method}(self, node):
        {body}
"""
GOOD_CHILDREN = "if node[0] < self.n:\n            yield (node[0] + 1, node[1])"

REFUSALS = [
    # (kind, root, children, method, body, line of the offence (in BASE + HEADER), words in the message)
    ("Enumeration", "(0, 0)", "self.n = 4\n        yield node", "value", "return 1", 18, "assigns to self.n"),
    ("Enumeration", "(0, 0)", "yield {node[0]: 1}", "value", "return 1", 18, "a dict"),
    ("Enumeration", "(0, 0)", "yield {node[0]}", "value", "return 1", 18, "a set"),
    ("Enumeration", "(0, 0)", GOOD_CHILDREN, "value", "return len('ab')", 22, "a string"),
    ("Enumeration", "(0, 0)", GOOD_CHILDREN, "value", "return (lambda x: x)(1)", 22, "a lambda"),
    ("Enumeration", "(0, 0)", GOOD_CHILDREN, "value", "try:\n            return 1\n        except Exception:"
     "\n            return 0", 22, "a try statement"),
    ("Enumeration", "(0, 0)", "return [node]", "value", "return 1", 17, "not a generator"),
    ("Enumeration", "(0, 0)", GOOD_CHILDREN, "value", "yield 1", 22, "only children() is a generator"),
    ("Enumeration", "(0, 0)", GOOD_CHILDREN, "value", "return helper(1)", 22, "helper, a function"),
    ("Enumeration", "(0, 0)", GOOD_CHILDREN, "value", "return undefined_name", 22, "not defined"),
    ("Enumeration", "(0, 0)", GOOD_CHILDREN, "value", "return self", 22, "self itself"),
    ("Enumeration", "(0, 0)", GOOD_CHILDREN, "value", "return f'{node}'", 22, "f-string"),
    ("Optimisation", "(0, 0)", "for x in node:\n            yield from []", "objective", "return 1", 19,
     "yield from"),
    ("Optimisation", "(0, 0)", GOOD_CHILDREN, "objective", "return self.children", 22,
     "without calling it"),
    ("Decision", "(0, 0)", GOOD_CHILDREN, "objective", "with open('f') as f:\n            return 1", 22,
     "a with statement"),
    ("Optimisation", "(0, 0)", GOOD_CHILDREN, "objective", "return len(self.children(node))", 22,
     "calls self.children()"),
]


def _bad_class(tmp_path, name, kind, root, children, method, body):
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER + BASE.format(kind=kind, root=root, children=children, method=method, body=body))
    sys.path.insert(0, str(tmp_path))
    try:
        module = __import__(name)
    finally:
        sys.path.remove(str(tmp_path))
    return path, module.Bad


@pytest.mark.parametrize("case", range(len(REFUSALS)))
def test_refused_at_the_decoration_with_file_line_and_construct(case, tmp_path):
    kind, root, children, method, body, line, words = REFUSALS[case]
    path, bad = _bad_class(tmp_path, f"bad_static_{case}", kind, root, children, method, body)
    with pytest.raises(yewpy.UsageError) as caught:
        yewpy.jit(bad)
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: Bad."), message
    assert words in message and "\n" not in message, message


COMPILE_REFUSALS = [
    # found when the first search compiles: attribute types, node layout, the compiler's typing
    ("Enumeration", "(0, 0)", "yield (node[0] + self.table[1], 0)", "value", "return 1", None,
     "self.table is dict"),
    ("Enumeration", "[0, 0]", GOOD_CHILDREN, "value", "return 1", None, "non-empty tuple of numbers"),
    ("Enumeration", "(0, 0)", "if node[0] < 3:\n            yield (node[0] + 0.5, node[1])", "value",
     "return 1", None, "where the root has an integer"),
    ("Enumeration", "(0, 0)", "if node[0] < 3:\n            yield (node[0] + 1, node[1], 2)", "value",
     "return 1", 17, "yields a tuple of 3 elements; the root is a tuple of 2"),
    ("Enumeration", "(0, 0)", GOOD_CHILDREN, "value", "return pow(node[0], 2, 5)", 22,
     "cannot be compiled: No implementation of function"),
    ("Enumeration", "(0, 0)", GOOD_CHILDREN, "value", "return self.name", None, "self.name is str"),
    ("Enumeration", "('a', 0)", GOOD_CHILDREN, "value", "return 1", None, "root()[0] is str"),
]


@pytest.mark.parametrize("case", range(len(COMPILE_REFUSALS)))
def test_refused_when_compiling_with_file_line_and_what(case, tmp_path):
    kind, root, children, method, body, line, words = COMPILE_REFUSALS[case]
    path, bad = _bad_class(tmp_path, f"bad_typed_{case}", kind, root, children, method, body)
    with pytest.raises(yewpy.UsageError) as caught:
        yewpy.jit(bad)().search()
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: Bad." if line else str(path)), message
    assert words in message and "\n" not in message and "Traceback" not in message, message
    assert len(message) < 700, message


def test_what_the_kinds_do_not_compile_is_refused():
    class Monoid(yewpy.Enumeration):
        def root(self):
            return (0,)

        def children(self, node):
            yield node

        def combine(self, a, b):
            return a + b

    with pytest.raises(yewpy.UsageError, match="own combine"):
        yewpy.jit(Monoid)
    with pytest.raises(yewpy.UsageError, match="subclasses of yewpy.Enumeration"):
        yewpy.jit(int)
    namespace: dict = {"yewpy": yewpy}
    exec("class Hidden(yewpy.Enumeration):\n def root(self): return (0,)\n def children(self, n):\n"
         "  yield n\n", namespace)
    with pytest.raises(yewpy.UsageError, match="source of this one cannot be read"):
        yewpy.jit(namespace["Hidden"])


# -- the disk cache -------------------------------------------------------------------------------

CACHE_SCRIPT = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {tests!r})
    import yewpy
    from yewpy.compiler import build
    from jit_searches import BitQueens

    class Edited(BitQueens):
        def value(self, node):
            return {value}

    Q = yewpy.jit(Edited)
    result = Q(8).search()
    print(result.value, build.compile_seconds[Q])
""")


def test_a_second_process_uses_the_cache_and_an_edit_recompiles(tmp_path):
    env = dict(os.environ, YEWPY_JIT_CACHE=str(tmp_path / "cache"))
    script = tmp_path / "edited.py"

    def run(value):
        script.write_text(CACHE_SCRIPT.format(tests=str(TESTS), value=value))
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                             timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        count, seconds = out.stdout.split()
        return int(count), float(seconds)

    first = run("1 if node[0] == self.full else 0")
    again = run("1 if node[0] == self.full else 0")
    edited = run("2 if node[0] == self.full else 0")
    assert first[0] == again[0] == 92 and edited[0] == 184
    assert first[1] > 0 and again[1] == 0 and edited[1] > 0
    assert len(list((tmp_path / "cache").iterdir())) == 2        # one entry per version of the class


def test_concurrent_processes_share_one_compilation(tmp_path):
    env = dict(os.environ, YEWPY_JIT_CACHE=str(tmp_path / "cache"))
    script = tmp_path / "edited.py"
    script.write_text(CACHE_SCRIPT.format(tests=str(TESTS), value="3 if node[0] == self.full else 0"))
    procs = [subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(4)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e[-1500:] for _, e in outs]
    seconds = sorted(float(o.split()[1]) for o, _ in outs)
    assert [int(o.split()[0]) for o, _ in outs] == [276] * 4
    assert seconds[:3] == [0.0, 0.0, 0.0] and seconds[3] > 0      # one compiled, three loaded
