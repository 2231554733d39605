"""UTS: SHA-1 against hashlib, exact T1-T5 counts from shared/instances/uts, coordinations, oracle."""

import hashlib
import json
import pickle
import subprocess

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from uts_oracle import uts_tree as _oracle

from support import INSTANCES, number, readme_table, require_shared, run_ranks, yewpy_cmd
from yewpy.apps import _uts
from yewpy.apps.uts import NAMED_TREES, UTS, parse_uts_params
from yewpy.errors import UsageError


def _table():
    require_shared()
    rows = readme_table(INSTANCES / "uts" / "README.md")
    return {r["name"]: (r["UTS params"].strip("`"), r) for r in rows}


TABLE = _table()
SMALL = ["T1", "T2", "T3", "T4", "T5"]
LIMIT = 5_000_000          # every tree searched here is smaller: a wrong rule cannot run away


def _exact(name):
    row = TABLE[name][1]
    return number(row["nodes"]), number(row["leaves"]), number(row["depth"])


def _answer(result):
    return result.value, result.metrics["leaves"], result.metrics["depth"]


# -- the generator -----------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=55), st.sampled_from(_uts.sha1_implementations()))
def test_sha1_matches_hashlib(data, implementation):
    assert _uts.sha1(data, implementation) == hashlib.sha1(data).digest()


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=20, max_size=20), st.integers(0, 2**32 - 1),
       st.sampled_from(_uts.sha1_implementations()))
def test_spawn_matches_hashlib(parent, i, implementation):
    """The cores' own path (SHA-NI reads the state as vectors), not the generic one above."""
    assert _uts.spawn(parent, i, implementation) == hashlib.sha1(parent + i.to_bytes(4, "big")).digest()


def test_sha1_extensions_are_used_where_the_cpu_has_them():
    assert _uts.sha1_implementations()[0] == "portable"
    assert _uts.sha1_implementation() == _uts.sha1_implementations()[-1]
    with pytest.raises(ValueError):
        _uts.sha1(bytes(56))
    with pytest.raises(ValueError):
        _uts.set_sha1_implementation("openssl")


@pytest.mark.parametrize("seed", [0, 19, 2**31 - 1, -1])
def test_root_state(seed):
    assert _uts.root_digest(seed) == hashlib.sha1(bytes(16) + (seed % 2**32).to_bytes(4, "big")).digest()


# -- the reference trees -----------------------------------------------------------------------


def test_named_trees_are_the_readme_parameters():
    assert set(NAMED_TREES) == set(TABLE)
    for name, (params, _) in TABLE.items():
        assert parse_uts_params(NAMED_TREES[name]) == parse_uts_params(params), name


@pytest.mark.parametrize("name", SMALL)
def test_small_trees_exact(name):
    result = UTS.named(name).search(node_limit=LIMIT)
    assert _answer(result) == _exact(name) and result.status == "exhausted"
    assert result.nodes == result.value == sum(result.metrics["nodes"])


NAMED_COORDINATIONS = [("T1", "stacksteal", {}), ("T2", "stacksteal", {"chunked": True}),
                       ("T3", "budget", {"backtracks": 100}), ("T4", "depthbounded", {"spawn_depth": 2}),
                       ("T5", "budget", {"backtracks": 20, "spawn_all": True, "pool": "deque"})]


@pytest.mark.parametrize("name,coordination,params", NAMED_COORDINATIONS)
def test_small_trees_under_coordinations(name, coordination, params):
    assert _answer(UTS.named(name).search(coordination, node_limit=LIMIT, **params)) == _exact(name)


def test_portable_sha1_gives_the_same_tree():
    before = _uts.sha1_implementation()
    try:
        _uts.set_sha1_implementation("portable")
        result = UTS.named("T3").search(max_depth=400)
    finally:
        _uts.set_sha1_implementation(before)
    assert _answer(result) == _answer(UTS.named("T3").search(max_depth=400))


# -- every coordination, every tree type -------------------------------------------------------

COORDINATIONS = [("seq", {}), ("stacksteal", {}), ("stacksteal", {"chunked": True}),
                 ("depthbounded", {"spawn_depth": 2}), ("budget", {"backtracks": 100}),
                 ("budget", {"backtracks": 20, "spawn_all": True, "pool": "deque"})]

MEDIUM = {   # about 1,000 to 64,000 nodes each
    "binomial": dict(tree_type=0, b0=200, q=0.2, m=4, seed=11),
    "geometric linear": dict(tree_type=1, shape=0, gen_mx=12, b0=4, seed=1),
    "geometric expdec": dict(tree_type=1, shape=1, gen_mx=6, b0=6, seed=0),
    "geometric cyclic": dict(tree_type=1, shape=2, gen_mx=8, b0=4, seed=0),
    "geometric fixed": dict(tree_type=1, shape=3, gen_mx=7, b0=4, seed=19),
    "hybrid": dict(tree_type=2, shape=0, gen_mx=10, b0=5, q=0.2, m=4, seed=1),
    "balanced": dict(tree_type=3, gen_mx=6, b0=5),
}


@pytest.mark.parametrize("coordination,params", COORDINATIONS)
@pytest.mark.parametrize("tree", MEDIUM)
def test_every_coordination_matches_sequential(tree, coordination, params):
    seq = UTS(**MEDIUM[tree]).search(node_limit=LIMIT)
    other = UTS(**MEDIUM[tree]).search(coordination, node_limit=LIMIT, **params)
    assert seq.value > 1000
    assert _answer(other) == _answer(seq)
    assert other.metrics["nodes"] == seq.metrics["nodes"]


# -- small random trees against a Python re-implementation (hashlib) ---------------------------


trees = st.fixed_dictionaries(dict(
    tree_type=st.integers(0, 3), b0=st.floats(1.0, 4.5), gen_mx=st.integers(2, 6), shape=st.integers(0, 3),
    q=st.floats(0.0, 0.35), m=st.integers(0, 5), seed=st.integers(-2**31, 2**31 - 1),
    shift=st.floats(0.0, 1.0)))


@settings(max_examples=60, deadline=None)
@given(trees, st.sampled_from(COORDINATIONS))
def test_random_trees_against_python_oracle(tree, coordination):
    expected = _oracle(tree["tree_type"], tree["b0"], tree["gen_mx"], tree["shape"], tree["q"], tree["m"],
                       tree["seed"], tree["shift"])
    assume(expected is not None)
    result = UTS(**tree).search(coordination[0], node_limit=2001, **coordination[1])
    assert _answer(result) == expected


# -- UTS's rules at the edges ------------------------------------------------------------------


def _seed_with_big_root(b0):
    core = UTS(tree_type=1, shape=3, gen_mx=1, b0=b0).core()
    return next(s for s in range(1000) if core.children_of(_uts.root_digest(s), 0) == 100)


def test_children_are_capped_at_100():
    seed = _seed_with_big_root(1000.0)
    expected = _oracle(1, 1000.0, 1, 3, 0.0, 0, seed, 0.5)
    assert expected == (101, 100, 1)
    result = UTS(tree_type=1, shape=3, gen_mx=1, b0=1000.0, seed=seed).search(node_limit=LIMIT)
    assert _answer(result) == expected
    binomial = UTS(tree_type=0, b0=3, q=1.0, m=150, seed=1).search(max_depth=3)     # non-root: capped
    assert binomial.metrics["nodes"] == [1, 3, 300]


def test_binomial_root_is_not_capped():
    result = UTS(tree_type=0, b0=2000, q=0.0, m=4).search()
    assert _answer(result) == (2001, 2000, 1)


def test_balanced_tree_is_complete():
    assert _answer(UTS(tree_type=3, gen_mx=4, b0=3.7).search()) == (121, 81, 4)


def test_core_pickles_and_names_work():
    tree = UTS(tree_type="hybrid", shape="cyclic", gen_mx=8, b0=3, q=0.2, m=3, seed=4, shift=0.25)
    core = pickle.loads(pickle.dumps(tree.core()))
    assert (core.tree_type, core.shape, core.gen_mx, core.b0, core.q, core.m, core.seed, core.shift) == \
        (2, 2, 8, 3.0, 0.2, 3, 4, 0.25)
    assert UTS(**parse_uts_params(tree.params())).params() == tree.params()


@pytest.mark.parametrize("kwargs", [dict(tree_type=4), dict(shape="spiral"), dict(q=1.5), dict(m=-1),
                                    dict(gen_mx=0), dict(b0=-1.0), dict(seed=2**31)])
def test_bad_parameters(kwargs):
    with pytest.raises(UsageError):
        UTS(**kwargs)


@pytest.mark.parametrize("text", ["-t 1 -a", "-z 3", "-t one", "t 1"])
def test_bad_uts_parameter_strings(text):
    with pytest.raises(UsageError):
        parse_uts_params(text)


# -- the command line and MPI ------------------------------------------------------------------


def _run(*args):
    return subprocess.run([*yewpy_cmd(), "uts", *map(str, args)], capture_output=True, text=True, timeout=120)


def test_cli_json_named_tree():
    out = _run("--tree", "t1", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert (data["app"], data["kind"], data["status"]) == ("uts", "enumeration", "exhausted")
    assert (data["value"], data["metrics"]["leaves"], data["metrics"]["depth"]) == _exact("T1")


def test_cli_flags_text():
    out = _run("--uts-t", "geometric", "--uts-a", "3", "--uts-d", "7", "--uts-b", "4", "--uts-r", "19",
               "--skeleton", "budget", "-b", "50")
    assert out.returncode == 0, out.stderr
    expected = _answer(UTS(**MEDIUM["geometric fixed"]).search())
    lines = out.stdout.splitlines()
    assert lines[0] == "Tree: geometric (fixed): -t 1 -b 4 -r 19 -d 7 -a 3"
    assert lines[1:4] == [f"Total Nodes: {expected[0]}", f"Leaves: {expected[1]}",
                          f"Max depth: {expected[2]}"]


@pytest.mark.parametrize("args", [["--tree", "T9"], ["--tree", "T1", "--uts-b", "3"], ["--uts-a", "7"],
                                  ["--uts-t", "foo"], ["--uts-q", "2"], ["--uts-d", "x"]])
def test_cli_bad_flags_exit_2(args):
    out = _run(*args)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith("yewpy: error:") or "usage:" in out.stderr


def test_two_mpi_ranks_exact():
    proc = run_ranks(2, [*yewpy_cmd(), "uts", "--tree", "T5", "--skeleton", "stacksteal", "--json"])
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    assert data["ranks"] == 2
    assert (data["value"], data["metrics"]["leaves"], data["metrics"]["depth"]) == _exact("T5")
    assert data["nodes"] == data["value"]


def test_module_example():
    import doctest

    import yewpy.apps.uts
    outcome = doctest.testmod(yewpy.apps.uts)
    assert outcome.attempted >= 2 and outcome.failed == 0
