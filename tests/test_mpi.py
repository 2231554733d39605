"""Real MPI ranks from pytest: every rank count gives the sequential answer; failures end the job."""

import json
import sys
import textwrap

import pytest

from support import run_ranks, yewpy_cmd

RANKS = [2, 3, 4]


def _json(out):
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1, out.stdout        # rank 0 alone prints
    return json.loads(lines[0])


@pytest.mark.parametrize("ranks", RANKS)
def test_nqueens_exact_on_ranks(ranks):
    data = _json(run_ranks(ranks, [*yewpy_cmd(), "nqueens", "10", "--json"]))
    assert (data["value"], data["nodes"], data["ranks"]) == (724, 35539, ranks)


@pytest.mark.parametrize("ranks", RANKS)
def test_maxclique_and_decision_on_ranks(ranks, instances):
    graph = str(instances / "clique" / "brock200_4.clq")
    data = _json(run_ranks(ranks, [*yewpy_cmd(), "maxclique", graph, "--json"]))
    assert data["objective"] == 17 and len(data["solution"]) == 17
    found = _json(run_ranks(ranks, [*yewpy_cmd(), "maxclique", graph, "--decision", "17", "--json"]))
    assert found["found"] is True and len(found["solution"]) >= 17
    missing = _json(run_ranks(ranks, [*yewpy_cmd(), "maxclique", graph, "--decision", "18", "--json"]))
    assert missing["found"] is False and missing["status"] == "exhausted"


@pytest.mark.parametrize("ranks", RANKS)
def test_python_knapsack_on_ranks(ranks, instances):
    path = str(instances / "knapsack" / "yewpar_kp" / "knapsackTest1.kp")
    data = _json(run_ranks(ranks, [*yewpy_cmd(), "knapsack", path, "--python", "--json",
                                   "--skeleton", "budget", "-b", "200"]))
    assert data["objective"] == 6925


SCRIPT = textwrap.dedent("""
    import os
    import sys
    import yewpy

    class Tree(yewpy.Enumeration):
        zero = ()
        def root(self):
            return (0, 0)
        def children(self, node):
            value, depth = node
            if depth == 4 and value % 7 == 3 and BOOM:
                raise RuntimeError(f"planted failure at {node}")
            if depth < 7:
                for k in range(3):
                    yield (value * 3 + k, depth + 1)
        def value(self, node):                # a histogram of depths, lambdas and all
            return ((node[1], 1),)
        def combine(self, a, b):
            merged = dict(a)
            for depth, count in b:
                merged[depth] = merged.get(depth, 0) + count
            return tuple(sorted(merged.items()))

    BOOM = len(sys.argv) > 1
    result = Tree().search("depthbounded", spawn_depth=2)
    with open(f"result.{os.environ.get('PMI_RANK', '0')}", "w") as out:
        out.write(f"{dict(result.value)} {result.nodes}")
""")


@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
def test_python_defined_monoid_on_ranks(ranks, tmp_path):
    script = tmp_path / "tree.py"
    script.write_text(SCRIPT)
    out = run_ranks(ranks, [sys.executable, str(script)], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    expected = f"{ {d: 3 ** d for d in range(8)} } {sum(3 ** d for d in range(8))}"
    for rank in range(ranks):                       # every rank returns the same merged result
        assert (tmp_path / f"result.{rank}").read_text() == expected


@pytest.mark.parametrize("ranks", [2, 3])
def test_an_exception_on_one_rank_ends_every_rank(ranks, tmp_path):
    script = tmp_path / "tree.py"
    script.write_text(SCRIPT)
    out = run_ranks(ranks, [sys.executable, str(script), "boom"], timeout=60)
    assert out.returncode != 0
    assert "planted failure" in out.stderr and "Traceback" in out.stderr
