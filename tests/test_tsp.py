"""TSP: TSPLIB reader (every file, every format, malformed lines), optima up to 29 cities, every
coordination, the bound's admissibility and the optimum against brute force, CLI and 2 MPI ranks."""

import itertools
import json
import math
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import INSTANCES, assert_names_line, readme_table, require_shared, run_ranks, yewpy_cmd
from yewpy.apps._tsp import MAX_CITIES, TspCore, held_karp, local_search_tour
from yewpy.apps.tsp import Tsp
from yewpy.apps.tsplib import read_tour, read_tsplib, tour_length
from yewpy.errors import InputError, UsageError


def _table():
    require_shared()
    return {r["file"]: (int(r["n"]), r["EDGE_WEIGHT_TYPE / format"], int(r["optimum"]))
            for r in readme_table(INSTANCES / "tsp" / "README.md")}


TABLE = _table()
SMALL = sorted((name for name, (n, _, _) in TABLE.items() if n <= 29), key=lambda f: TABLE[f][0])
TOURS = sorted(p.name for p in (INSTANCES / "tsp").glob("*.opt.tour"))


def test_table_is_parsed():
    assert len(TABLE) == 22 and TABLE["burma14.tsp"] == (14, "GEO", 3323)
    assert len(SMALL) == 9 and len(TOURS) == 14


@pytest.mark.parametrize("name", sorted(TABLE))
def test_reader_dimension_type_and_symmetry(name):
    n, kind, _ = TABLE[name]
    inst = read_tsplib(str(INSTANCES / "tsp" / name))
    assert inst.dimension == n == len(inst.matrix)
    weight_type, _, fmt = kind.partition(" / ")
    assert inst.edge_weight_type == weight_type
    assert all(inst.matrix[i][j] == inst.matrix[j][i] and inst.matrix[i][i] == 0
               for i in range(n) for j in range(n))


@pytest.mark.parametrize("name", TOURS)
def test_optimal_tour_files_have_the_optimum_length(name):
    inst = read_tsplib(str(INSTANCES / "tsp" / name.replace(".opt.tour", ".tsp")))
    tour = read_tour(str(INSTANCES / "tsp" / name))
    assert sorted(tour) == list(range(1, inst.dimension + 1))
    assert tour_length(inst.matrix, [c - 1 for c in tour]) == TABLE[name.replace(".opt.tour", ".tsp")][2]


def _check(problem, result, optimum):
    assert result.status == "optimal" and result.objective == optimum
    assert sorted(result.solution) == sorted(problem.labels) and problem.length(result.solution) == optimum


@pytest.mark.parametrize("incumbent", ["local-search", "nearest"])
@pytest.mark.parametrize("name", SMALL)
def test_optimum_up_to_29_cities(name, incumbent):
    problem = Tsp.from_file(str(INSTANCES / "tsp" / name), incumbent=incumbent)
    result = problem.search()
    _check(problem, result, TABLE[name][2])
    assert problem.root_bound <= TABLE[name][2] <= problem.tour_length
    assert result.metrics["root_bound"] == problem.root_bound


@pytest.mark.parametrize("name", ["burma14.tsp", "gr17.tsp", "gr21.tsp"])
def test_plain_spanning_tree_bound_same_optimum_more_nodes(name):
    strong = Tsp.from_file(str(INSTANCES / "tsp" / name), incumbent="nearest")
    weak = Tsp.from_file(str(INSTANCES / "tsp" / name), incumbent="nearest", bound="mst")
    a, b = strong.search(), weak.search()
    _check(weak, b, TABLE[name][2])
    assert weak.root_bound < strong.root_bound and b.nodes > a.nodes


COORDINATIONS = [("seq", {}), ("stacksteal", {}), ("stacksteal", {"chunked": True}),
                 ("depthbounded", {"spawn_depth": 2}), ("budget", {"backtracks": 100}),
                 ("budget", {"backtracks": 20, "spawn_all": True, "pool": "deque"}),
                 ("ordered", {"spawn_depth": 1})]
CASES = [("burma14.tsp", "held-karp"), ("burma14.tsp", "mst"), ("ulysses16.tsp", "held-karp")]


@pytest.fixture(scope="module")
def problems():
    return {(name, bound): Tsp.from_file(str(INSTANCES / "tsp" / name), bound=bound, incumbent="nearest")
            for name, bound in CASES}


@pytest.mark.parametrize("coordination,params", COORDINATIONS)
@pytest.mark.parametrize("name,bound", CASES)
def test_coordinations_find_the_optimum(problems, name, bound, coordination, params):
    problem = problems[(name, bound)]
    result = problem.search(coordination, **params)
    _check(problem, result, TABLE[name][2])
    assert result.nodes > 100              # a real tree: the greedy seed is far from optimal


def test_ordered_is_replicable(problems):
    problem = problems[("ulysses16.tsp", "held-karp")]
    runs = [problem.search("ordered", spawn_depth=2) for _ in range(2)]
    assert runs[0].nodes == runs[1].nodes and runs[0].solution == runs[1].solution


def test_prune_level_is_refused():
    with pytest.raises(UsageError, match="prune_level"):
        Tsp([[0, 1], [1, 0]]).search(prune_level=True)


def test_more_than_64_cities_is_refused():
    inst = read_tsplib(str(INSTANCES / "tsp" / "st70.tsp"))
    with pytest.raises(UsageError, match=f"at most {MAX_CITIES}"):
        Tsp(inst.matrix, name=inst.name)


def test_time_limit_keeps_the_best_tour():
    problem = Tsp.from_file(str(INSTANCES / "tsp" / "gr48.tsp"))
    result = problem.search(time_limit=0.2)
    assert result.status == "time_limit" and result.objective == problem.length(result.solution) >= 5046


# -- random instances against brute force ---------------------------------------------------------

def _matrix(n, weights):
    m = [[0] * n for _ in range(n)]
    it = iter(weights)
    for i in range(n):
        for j in range(i + 1, n):
            m[i][j] = m[j][i] = next(it)
    return m


def _brute_force(m):
    n = len(m)
    if n == 1:
        return 0
    return min(tour_length(m, (0, *p)) for p in itertools.permutations(range(1, n)))


instances = st.integers(1, 8).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.integers(0, 50), min_size=n * (n - 1) // 2, max_size=n * (n - 1) // 2)))


@settings(max_examples=60, deadline=None)
@given(instances, st.sampled_from(COORDINATIONS), st.sampled_from(["held-karp", "mst"]),
       st.sampled_from(["local-search", "nearest"]))
def test_random_instances_against_brute_force(instance, coordination, bound, incumbent):
    m = _matrix(*instance)
    best = _brute_force(m)
    problem = Tsp(m, bound=bound, incumbent=incumbent)
    assert problem.root_bound <= best <= problem.tour_length
    assert tour_length(m, problem.tour) == problem.tour_length
    result = problem.search(coordination[0], **coordination[1])
    assert result.objective == best and tour_length(m, result.solution) == best
    assert sorted(result.solution) == list(range(len(m))) and result.solution[0] == 0


@settings(max_examples=150, deadline=None)
@given(instances, st.randoms(use_true_random=False), st.sampled_from(["held-karp", "random", "mst"]))
def test_bound_never_exceeds_the_best_completion(instance, rnd, penalties):
    """The searched completions of a path end at a city >= path[1] (one direction per tour).
    Any penalties give a valid bound: the optimised ones, random ones, or none."""
    n, weights = instance
    m = _matrix(n, weights)
    flat = [x for row in m for x in row]
    pi = None
    if penalties == "held-karp":
        pi, root, _ = held_karp(flat, n, float(local_search_tour(flat, n)[1]))
        assert root <= _brute_force(m) + 1e-6
        assert TspCore(flat, n, pi).node_bound([0]) == (math.ceil(root - 1e-6) if n > 2 else root)
    elif penalties == "random":
        pi = [rnd.uniform(-30, 30) for _ in range(n)]
    core = TspCore(flat, n, pi)
    others = list(range(1, n))
    rnd.shuffle(others)
    path = [0, *others[:rnd.randint(0, n - 1)]]
    done = tour_length(m, path) - (m[path[-1]][0] if len(path) > 1 else 0)
    if len(path) == n:
        best = tour_length(m, path)
    else:
        rest = [c for c in range(n) if c not in path]
        ends = [done + tour_length(m, [path[-1], *p, 0]) - m[0][path[-1]]
                for p in itertools.permutations(rest) if len(path) == 1 or p[-1] >= path[1]]
        best = min(ends, default=math.inf)
    assert core.node_bound(path) <= best


def test_tiny_instances():
    assert Tsp([[0]]).search().objective == 0
    two = Tsp([[0, 5], [5, 0]]).search()
    assert (two.objective, two.solution) == (10, [0, 1])


# -- the reader -------------------------------------------------------------------------------------

EXPLICIT = [[0, 3, 5, 9], [3, 0, 4, 7], [5, 4, 0, 2], [9, 7, 2, 0]]


def _layout(fmt, m):
    n = len(m)
    cells = {"FULL_MATRIX": [(i, j) for i in range(n) for j in range(n)],
             "UPPER_ROW": [(i, j) for i in range(n) for j in range(i + 1, n)],
             "LOWER_ROW": [(i, j) for i in range(n) for j in range(i)],
             "UPPER_DIAG_ROW": [(i, j) for i in range(n) for j in range(i, n)],
             "LOWER_DIAG_ROW": [(i, j) for i in range(n) for j in range(i + 1)]}
    cells.update({"LOWER_COL": cells["UPPER_ROW"], "UPPER_COL": cells["LOWER_ROW"],
                  "LOWER_DIAG_COL": cells["UPPER_DIAG_ROW"], "UPPER_DIAG_COL": cells["LOWER_DIAG_ROW"]})
    values = [str(m[i][j]) for i, j in cells[fmt]]
    return "\n".join(" ".join(values[k:k + 3]) for k in range(0, len(values), 3))   # odd line breaks


@pytest.mark.parametrize("fmt", ["FULL_MATRIX", "UPPER_ROW", "LOWER_ROW", "UPPER_DIAG_ROW", "LOWER_DIAG_ROW",
                                 "UPPER_COL", "LOWER_COL", "UPPER_DIAG_COL", "LOWER_DIAG_COL"])
def test_explicit_formats(tmp_path, fmt):
    path = tmp_path / "x.tsp"
    path.write_text(f"NAME : x\nTYPE: TSP\nDIMENSION :4\nEDGE_WEIGHT_TYPE: EXPLICIT\n"
                    f"EDGE_WEIGHT_FORMAT: {fmt}\nEDGE_WEIGHT_SECTION\n{_layout(fmt, EXPLICIT)}\nEOF\n")
    assert read_tsplib(str(path)).matrix == EXPLICIT
    assert Tsp.from_file(str(path)).search().objective == _brute_force(EXPLICIT) == 3 + 7 + 2 + 5


@pytest.mark.parametrize("kind,expected", [("EUC_2D", 1), ("CEIL_2D", 2), ("ATT", 1)])
def test_coordinate_rules(tmp_path, kind, expected):
    path = tmp_path / "c.tsp"
    path.write_text(f"NAME: c\nDIMENSION: 2\nEDGE_WEIGHT_TYPE: {kind}\nNODE_COORD_SECTION\n"
                    "1 0 0\n2 1.0 1.0\nEOF\n")
    assert read_tsplib(str(path)).matrix == [[0, expected], [expected, 0]]


HEAD = "NAME: bad\nTYPE: TSP\nDIMENSION: 3\n"
COORDS = HEAD + "EDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n"
MATRIX = HEAD + "EDGE_WEIGHT_TYPE: EXPLICIT\nEDGE_WEIGHT_FORMAT: {}\nEDGE_WEIGHT_SECTION\n"


@pytest.mark.parametrize("text,line", [
    (COORDS + "1 0 0\n2 3 x\n3 1 1\nEOF\n", 7),                    # not a number
    (COORDS + "1 0 0\n2 3\n3 1 1\n", 7),                           # missing coordinate
    (COORDS + "1 0 0\n1 3 4\n3 1 1\n", 7),                         # repeated city
    (COORDS + "1 0 0\n2 3 4\n", 7),                                # too few cities
    (HEAD + "EDGE_WEIGHT_TYPE: MAN_3D\nNODE_COORD_SECTION\n1 0 0\n2 1 1\n3 2 2\n", 4),
    ("NAME: bad\nTYPE: ATSP\nDIMENSION: 3\n", 2),
    ("NAME: bad\nDIMENSION: three\n", 2),
    ("NAME: bad\nNODE_COORD_SECTION\n1 0 0\n", 2),                 # data before DIMENSION
    (HEAD + "COLOUR: red\n", 4),                                   # unknown keyword
    (MATRIX.format("UPPER_ROW") + "1 2\n", 7),                     # 2 of 3 weights
    (MATRIX.format("UPPER_ROW") + "1 2\n3 4\n", 8),                # one weight too many
    (MATRIX.format("UPPER_ROW") + "1 2.5 3\n", 7),                 # not an integer
    (MATRIX.format("FULL_MATRIX") + "0 1 2\n1 0 3\n2 4 0\n", 9),   # d(3,2) != d(2,3)
    (MATRIX.format("FUNCTION") + "1 2 3\n", 5),                    # unsupported format
    (COORDS + "1 0 0\n2 nan 4\n3 1 1\n", 7),                      # not finite
    (COORDS + "1 0 0\n2 3 inf\n3 1 1\n", 7),
    (COORDS + "1 0 0\n2 1e308 4\n3 -1e308 1\n", 4),              # distances overflow
    (MATRIX.format("UPPER_ROW") + f"1 {2 ** 63 - 1} 3\n", 4),      # tour sums would overflow (hung)
])
def test_malformed_files_name_the_line(tmp_path, text, line):
    assert_names_line(read_tsplib, tmp_path / "bad.tsp", text, line)


@pytest.mark.parametrize("text,line", [
    ("NAME: t\nTYPE: TOUR\nDIMENSION: 3\nTOUR_SECTION\n1\n2\n2\n-1\n", 7),
    ("NAME: t\nTYPE: TOUR\nDIMENSION: 3\nTOUR_SECTION\n1\n2\n3\n", 7),
    ("NAME: t\nTYPE: TOUR\nDIMENSION: 3\nTOUR_SECTION\n1\n2\n-1\n", 7),
])
def test_malformed_tours_name_the_line(tmp_path, text, line):
    assert_names_line(read_tour, tmp_path / "bad.tour", text, line)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="cannot read"):
        read_tsplib(str(tmp_path / "none.tsp"))


# -- the command line and MPI -----------------------------------------------------------------------

def test_cli_text_json_and_errors(tmp_path):
    burma = str(INSTANCES / "tsp" / "burma14.tsp")
    text = subprocess.run([*yewpy_cmd(), "tsp", burma], capture_output=True, text=True, timeout=60)
    assert text.returncode == 0, text.stderr
    assert "Optimal tour length: 3323" in text.stdout.splitlines()
    data = json.loads(subprocess.run([*yewpy_cmd(), "tsp", burma, "--incumbent", "nearest", "--skeleton",
                                      "budget", "-b", "50", "--json"], capture_output=True, text=True,
                                     timeout=60).stdout)
    assert (data["app"], data["objective"], data["status"]) == ("tsp", 3323, "optimal")
    assert data["solution"][0] == 1 and sorted(data["solution"]) == list(range(1, 15))
    bad = tmp_path / "bad.tsp"
    bad.write_text(COORDS + "1 0 0\n2 3 x\n3 1 1\n")
    st70 = INSTANCES / "tsp" / "st70.tsp"
    for path, message in ((bad, f"{bad}:7: expected a finite decimal number"), (st70, "at most 64")):
        out = subprocess.run([*yewpy_cmd(), "tsp", str(path)], capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr


def test_two_mpi_ranks_give_the_sequential_answer():
    path = str(INSTANCES / "tsp" / "ulysses16.tsp")
    out = run_ranks(2, [*yewpy_cmd(), "tsp", path, "--incumbent", "nearest", "--skeleton", "stacksteal",
                        "--json"])
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1, out.stdout
    data = json.loads(lines[0])
    assert (data["objective"], data["status"], data["ranks"]) == (6859, "optimal", 2)
    problem = Tsp.from_file(str(INSTANCES / "tsp" / "ulysses16.tsp"))
    assert problem.length(data["solution"]) == 6859


def test_a_header_dimension_allocates_nothing_before_the_data_is_counted(tmp_path):
    """DIMENSION 99999 with EXPLICIT weights built n^2 Python tuples before reading any number."""
    path = tmp_path / "big.tsp"
    path.write_text("TYPE: TSP\nDIMENSION: 99999\nEDGE_WEIGHT_TYPE: EXPLICIT\n"
                    "EDGE_WEIGHT_FORMAT: FULL_MATRIX\nEDGE_WEIGHT_SECTION\n0 1\n1 0\nEOF\n")
    with pytest.raises(InputError, match=f"{path}:8: expected 9999800001 edge weights, found 4"):
        read_tsplib(str(path))
    with pytest.raises(InputError, match=f"{path}:2: DIMENSION 99999: this search supports at most 64"):
        Tsp.from_file(str(path))
    path.write_text("TYPE: TSP\nDIMENSION: \u00b2\nEDGE_WEIGHT_TYPE: EUC_2D\n"
                    "NODE_COORD_SECTION\n1 0 0\nEOF\n")
    with pytest.raises(InputError, match=":2: DIMENSION must be a positive integer"):
        read_tsplib(str(path))

