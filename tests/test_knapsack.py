"""Knapsack: optima of every instance format in shared/instances/knapsack; Python = Cython; oracle."""

import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import INSTANCES, assert_names_line, require_shared
from yewpy.apps.knapsack import Knapsack, read_knapsack
from yewpy.apps.knapsack_python import KnapsackPy
from yewpy.errors import InputError


def _files(pattern):
    require_shared()
    return sorted(str(p.relative_to(INSTANCES / "knapsack")) for p in (INSTANCES / "knapsack").glob(pattern))


KP = _files("yewpar_kp/*.kp")
COUNTED = [f for f in _files("*/*") if not f.endswith((".opt", ".kp", ".csv", ".md"))
           and not f.startswith("large_scale/knapPI_3_") or f in ("large_scale/knapPI_3_100_1000_1",
                                                                  "large_scale/knapPI_3_200_1000_1",
                                                                  "large_scale/knapPI_3_500_1000_1",
                                                                  "large_scale/knapPI_3_1000_1000_1")]
CSV = _files("pisinger/*.csv")


def test_instance_lists_are_complete():
    assert len(KP) == 22 and len(CSV) == 5 and len(COUNTED) == 10 + 14 + 4


def _check(inst, result):
    assert result.status == "optimal"
    assert sum(inst.weights[i] for i in result.solution) <= inst.capacity
    assert sum(inst.profits[i] for i in result.solution) == pytest.approx(result.objective)
    assert result.objective == pytest.approx(inst.optimum, abs=1e-4)


@pytest.mark.parametrize("name", KP + COUNTED)
def test_optimum(name):
    inst = read_knapsack(str(INSTANCES / "knapsack" / name))
    assert inst.optimum is not None
    _check(inst, Knapsack.from_instance(inst).search())


@pytest.mark.parametrize("name", CSV)
def test_every_pisinger_instance(name):
    for k in range(1, 101):
        inst = read_knapsack(str(INSTANCES / "knapsack" / name), str(k))
        _check(inst, Knapsack.from_instance(inst).search())


def test_pisinger_instance_by_name(instances):
    path = instances / "knapsack" / "pisinger" / "knapPI_1_50_1000.csv"
    inst = read_knapsack(str(path), "knapPI_1_50_1000_2")
    assert (len(inst.profits), inst.capacity, inst.optimum) == (50, 997, 5847)


COORDINATIONS = [("seq", {}), ("depthbounded", {"spawn_depth": 2}), ("budget", {"backtracks": 20}),
                 ("budget", {"backtracks": 3, "spawn_all": True, "pool": "deque"})]


@pytest.mark.parametrize("coordination,params", COORDINATIONS)
@pytest.mark.parametrize("name", ["knapsackTest1.kp", "knapPI_11_20_1000_3.kp", "f6_l-d_kp_10_60.kp"])
def test_python_and_cython_build_the_same_tree(name, coordination, params):
    inst = read_knapsack(str(INSTANCES / "knapsack" / "yewpar_kp" / name))
    compiled = Knapsack.from_instance(inst).search(coordination, **params)
    python = KnapsackPy(inst.profits, inst.weights, inst.capacity).search(coordination, **params)
    _check(inst, compiled)
    assert (python.objective, python.nodes, python.metrics["nodes"], python.metrics["prunes"]) == \
        (compiled.objective, compiled.nodes, compiled.metrics["nodes"], compiled.metrics["prunes"])


def _brute_force(profits, weights, capacity):
    best = 0
    for mask in itertools.product((0, 1), repeat=len(profits)):
        if sum(w for w, x in zip(weights, mask) if x) <= capacity:
            best = max(best, sum(p for p, x in zip(profits, mask) if x))
    return best


items = st.lists(st.tuples(st.integers(0, 60), st.integers(1, 40)), min_size=0, max_size=10)


@settings(max_examples=80, deadline=None)
@given(items, st.integers(0, 150), st.sampled_from(COORDINATIONS), st.booleans())
def test_random_knapsacks_against_brute_force(pairs, capacity, coordination, prune_level):
    profits = [p for p, _ in pairs]
    weights = [w for _, w in pairs]
    best = _brute_force(profits, weights, capacity)
    for cls in (Knapsack, KnapsackPy):
        result = cls(profits, weights, capacity).search(coordination[0], prune_level=prune_level,
                                                        **coordination[1])
        assert result.objective == best
        assert sum(weights[i] for i in result.solution) <= capacity
        assert sum(profits[i] for i in result.solution) == best


@pytest.mark.parametrize("suffix,text,line", [
    (".kp", "100\n", 2),
    (".kp", "100\n5\n3 x\n", 3),
    (".kp", "100\n5\n3 4 5\n", 3),
    ("", "2 10\n1 2\n", 2),
    ("", "2 10\n1 2\n3 4\n1 1 1\n", 4),
    (".csv", "inst\nn 2\nc 10\nz 3\n1,2,3\n", 5),
    ("", "2 10\n1 2\nnan 4\n", 3),                    # a NaN profit: "Final Weight: nan", optimal
    ("", "2 10\n1 2\n3 inf\n", 3),
    ("", "1 nan\n1 2\n", 1),
    ("", "2\n10 30\n1 2\n3 4\n", 1),                # capacity 10 and 30 ignored: another problem
    ("", "2 10\n1_000 2\n3 4\n", 2),                 # Python's int() reads 1_000 as 1000
    ("", "2 10\n\u0663 2\n3 4\n", 2),                # ... and Arabic-Indic 3 as 3
])
def test_malformed_files_name_the_line(tmp_path: Path, suffix, text, line):
    assert_names_line(read_knapsack, tmp_path / f"bad{suffix}", text, line)


@pytest.mark.parametrize("text, what", [
    (f"2 10\n{2 ** 53} 1\n5 1\n", "the profits add up to"),     # the optimum came out 51 short
    (f"2 {2 ** 60}\n1 {2 ** 59}\n1 {2 ** 59}\n", "the weights add up to"),
])
def test_numbers_the_search_cannot_hold_exactly_are_refused(tmp_path: Path, text, what):
    path = tmp_path / "big.txt"
    path.write_text(text)
    with pytest.raises(InputError, match=f"{what} .* above 2\\^53"):
        read_knapsack(str(path))


@pytest.mark.parametrize("opt, line", [(b"", 1), (b"\xff\xfe", None), (b"12 13\n", 1), (b"12\n13\n", 2),
                                       (b"x\n", 1), (None, None)])
def test_a_bad_optimum_file_beside_the_instance_is_an_error(tmp_path: Path, opt, line):
    path = tmp_path / "inst"
    path.write_text("2 10\n1 2\n3 4\n")
    if opt is None:
        (tmp_path / "inst.opt").mkdir()
    else:
        (tmp_path / "inst.opt").write_bytes(opt)
    with pytest.raises(InputError) as err:
        read_knapsack(str(path))
    assert err.value.path == f"{path}.opt" and err.value.line == line
    if opt is not None:                         # the same instance with a good one
        (tmp_path / "inst.opt").write_text("4\n")
        assert read_knapsack(str(path)).optimum == 4

