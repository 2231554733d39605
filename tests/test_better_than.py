"""``--better-than V`` (the search's ``initial_bound``): below the optimum the same optimum, at or
above it no solution and V, against independent oracles; under a fixed incumbent the tree is the
same in every coordination and on 2 ranks; the estimate is of that tree; bad uses exit 2."""

import itertools
import json
import random
import subprocess

import networkx as nx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_knapsack import _brute_force

import yewpy
from support import INSTANCES, readme_table, require_shared, run_ranks, yewpy_cmd
from yewpy.apps.knapsack import Knapsack, read_knapsack
from yewpy.apps.knapsack_python import KnapsackPy
from yewpy.apps.maxclique import MaxClique
from yewpy.apps.tsp import Tsp
from yewpy.errors import UsageError


def run(*args, timeout=120):
    return subprocess.run([*yewpy_cmd(), *map(str, args)], capture_output=True, text=True, timeout=timeout)


def _omega(n, edges):
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(edges)
    return max((len(c) for c in nx.find_cliques(graph)), default=0)


@settings(max_examples=40, deadline=None)
@given(st.integers(4, 18), st.floats(0.2, 0.9), st.integers(0, 10**6), st.integers(-2, 1))
def test_random_graphs_against_networkx(n, density, seed, offset):
    rng = random.Random(seed)
    edges = [(u, v) for u, v in itertools.combinations(range(n), 2) if rng.random() < density]
    omega = _omega(n, edges)
    bound = omega + offset
    result = MaxClique(n, edges).search(initial_bound=bound)
    if bound < omega:
        assert result.objective == omega and len(result.solution) == omega
        assert MaxClique(n, edges).is_clique(result.solution)
    else:
        assert result.solution is None and result.objective == bound


def _omegas():
    require_shared()
    rows = readme_table(INSTANCES / "clique" / "README.md")
    return {r["file"]: int(r["omega"]) for r in rows}


@pytest.mark.parametrize("name", ["brock200_1.clq", "brock200_4.clq", "keller4.clq", "p_hat300-1.clq",
                                  "C125.9.clq"])
def test_dimacs_optimum_proved_with_fewer_nodes(name):
    """At omega - 1 the search finds omega; at omega it proves nothing is larger; each higher start
    prunes at least what a lower one does."""
    omega = _omegas()[name]
    graph = MaxClique.from_file(str(INSTANCES / "clique" / name))
    plain = graph.search()
    below = graph.search(initial_bound=omega - 1)
    at = graph.search(initial_bound=omega)
    assert plain.objective == below.objective == omega and len(below.solution) == omega
    assert at.solution is None and at.objective == omega and at.status == "optimal"
    assert at.nodes <= below.nodes <= plain.nodes
    assert at.nodes < plain.nodes


@pytest.mark.parametrize("coordination,params", [("depthbounded", {"spawn_depth": 2}),
                                                 ("stacksteal", {}), ("budget", {"backtracks": 200}),
                                                 ("ordered", {"spawn_depth": 1})])
def test_a_fixed_incumbent_fixes_the_tree_in_every_coordination(instances, coordination, params):
    """Nothing beats omega, so which nodes are pruned depends on no order: every coordination
    visits exactly the sequential tree."""
    graph = MaxClique.from_file(str(instances / "clique" / "brock200_1.clq"))
    seq = graph.search(initial_bound=21)
    other = graph.search(coordination, initial_bound=21, **params)
    assert other.solution is None and other.objective == 21
    assert (other.nodes, other.metrics["expansions"]) == (seq.nodes, seq.metrics["expansions"])


@pytest.mark.parametrize("skeleton", [["--skeleton", "stacksteal"],
                                      ["--skeleton", "depthbounded", "-d", "2"]])
def test_two_ranks_prove_the_same_tree(instances, skeleton):
    path = instances / "clique" / "brock200_1.clq"
    seq = json.loads(run("maxclique", path, "--better-than", 21, "--json", "--quiet").stdout)
    out = run_ranks(2, [*yewpy_cmd(), "maxclique", str(path), "--better-than", "21", "--json", "--quiet",
                        *skeleton])
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert (data["ranks"], data["objective"], data["solution"], data["status"]) == (2, 21, None, "optimal")
    assert data["nodes"] == seq["nodes"] and data["metrics"]["expansions"] == seq["metrics"]["expansions"]
    text = run_ranks(2, [*yewpy_cmd(), "maxclique", str(path), "--better-than", "20", "--quiet",
                         *skeleton]).stdout
    assert "MaxClique Size = 21" in text


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 40), st.integers(1, 40)), min_size=1, max_size=11),
       st.integers(1, 120), st.integers(-3, 2), st.booleans())
@example([(1, 2)], 1, -1, False).via("nothing fits: the empty packing beats a negative bound")
@example([(1, 2)], 1, -1, True).via("the same in Python")
def test_random_knapsacks_against_brute_force(pairs, capacity, offset, python):
    profits, weights = [p for p, _ in pairs], [w for _, w in pairs]
    best = _brute_force(profits, weights, capacity)
    problem = KnapsackPy(profits, weights, capacity) if python else Knapsack(profits, weights, capacity)
    bound = best + offset
    result = problem.search(initial_bound=bound)
    if bound < best:
        assert result.objective == best
        assert sum(profits[i] for i in result.solution) == best
        assert sum(weights[i] for i in result.solution) <= capacity
    else:
        assert result.solution is None and result.objective == bound


@pytest.mark.parametrize("extra", [[], ["--python"]])
def test_knapsack_cli(instances, extra):
    path = instances / "knapsack" / "yewpar_kp" / "knapsackTest1.kp"
    assert read_knapsack(str(path)).optimum == 6925
    found = run("knapsack", path, "--better-than", 6924, "--quiet", *extra)
    assert found.returncode == 0, found.stderr
    assert "Final Profit: 6925" in found.stdout and "Expected Result: true" in found.stdout
    proved = run("knapsack", path, "--better-than", 6925, "--quiet", *extra)
    assert proved.returncode == 0, proved.stderr
    assert "No packing with profit above 6925 (--better-than)" in proved.stdout
    assert "Final Profit" not in proved.stdout


def _tsp_optimum(name):
    require_shared()
    rows = readme_table(INSTANCES / "tsp" / "README.md")
    return {r["file"]: int(r["optimum"]) for r in rows}[name]


@pytest.mark.parametrize("name", ["burma14.tsp", "gr17.tsp", "ulysses16.tsp"])
def test_tsp_shorter_than(name):
    """Minimisation: better is shorter. At the optimum no tour is shorter; one above it finds the
    optimum whether or not the first tour already beats it."""
    optimum = _tsp_optimum(name)
    problem = Tsp.from_file(str(INSTANCES / "tsp" / name))
    at = problem.search(initial_bound=optimum)
    assert at.solution is None and at.objective == optimum
    for bound in (optimum + 1, problem.tour_length + 1, 10**9):
        result = Tsp.from_file(str(INSTANCES / "tsp" / name)).search(initial_bound=bound)
        assert result.objective == optimum and problem.length(result.solution) == optimum
    text = run("tsp", INSTANCES / "tsp" / name, "--better-than", optimum, "--quiet").stdout
    assert f"No tour shorter than {optimum} (--better-than)" in text


def test_estimate_is_of_the_tree_under_the_value(instances):
    """A short search that finishes is exact: the nodes of the run under the same value (through
    ``search(estimate=)``, what ``yewpy.estimate`` calls); one that does not says which incumbent
    its tree is under."""
    graph = MaxClique.from_file(str(instances / "clique" / "brock200_4.clq"))
    proved = graph.search(initial_bound=17)
    report = graph.search(estimate=30, initial_bound=17).metrics["estimate"]
    assert report["exact"] and report["nodes"] == proved.nodes
    text = run("maxclique", instances / "clique" / "brock400_1.clq", "--better-than", 27, "--estimate", 0.5)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("estimated nodes under incumbent 27 = ")
    assert "note: counted under the 27 you gave (--better-than): if nothing is better" in text.stdout


@pytest.mark.parametrize("args,message", [
    (["maxclique", "{c}/brock200_2.clq", "--better-than", "nan"], "--better-than: not a finite number"),
    (["maxclique", "{c}/brock200_2.clq", "--better-than", "inf"], "--better-than: not a finite number"),
    (["maxclique", "{c}/brock200_2.clq", "--better-than", "twelve"], "--better-than: not a number"),
    (["maxclique", "{c}/brock200_2.clq", "--decision", "5", "--better-than", "3"],
     "yewpy: error: an initial bound (--better-than) applies to optimisation searches, not to decision"),
    (["nqueens", "8", "--better-than", "3"], "unrecognized arguments: --better-than"),
    (["uts", "--tree", "T1", "--better-than", "3"], "unrecognized arguments: --better-than"),
])
def test_bad_uses_are_one_line_errors(instances, args, message):
    out = run(*(a.format(c=instances / "clique") for a in args))
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr


def test_enumeration_refuses_an_initial_bound():
    class Count(yewpy.Enumeration):
        def root(self):
            return 0

        def children(self, node):
            return [node + 1] if node < 3 else []

    with pytest.raises(UsageError, match="not to enumeration"):
        Count().search(initial_bound=3)
