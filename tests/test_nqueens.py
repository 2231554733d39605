"""N-queens: exact counts and tree sizes from shared/instances/nqueens, under every coordination."""

import pytest

from support import INSTANCES, number, readme_table, require_shared
from yewpy.apps.nqueens import NQueens

COORDINATIONS = [
    ("seq", {}),
    ("depthbounded", {"spawn_depth": 1}),
    ("depthbounded", {"spawn_depth": 3}),
    ("depthbounded", {"spawn_depth": 2, "pool": "deque"}),
    ("budget", {"backtracks": 1}),
    ("budget", {"backtracks": 50}),
    ("budget", {"backtracks": 7, "spawn_all": True}),
]


def _table():
    require_shared()
    rows = readme_table(INSTANCES / "nqueens" / "README.md")
    return {int(r["n"]): (number(r["solutions"]), number(r["search-tree nodes (this tree, incl. root)"]))
            for r in rows if r["search-tree nodes (this tree, incl. root)"]}


TABLE = _table()


@pytest.mark.parametrize("n", range(1, 13))
def test_counts_and_tree_size(n):
    solutions, nodes = TABLE[n]
    result = NQueens(n).search()
    assert (result.value, result.nodes, result.status) == (solutions, nodes, "exhausted")
    assert sum(result.metrics["nodes"]) == nodes


@pytest.mark.parametrize("coordination,params", COORDINATIONS)
@pytest.mark.parametrize("n", [6, 9])
def test_every_coordination_gives_the_same_count(n, coordination, params):
    result = NQueens(n).search(coordination, **params)
    assert (result.value, result.nodes) == TABLE[n]


@pytest.mark.parametrize("coordination,params", COORDINATIONS)
def test_depth_limit_is_the_same_everywhere(coordination, params):
    seq = NQueens(8).search(max_depth=5)
    other = NQueens(8).search(coordination, max_depth=5, **params)
    assert len(seq.metrics["nodes"]) == 5          # depths 0..4 visited, nothing deeper
    assert (other.value, other.nodes, other.metrics["nodes"]) == (seq.value, seq.nodes, seq.metrics["nodes"])


def test_node_limit_stops_early():
    result = NQueens(12).search(node_limit=1000)
    assert result.status == "node_limit"
    assert result.nodes == 1000
