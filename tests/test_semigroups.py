"""Numerical semigroups: n(g) from shared/instances/semigroups, every coordination, a brute-force oracle."""

import doctest
import itertools
import json
import pickle
import re
import subprocess
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import yewpy.apps.semigroups as semigroups_module
from support import INSTANCES, require_shared, run_ranks, yewpy_cmd
from yewpy._engine import Engine
from yewpy.apps.semigroups import MAX_GENUS, Semigroups
from yewpy.tools.cli import main

COORDINATIONS = [
    ("seq", {}),
    ("stacksteal", {}),
    ("stacksteal", {"chunked": True}),
    ("depthbounded", {"spawn_depth": 2}),
    ("depthbounded", {"spawn_depth": 8, "pool": "deque"}),
    ("budget", {"backtracks": 100}),
    ("budget", {"backtracks": 20, "spawn_all": True, "pool": "deque"}),
]


def _readme() -> tuple[list[int], dict[int, int]]:
    """n(0..70) from the machine-readable block, checked against the markdown table; and the
    tree sizes (nodes to genus G) quoted in the text."""
    require_shared()
    text = (INSTANCES / "semigroups" / "README.md").read_text()
    block = re.search(r"Machine-readable \(g: n\(g\)\), g = 0\.\.(\d+):\n```\n([\d ]+)\n```", text)
    counts = [int(w) for w in block.group(2).split()]
    assert len(counts) == int(block.group(1)) + 1
    table = {}
    for line in text.splitlines():
        if re.fullmatch(r"\|( *\d+ *\|)+( *\|)*", line.replace(" | |", " |")):
            cells = [c.strip() for c in line.strip("|").split("|") if c.strip()]
            table.update({int(g): int(n) for g, n in zip(cells[::2], cells[1::2])})
    assert table == dict(enumerate(counts))
    sizes = {int(g): int(n.replace(",", "")) for g, n in re.findall(r"G=(\d+): ([\d,]+)", text)}
    assert sizes
    return counts, sizes


N, TREE_SIZES = _readme()


@cache
def brute_force(g: int) -> frozenset:
    """Every numerical semigroup of genus g as its set of gaps, by trying every g-subset of
    [1, 2g) (the Frobenius number of a genus-g semigroup is below 2g)."""
    found = set()
    for gaps in itertools.combinations(range(1, 2 * g), g):
        gapset = set(gaps)
        elements = [x for x in range(1, 2 * g) if x not in gapset]
        if all(a + b not in gapset for a, b in itertools.combinations_with_replacement(elements, 2)):
            found.add(gaps)
    return frozenset(found)


def genus_nodes(core, g: int) -> list:
    """The dumped nodes of depth g >= 1, collected by expanding the tree level by level on an
    engine that spawns every node of depth <= g instead of descending into it."""
    engine = Engine(core, max_depth=g + 2, spawn_depth=g)
    level = [None]
    for depth in range(g):
        tasks = []
        for task in level:
            engine.start_root() if task is None else engine.start(task)
            engine.run()
            tasks.extend(engine.spawned)
            engine.spawned = []
        assert all(d == depth + 1 for d, _ in tasks)
        level = tasks
    return [node for _, node in level]


@pytest.mark.parametrize("g", range(0, 26))
def test_counts_match_the_readme(g):
    result = Semigroups(g).search()
    assert (result.value, result.status) == (N[g], "exhausted")
    assert result.metrics["by_genus"] == N[: g + 1]
    assert result.metrics["nodes"] == N[: g + 1]          # the engine's per-depth count agrees
    assert result.nodes == sum(N[: g + 1])
    if g in TREE_SIZES:
        assert result.nodes == TREE_SIZES[g]


def test_genus_28_sequential():
    result = Semigroups(28).search()
    assert result.value == N[28] and result.metrics["by_genus"] == N[:29]


@pytest.mark.parametrize("coordination,params", COORDINATIONS)
def test_every_coordination_gives_every_count(coordination, params):
    result = Semigroups(20).search(coordination, **params)
    assert (result.value, result.metrics["by_genus"]) == (N[20], N[:21])
    assert result.nodes == TREE_SIZES[20] and result.metrics["nodes"] == N[:21]


@pytest.mark.parametrize("coordination,params", COORDINATIONS)
def test_depth_limit_cuts_the_tree_everywhere(coordination, params):
    result = Semigroups(15).search(coordination, max_depth=11, **params)
    assert result.metrics["by_genus"] == N[:11] + [0] * 5
    assert result.value == 0 and result.nodes == sum(N[:11])


@pytest.mark.parametrize("g", range(1, 9))
def test_the_tree_holds_each_semigroup_once(g):
    core = Semigroups(g).core()
    nodes = genus_nodes(core, g)
    assert all(len(node) == 6 + core.size for node in nodes)     # compact tasks: 6 + 3g + 3 bytes
    decoded = [core.semigroup(node) for node in nodes]
    gapsets = [gaps for gaps, *_ in decoded]
    assert len(gapsets) == len(set(gapsets)) == N[g]
    assert set(gapsets) == brute_force(g)
    for gaps, conductor, multiplicity, genus in decoded:
        assert genus == len(gaps) == g
        assert conductor == max(gaps) + 1
        assert multiplicity == min(x for x in range(1, 2 * g + 2) if x not in gaps)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 9), st.sampled_from(COORDINATIONS))
def test_random_genus_and_coordination_against_brute_force(g, coordination):
    name, params = coordination
    result = Semigroups(g).search(name, **params)
    assert result.metrics["by_genus"] == [len(brute_force(k)) if k else 1 for k in range(g + 1)]


@given(st.lists(st.integers(0, 10**12), max_size=6), st.lists(st.integers(0, 10**12), max_size=6))
def test_combine_adds_per_genus(a, b):
    core = Semigroups(3).core()
    total = core.combine(tuple(a), tuple(b))
    assert len(total) == max(len(a), len(b))
    assert sum(total) == sum(a) + sum(b)
    assert core.combine(core.zero, tuple(a)) == tuple(a) == core.combine(tuple(a), core.zero)


def test_core_pickles_and_rejects_a_foreign_task():
    core = Semigroups(12).core()
    again = pickle.loads(pickle.dumps(core))
    assert again.genus == 12 and again.size == core.size
    engine = Engine(Semigroups(13).core())
    with pytest.raises(ValueError, match="wrong size"):
        engine.start((2, genus_nodes(core, 2)[0]))


def test_node_limit_stops_early(capsys):
    result = Semigroups(25).search(node_limit=1000)
    assert result.status == "node_limit" and result.nodes == 1000
    assert sum(result.metrics["by_genus"]) == 1000
    assert main(["semigroups", "-g", "25", "--node-limit", "1000"]) == 0
    assert "(partial: stopped by node_limit)" in capsys.readouterr().out


@pytest.mark.parametrize("genus", [-1, MAX_GENUS + 1])
def test_bad_genus(genus, capsys):
    with pytest.raises(ValueError):
        Semigroups(genus)
    assert main(["semigroups", "-g", str(genus)]) == 2
    assert "0 <= genus" in capsys.readouterr().err


def test_doctest():
    assert doctest.testmod(semigroups_module).failed == 0


def test_cli_json():
    out = subprocess.run([*yewpy_cmd(), "semigroups", "-g", "16", "--json"], capture_output=True,
                         text=True, check=True)
    data = json.loads(out.stdout)
    assert (data["app"], data["value"], data["metrics"]["by_genus"]) == ("semigroups", N[16], N[:17])
    text = subprocess.run([*yewpy_cmd(), "semigroups", "--genus", "5"], capture_output=True, text=True,
                          check=True).stdout.splitlines()
    assert text[:7] == ["Results Table:", "0: 1", "1: 1", "2: 2", "3: 4", "4: 7", "5: 12"]


@pytest.mark.parametrize("skeleton", [["--skeleton", "stacksteal"], ["--skeleton", "budget", "-b", "50"]])
def test_mpi_two_ranks(skeleton):
    out = run_ranks(2, [*yewpy_cmd(), "semigroups", "-g", "22", *skeleton, "--json"])
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["ranks"] == 2 and data["status"] == "exhausted"
    assert (data["value"], data["metrics"]["by_genus"]) == (N[22], N[:23])
    assert data["nodes"] == sum(N[:23]) and data["metrics"]["nodes"] == N[:23]
    per_rank = data["metrics"]["per_rank"]           # whoever searched what, nothing twice
    assert len(per_rank) == 2 and sum(rank["nodes"] for rank in per_rank) == data["nodes"]
