"""The top-K kind against brute force on random trees: every coordination, 1 to 4 ranks, k, gap,
keys, ties, both senses; the bar spreads between ranks; the Ranking on its own."""

import gc
import json
import math
import sys
import weakref
from pathlib import Path

import pytest
from topk_trees import CASES, COORDINATIONS, Walks, brute_force, run

import yewpy
from support import run_ranks
from yewpy.ranking import Ranking


def _check(case: dict, got: dict) -> None:
    """Objectives exactly as brute force; the paths too where ties are broken (or cannot arise)."""
    expected = brute_force(case)
    assert got["kind"] == "topk" and got["status"] == "optimal"
    solutions = [(o, tuple(p)) for o, p in got["solutions"]]
    assert [o for o, _ in solutions] == [o for o, _ in expected], case
    walks = Walks(**case)
    for objective, path in solutions:           # each is a real path with that objective
        assert walks.objective(path) == objective
    assert len(set(p for _, p in solutions)) == len(solutions)
    if case.get("keyed"):
        assert len({p[0] for _, p in solutions}) == len(solutions)
    if case.get("ties"):
        assert solutions == expected
    elif case.get("gap") is not None and case.get("k") is None:    # every one within the gap
        assert sorted(solutions) == sorted(expected)


@pytest.mark.parametrize("coordination", COORDINATIONS, ids=lambda c: c[0] + "".join(map(str, c[1].values())))
def test_every_case_on_one_process(coordination):
    name, params = coordination
    for case in CASES:
        _check(case, run(case, name, params))


def test_the_bar_prunes():
    """With a bound the bar cuts the tree; without one every node is visited."""
    case = dict(seed=1, k=1)
    pruned = Walks(**case).search().nodes
    every = Walks(**case, bounded=False).search().nodes
    assert pruned < every and every == 1 + len(__import__("topk_trees").every_path(1))


def test_result_and_json_shape():
    result = Walks(seed=2, k=3, ties=True).search()
    data = result.to_dict()
    assert data["kind"] == "topk" and data["objective"] == result.solutions[0][0] == result.objective
    assert [s["objective"] for s in data["solutions"]] == [o for o, _ in result.solutions]
    assert data["solution"] == result.solutions[0][1]


def test_initial_bound_keeps_what_reaches_it():
    """``initial_bound`` is a value the k-th best reaches: the answer is unchanged, the tree smaller."""
    case = dict(seed=1, k=4, ties=True)
    expected = brute_force(case)
    plain = Walks(**case).search()
    seeded = Walks(**case).search(initial_bound=expected[-1][0])
    assert seeded.solutions == plain.solutions == expected and seeded.nodes < plain.nodes


def test_a_finished_search_is_freed_without_the_cyclic_collector():
    """The ranking, which holds the search's bound ``key`` and ``tiebreak``, is released when the
    search ends (its bar stays readable): the search is then freed as soon as the caller lets it go,
    not at a later full collection (the DNN planner's caches are millions of objects)."""
    was = gc.isenabled()
    gc.disable()
    try:
        walks = Walks(seed=3, k=2, keyed=True, ties=True)
        result = walks.search()
        assert result.solutions and walks.threshold == math.nextafter(result.solutions[-1][0], -math.inf)
        gone = weakref.ref(walks)
        del walks
        assert gone() is None
    finally:
        if was:
            gc.enable()


def test_bad_k_and_gap_are_usage_errors():
    for k, gap in ((0, None), (2.5, None), (None, -1), (None, math.inf)):
        with pytest.raises(yewpy.UsageError):
            Walks(seed=1, k=k, gap=gap).search()


def test_ranking_keeps_the_k_best_and_raises_its_bar():
    ranking = Ranking(1.0, k=2, tiebreak=lambda s: s)
    assert ranking.add(5, "a") is False and ranking.threshold is None
    assert ranking.add(3, "b") is True and ranking.threshold == math.nextafter(3, -math.inf)
    assert ranking.add(3, "a0") is False                # beats "b" on the tiebreak; the bar stays
    assert ranking.solutions() == [(5, "a"), (3, "a0")]
    assert ranking.add(2, "z") is False                 # below the bar: not ranked
    assert ranking.adopt(4.0) and ranking.threshold == 4.0
    low = Ranking(-1.0, gap=1.0)                        # minimising, within 1 of the best
    for value in (7, 5, 6, 5.5):
        low.add(value, value)
    assert low.solutions() == [(5, 5), (5.5, 5.5), (6, 6)]


@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_every_case_on_ranks(ranks, tmp_path):
    script = Path(__file__).with_name("topk_trees.py")
    out = run_ranks(ranks, [sys.executable, str(script)], timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    results = [json.loads((tmp_path / f"topk.{r}.json").read_text()) for r in range(ranks)]
    assert all(r.keys() == results[0].keys() for r in results)
    for key, got in results[0].items():
        case = CASES[int(key.split()[0])]
        _check(case, got)
        assert all(r[key]["solutions"] == got["solutions"] for r in results)   # one merged answer
        if not key.split()[1].startswith("ordered"):   # the bar reached every rank
            assert len({r[key]["threshold"] for r in results}) == 1, key


def test_a_jitted_topk_ranks_as_plain_python():
    """``@yewpy.jit`` compiles a top-K search (its children, objective and bound); the ranking,
    key and tiebreak stay Python, on the solutions the engine hands them."""
    import random

    from jit_searches import MaskKnapsack

    class TopPacks(yewpy.TopK, MaskKnapsack):
        def __init__(self, profits, weights, capacity, k):
            MaskKnapsack.__init__(self, profits, weights, capacity)
            self.k = k

        def tiebreak(self, node):
            return -node[3]

    rng = random.Random(3)
    n, capacity = 14, 100
    p, w = [rng.randint(1, 30) for _ in range(n)], [rng.randint(1, 30) for _ in range(n)]
    packs = [m for m in range(1, 1 << n) if sum(w[j] for j in range(n) if m >> j & 1) <= capacity]
    best = sorted((sum(p[j] for j in range(n) if m >> j & 1) for m in packs), reverse=True)[:7]
    plain = TopPacks(p, w, capacity, 7).search()
    for name in ("seq", "stacksteal"):
        jitted = yewpy.jit(TopPacks)(p, w, capacity, 7).search(name)
        assert [o for o, _ in jitted.solutions] == best and jitted.solutions == plain.solutions
