"""Maximum clique: exact omega and mcs_ref's node counts on DIMACS graphs; decision; oracle."""

import itertools

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import INSTANCES, assert_names_line, number, readme_table, require_shared
from yewpy.apps.maxclique import MaxClique, read_dimacs
from yewpy.errors import InputError

FAST_NODES = 800_000      # the README's instances up to this size solve in a few seconds


def _fast_instances():
    require_shared()
    rows = readme_table(INSTANCES / "clique" / "README.md")
    return [(r["file"], int(r["omega"]), number(r["nodes"])) for r in rows
            if r["nodes"] not in ("-", "") and number(r["nodes"]) <= FAST_NODES]


FAST = _fast_instances()


def test_fast_set_is_not_empty():
    assert len(FAST) >= 25
    assert ("brock200_1.clq", 21, 524_723) in FAST


@pytest.mark.parametrize("name,omega,nodes", FAST, ids=[f[0] for f in FAST])
def test_omega_and_reference_node_count(name, omega, nodes):
    graph = MaxClique.from_file(str(INSTANCES / "clique" / name))
    result = graph.search()
    assert result.objective == omega and result.status == "optimal"
    assert result.metrics["expansions"] == nodes          # the same tree as shared/bench/mcs_ref.c
    assert len(result.solution) == omega and graph.is_clique(result.solution)


COORDINATIONS = [("seq", {}), ("depthbounded", {"spawn_depth": 2}), ("budget", {"backtracks": 50}),
                 ("budget", {"backtracks": 5, "spawn_all": True, "pool": "deque"})]


@pytest.mark.parametrize("coordination,params", COORDINATIONS)
def test_coordinations_agree_on_omega(instances, coordination, params):
    graph = MaxClique.from_file(str(instances / "clique" / "brock200_4.clq"))
    result = graph.search(coordination, **params)
    assert result.objective == 17 and graph.is_clique(result.solution)


@pytest.mark.parametrize("coordination,params", COORDINATIONS)
def test_decision_witness_and_refusal(instances, coordination, params):
    graph = MaxClique.from_file(str(instances / "clique" / "brock200_4.clq"))
    yes = graph.search(coordination, decision=17, **params)
    assert yes.found and yes.status == "found"
    assert len(yes.solution) >= 17 and graph.is_clique(yes.solution)
    no = graph.search(coordination, decision=18, **params)
    assert not no.found and no.status == "exhausted" and no.solution is None


def test_without_prune_level_same_omega_more_nodes(instances):
    graph = MaxClique.from_file(str(instances / "clique" / "keller4.clq"))
    with_level = graph.search()
    without = graph.search(prune_level=False)
    assert with_level.objective == without.objective == 11
    assert without.nodes >= with_level.nodes


def test_gzip_input(instances):
    n, edges = read_dimacs(str(instances / "clique" / "p_hat700-2.clq.gz"))
    assert (n, len(edges)) == (700, 121728)


def _brute_force_omega(n, edges):
    adj = {(u, v) for u, v in edges} | {(v, u) for u, v in edges}
    best = 0
    for k in range(1, n + 1):
        if any(all((a, b) in adj for a, b in itertools.combinations(c, 2))
               for c in itertools.combinations(range(n), k)):
            best = k
        else:
            break
    return best


graphs = st.integers(1, 11).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=n * (n - 1) // 2)))


@settings(max_examples=60, deadline=None)
@given(graphs, st.sampled_from(COORDINATIONS), st.booleans())
def test_random_graphs_against_brute_force(graph, coordination, prune_level):
    n, edges = graph
    omega = _brute_force_omega(n, [(u, v) for u, v in edges if u != v])
    problem = MaxClique(n, edges)
    result = problem.search(coordination[0], prune_level=prune_level, **coordination[1])
    assert result.objective == omega
    assert len(result.solution) == omega and problem.is_clique(result.solution)
    assert problem.search(decision=omega).found
    assert not problem.search(decision=omega + 1).found


def test_networkx_graph_keeps_its_labels():
    g = nx.Graph([("a", "b"), ("b", "c"), ("a", "c"), ("c", "d")])
    result = MaxClique.from_networkx(g).search()
    assert result.objective == 3 and result.solution == ["a", "b", "c"]


@pytest.mark.parametrize("text,line", [
    ("p edge 3 1\ne 1 9\n", 2),
    ("e 1 2\n", 1),
    ("p edge 3 1\ne 1\n", 2),
    ("p edge x 1\n", 1),
    ("c hi\np edge 3 2\ne 1 2\nq 1 2\n", 4),
    ("c cut short\np edge 3 3\ne 1 2\ne 2 3\n", 2),            # the p line's count is checked
    ("p edge ²3 1\ne 1 2\n", 1),                                # a digit int() cannot read
    ("p edge 3 1\ne 1 ³\n", 2),
])
def test_malformed_dimacs_names_the_line(tmp_path, text, line):
    assert_names_line(read_dimacs, tmp_path / "bad.clq", text, line)


def test_a_truncated_file_is_refused_not_solved(tmp_path, instances):
    lines = (instances / "clique" / "brock200_4.clq").read_text().splitlines(keepends=True)
    cut = tmp_path / "cut.clq"
    cut.write_text("".join(lines[:len(lines) // 2]))
    with pytest.raises(InputError, match="the 'p' line says 13089 edges but the file has"):
        read_dimacs(str(cut))


def test_repeated_edges_counted_either_way_and_latin1_comments_are_read(tmp_path):
    both = tmp_path / "both.clq"
    both.write_bytes(b"c caf\xe9\np edge 3 4\ne 1 2\ne 2 1\ne 2 3\ne 3 2\n")   # m counts lines
    assert read_dimacs(str(both))[0] == 3
    distinct = tmp_path / "distinct.clq"
    distinct.write_text("p edge 3 2\ne 1 2\ne 2 1\ne 2 3\n")                  # m counts edges
    assert read_dimacs(str(distinct))[0] == 3


def test_a_corrupted_gzip_stream_is_an_input_error(tmp_path, instances):
    """zlib.error, a bad CRC or garbage text: an InputError every time, never a traceback."""
    original = (instances / "clique" / "MANN_a45.clq.gz").read_bytes()
    for where in (12, 20, 400, len(original) // 2, len(original) - 6):
        data = bytearray(original)
        data[where] ^= 0xFF
        bad = tmp_path / f"bad{where}.clq.gz"
        bad.write_bytes(bytes(data))
        with pytest.raises(InputError):
            read_dimacs(str(bad))


def test_a_gzip_bomb_is_refused_at_the_input_bound_not_read_to_the_end(tmp_path, monkeypatch):
    """A few kilobytes of .gz can decompress to terabytes of edges (or one endless line): reading
    stops at the input bound, 1 GiB, lowered here; under the real bound the same file is read."""
    import gzip

    import yewpy.apps.input_files as input_files

    bomb = tmp_path / "bomb.clq.gz"
    bomb.write_bytes(gzip.compress(b"p edge 3 100000\n" + b"e 1 2\n" * 100_000))
    endless = tmp_path / "endless.clq.gz"
    endless.write_bytes(gzip.compress(b"c " + b"x" * 200_000))
    plain = tmp_path / "plain.clq"
    plain.write_bytes(gzip.decompress(bomb.read_bytes()))
    monkeypatch.setattr(input_files, "MAX_INPUT_BYTES", 60_000)
    for path, how in ((bomb, " once decompressed"), (endless, " once decompressed"), (plain, "")):
        with pytest.raises(InputError, match=f"^{path}: cannot read: more than 60,000 bytes{how}$"):
            read_dimacs(str(path))
    monkeypatch.undo()
    assert read_dimacs(str(bomb))[0] == read_dimacs(str(plain))[0] == 3


def test_memory_follows_the_edges_not_the_p_line(tmp_path):
    """16 bytes that claimed 100,000 vertices took 2 x 9.3 GiB; vertices without an edge are in
    no clique of two, so only the others are searched, with the same answers."""
    empty = tmp_path / "empty.clq"
    empty.write_text("p edge 100000 0\n")
    result = MaxClique.from_file(str(empty)).search()
    assert (result.objective, result.solution) == (1, [1])
    sparse = tmp_path / "sparse.clq"
    sparse.write_text("p edge 1000000000000 3\ne 5 999999999999\ne 5 7\ne 7 999999999999\n")
    graph = MaxClique.from_file(str(sparse))
    assert graph.size == 3 and graph.search().solution == [5, 7, 999999999999]
    assert graph.search(decision=4).found is False and graph.is_clique([5, 7]) and not graph.is_clique([1, 5])
    lonely = MaxClique(5, [(1, 3)])
    assert lonely.search().solution == [1, 3] and lonely.search(decision=2).found

