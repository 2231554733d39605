"""The planner's memory-aware stage floor (bounds.py ``stage_floor``): never above a shape's best
plan, on random memory-starved instances against the exhaustive tree (one part, and several parts
of different GPU kinds: ``PartsFloor``), and tight where memory binds."""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pytest
from dnn_oracle import check_bounds_below_completions
from hypothesis import example, given, settings
from hypothesis import strategies as st

from support import same_optimum
from yewpy.apps.dnn.cluster import load_cluster
from yewpy.apps.dnn.cost import Training
from yewpy.apps.dnn.model_files import load_model
from yewpy.apps.dnn.models import transformer
from yewpy.apps.dnn.planner import ExhaustivePlanSearch, PlanSearch
from yewpy.apps.dnn.planner._packing import PackedPart, least_packing, packed_floor, packing_floor
from yewpy.apps.dnn.planner.bounds import pipe_bound
from yewpy.apps.dnn.planner.stage_floor import Mode, PartsFloor, StageFloor

RECOMPUTE_SETS = [("none", "selective", "full"), ("none", "full", "block"), ("none",), ("selective", "block")]
ZERO_SETS = [(0, 1, 2, 3), (0, 1), (2, 3), (3,)]
# what the random two-kind instances draw from: memory binds at the smaller fractions
TWO_KIND_DRAWS = {"batch": st.sampled_from([16, 64]), "mem": st.sampled_from([0.15, 0.3, 0.6]),
                  "recompute": st.sampled_from(RECOMPUTE_SETS), "zero": st.sampled_from(ZERO_SETS)}


def start_bound(search: PlanSearch, sid: int) -> float:
    """The search's bound of shape ``sid``'s first stage node (its memory-aware floor included,
    bisected as where the seed ranks the shape: the search settles it only as far as it must)."""
    sh = search.shapes[sid]
    if sh.mode == "pipe" and len(sh.parts) > 1:
        search._bisect_parts_floor(sid)
    return search.time_bound(search.start_node(sid))


def brute_minmax(modes: list[Mode], params, expert, t: float, usable: float, inflight: list, lo: int,
                 first: int, per_stage: list | None = None) -> float:
    """The least over every cut of blocks [lo, n) into the stages first .. p - 1 (empty ones
    allowed) of its costliest stage, each stage at its cheapest mode that fits: a memoised
    recursion over (stage, position), independent of the greedy. ``per_stage``: each stage's own
    (modes, usable) where they differ (stages on two GPU kinds)."""
    n = len(params) - 1

    def cost(j: int, a: int, b: int) -> float:
        if a == b:
            return 0.0
        best = math.inf
        its_modes, room = per_stage[j] if per_stage else (modes, usable)
        for m in its_modes:
            experts = (expert[b] - expert[a]) / t
            state = ((params[b] - params[a]) / t - experts) * m.state + experts * m.state_e + m.gather
            if state + (m.act[b] - m.act[a]) * inflight[j] + m.working_set <= room:
                best = min(best, max(pre[b] - pre[a] + off for pre, off in m.terms))
        return best

    @functools.cache
    def rest(j: int, a: int) -> float:
        if a == n:
            return 0.0
        if j == len(inflight):
            return math.inf
        return min(max(cost(j, a, b), rest(j + 1, b)) for b in range(a, n + 1))  # b == a: empty

    return rest(first, lo)


def prefix(values: list[float]) -> np.ndarray:
    return np.concatenate(([0.0], np.cumsum(values)))


def random_modes(data, values, count: int) -> list[Mode]:
    """``count`` stage-floor modes of 1-6 cost terms drawn from ``values`` (prefix arrays)."""
    out = []
    for _ in range(count):
        terms = tuple((prefix(data.draw(values)), data.draw(st.floats(0, 5))) for _ in range(data.draw(
            st.integers(1, 6))))
        out.append(Mode(terms, prefix(data.draw(values)), data.draw(st.floats(0, 5)),
                        data.draw(st.floats(0, 2)), data.draw(st.floats(0, 2)), data.draw(st.floats(0, 5))))
    return out


@settings(max_examples=150, deadline=None)
@given(data=st.data(), n=st.integers(1, 9), p=st.integers(1, 5), modes=st.integers(1, 3))
def test_compiled_cut_matches_brute_force(data, n, p, modes):
    """``StageFloor.cuts`` says whether the brute-force min-max is within the cap, from any start
    (lo, first stage), and ``least`` brackets it: on random non-negative block costs and memory."""
    values = st.lists(st.floats(0, 10, allow_nan=False), min_size=n, max_size=n)
    drawn = random_modes(data, values, modes)
    params, expert = prefix(data.draw(values)), prefix([0.0] * n)
    inflight = sorted(data.draw(st.lists(st.floats(0.5, 4), min_size=p, max_size=p)), reverse=True)
    usable = data.draw(st.floats(5, 120))
    floor = StageFloor(drawn, params, expert, 1.0, usable, inflight)
    lo, first = data.draw(st.integers(0, n)), data.draw(st.integers(0, p))
    oracle = brute_minmax(drawn, params, expert, 1.0, usable, inflight, lo, first)
    for cap in data.draw(st.lists(st.floats(0, 80), min_size=1, max_size=6)) + [math.inf]:
        if abs(cap - oracle) > 1e-9:
            assert floor.cuts(cap, lo, first) == (oracle <= cap), (cap, oracle)
    least = 0.0 if floor.cuts(0.0, lo, first) else floor.least(0.0, math.inf, 40, lo, first)
    assert least <= oracle + 1e-9
    assert math.isinf(least) == math.isinf(oracle)
    if not math.isinf(oracle):
        assert oracle <= least * (1 + 1e-6) + 1e-6


def orders_oracle(parts: list, left: list, params, expert, inflight: list, lo: int, first: int) -> float:
    """The brute-force min-max over every order of the stages left (``left[i]`` on part i)."""
    stages = [k for k, c in enumerate(left) for _ in range(c)]
    return min(brute_minmax([], params, expert, 1.0, 0.0, inflight, lo, first,
                            [None] * first + [parts[k] for k in order])
               for order in set(itertools.permutations(stages)))


@settings(max_examples=120, deadline=None)
@given(data=st.data(), n=st.integers(1, 8), p=st.integers(2, 5), modes=st.integers(1, 3), k=st.integers(2, 3))
def test_parts_cut_matches_brute_force(data, n, p, modes, k):
    """``PartsFloor`` (stages on two or three parts, so many on each, in any order) says whether the
    least, over every order of the parts and every cut, of the costliest stage is within the cap,
    from any node's place (first block, first stage, stages left per part), ``order`` gives an order
    of the parts in which a cut is within it, and ``least`` brackets it: on random block costs,
    modes and memory per part."""
    values = st.lists(st.floats(0, 10, allow_nan=False), min_size=n, max_size=n)
    params, expert = prefix(data.draw(values)), prefix([0.0] * n)
    inflight = sorted(data.draw(st.lists(st.floats(0.5, 4), min_size=p, max_size=p)), reverse=True)
    parts = [(random_modes(data, values, modes), data.draw(st.floats(5, 120))) for _ in range(k)]
    floors = [StageFloor(m, params, expert, 1.0, usable, inflight) for m, usable in parts]
    counts = [0] * k
    for _ in range(p):
        counts[data.draw(st.integers(0, k - 1))] += 1
    core = PartsFloor(floors, counts)
    # from a node's place: blocks [lo, n) on the stages left, so many of them on each part
    lo = data.draw(st.integers(0, n))
    left = [data.draw(st.integers(0, c)) for c in counts]
    first = p - sum(left)
    oracle = orders_oracle(parts, left, params, expert, inflight, lo, first)
    for cap in data.draw(st.lists(st.floats(0, 80), min_size=1, max_size=6)) + [math.inf]:
        if abs(cap - oracle) > 1e-9:
            assert core.cuts(cap, lo, first, left) == (oracle <= cap), (cap, oracle)
            # the order of a cut it finds: so many stages on each part, in which the stages fit
            order = core.order(cap, lo, first, left)
            assert (order is not None) == (oracle <= cap)
            if order is not None:
                assert sorted(order) == sorted(k for k, c in enumerate(left) for _ in range(c))
                per_stage = [None] * first + [parts[k] for k in order]
                assert brute_minmax([], params, expert, 1.0, 0.0, inflight, lo, first, per_stage) <= cap
    least = 0.0 if core.cuts(0.0, lo, first, left) else core.least(0.0, math.inf, 40, lo, first, left)
    assert least <= oracle + 1e-9
    assert math.isinf(least) == math.isinf(oracle)
    if not math.isinf(oracle):
        assert oracle <= least * (1 + 1e-6) + 1e-6


def test_parts_cut_from_a_nodes_place_on_seeded_instances():
    """The same check on 300 seeded random instances of two to four parts, started mid-pipeline
    with few stages left on each part, where memory binds on the early (fuller) positions: a
    stage's in-flight count is its position's, whichever part it is on."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        n, p, k = int(rng.integers(2, 7)), int(rng.integers(2, 6)), int(rng.integers(2, 5))
        parts = []
        for _ in range(k):
            modes = [Mode(((prefix(rng.uniform(0, 10, n)), 0.0),), prefix(rng.uniform(0, 10, n)), 0.0,
                          float(rng.uniform(0, 2)), 0.0, 0.0) for _ in range(int(rng.integers(1, 3)))]
            parts.append((modes, float(rng.uniform(5, 60))))
        params, expert = prefix(rng.uniform(0, 10, n)), prefix(np.zeros(n))
        inflight = sorted(rng.uniform(0.5, 6, p), reverse=True)
        floors = [StageFloor(m, params, expert, 1.0, usable, inflight) for m, usable in parts]
        counts = np.bincount(rng.integers(0, k, p), minlength=k).tolist()
        core = PartsFloor(floors, counts)
        left = [int(rng.integers(0, c + 1)) for c in counts]
        first, lo = p - sum(left), int(rng.integers(0, n + 1))
        oracle = orders_oracle(parts, left, params, expert, inflight, lo, first)
        for cap in (*rng.uniform(0, 40, 4), math.inf):
            if abs(cap - oracle) > 1e-9:
                assert core.cuts(cap, lo, first, left) == (oracle <= cap), (cap, oracle)
                order = core.order(cap, lo, first, left)
                assert (order is not None) == (oracle <= cap)
                if order is not None:
                    per_stage = [None] * first + [parts[k] for k in order]
                    assert brute_minmax([], params, expert, 1.0, 0.0, inflight, lo, first, per_stage) <= cap


def test_parts_floor_refuses_what_does_not_fit():
    """Counts that do not add up to the floors' stages, or a node's counts beyond the shape's, are
    refused rather than read past the splits the floor was built for."""
    params = prefix([1.0, 2.0, 3.0])
    modes = [Mode(((params, 0.0),), params, 0.0, 0.0, 0.0, 0.0)]
    floors = [StageFloor(modes, params, prefix([0.0] * 3), 1.0, 100.0, [2.0, 1.0]) for _ in range(3)]
    with pytest.raises(ValueError):
        PartsFloor(floors, [1, 1, 1])
    core = PartsFloor(floors, [1, 1, 0])
    with pytest.raises(ValueError):
        core.cuts(5.0, 0, 0, [2, 0, 0])
    with pytest.raises(ValueError):
        core.cuts(5.0, 0, 0, [1, 1])
    assert core.cuts(3.0, 0, 0, [1, 1, 0]) and not core.cuts(2.9, 0, 0, [1, 1, 0])


@settings(max_examples=30, deadline=None)
@given(
    layers=st.integers(3, 8),
    hidden=st.sampled_from([1024, 4096, 8192]),
    experts=st.sampled_from([0, 0, 4]),
    batch=st.sampled_from([16, 64]),
    cluster=st.sampled_from(["dgx-a100-80g:1x8", "dgx-a100-80g:2x4", "dgx-v100-16g:2x4"]),
    mem=st.sampled_from([0.15, 0.3, 0.6]),
    recompute=st.sampled_from(RECOMPUTE_SETS),
    zero=st.sampled_from(ZERO_SETS),
    schedules=st.sampled_from([("1f1b",), ("1f1b", "interleaved", "kfkb", "gpipe")]),
    per_layer_zero=st.booleans(),
    per_layer_tp=st.booleans(),
)
def test_floor_never_exceeds_a_shapes_best(layers, hidden, experts, batch, cluster, mem, recompute, zero,
                                           schedules, per_layer_zero, per_layer_tp):
    """Every shape's start bound is at most the best plan the exhaustive tree finds in it, and BnB
    with the floor finds the exhaustive optimum: the floor prunes nothing the answer needs."""
    model = transformer("small", layers=layers, hidden=hidden, heads=16, vocab=32000, seq=1024,
                        experts=experts)
    train = Training(batch, 1024, memory_fraction=mem, memory_reserve=0, microbatches=(1, 2, 4),
                     recompute=recompute, zero=zero, schedules=schedules, zero_layers=per_layer_zero,
                     tp_layers=per_layer_tp)
    search = PlanSearch(model, load_cluster(cluster), train, top=3)
    exhaustive = ExhaustivePlanSearch(model, load_cluster(cluster), train)
    oracle = exhaustive.search(prune_level=False)
    for sid, seconds in exhaustive.found.items():
        assert start_bound(search, sid) <= seconds * (1 + 1e-12), search.shapes[sid]
    same_optimum(search.search(prune_level=False), oracle)


@settings(max_examples=8, deadline=None)
@given(
    layers=st.integers(3, 5),
    hidden=st.sampled_from([1024, 4096, 8192]),
    cluster=st.sampled_from(["dgx-a100-80g:1x4+dgx-v100-16g:1x4", "dgx-a100-40g:1x4+dgx-v100-32g:1x4",
                             "dgx-h100-80g:1x4+dgx-a100-40g:1x4"]),
    mixed_tp=st.booleans(),
    **TWO_KIND_DRAWS,
)
# memory binds on the V100s: two-part shapes whose floor exceeds their time-only bound
@example(layers=5, hidden=8192, batch=16, cluster="dgx-a100-80g:1x4+dgx-v100-16g:1x4", mem=0.3,
         recompute=("none", "selective", "full"), zero=(0, 1, 2, 3), mixed_tp=False)
def test_two_kind_floor_never_exceeds_a_shapes_best(layers, hidden, batch, cluster, mem, recompute, zero,
                                                    mixed_tp):
    """The same on two GPU kinds, where a shape's stages lie on two groups (or a group and a pair
    of both, ``--mixed-tp``) in any order: ``PartsFloor`` prunes nothing the answer needs."""
    model = transformer("small", layers=layers, hidden=hidden, heads=16, vocab=32000, seq=1024)
    train = Training(batch, 1024, memory_fraction=mem, memory_reserve=0, microbatches=(1, 2, 4),
                     recompute=recompute, zero=zero, schedules=("1f1b", "kfkb", "gpipe"), mixed_tp=mixed_tp)
    search = PlanSearch(model, load_cluster(cluster), train, top=3)
    assert any(len(sh.parts) == 2 and search._parts_floor(sid) > -math.inf
               for sid, sh in enumerate(search.shapes) if sh.mode == "pipe")
    exhaustive = ExhaustivePlanSearch(model, load_cluster(cluster), train)
    oracle = exhaustive.search(prune_level=False)
    for sid, seconds in exhaustive.found.items():
        assert start_bound(search, sid) <= seconds * (1 + 1e-12), search.shapes[sid]
    same_optimum(search.search(prune_level=False), oracle)


@pytest.mark.parametrize("cluster, layers, hidden, mem", [
    ("dgx-a100-80g:1x2+dgx-v100-16g:1x2+dgx-h100-80g:1x2", 5, 8192, 0.3),   # memory binds on the V100s
    ("dgx-a100-80g:1x2+dgx-v100-16g:1x2+dgx-h100-80g:1x2", 4, 4096, 0.15),
    ("dgx-a100-40g:1x2+dgx-v100-32g:1x2+dgx-a100-80g:1x2", 4, 8192, 0.3),
])
def test_three_kind_floor_never_exceeds_a_completion(cluster, layers, hidden, mem):
    """On three GPU kinds, where a shape's stages lie on three parts in any order, the several-part
    floor (``PartsFloor``) raises start bounds above the time-only ones, and at every stage node of
    the exhaustive tree the bound is at most the best leaf below it; BnB finds the exhaustive optimum."""
    model = transformer("small", layers=layers, hidden=hidden, heads=16, vocab=32000, seq=1024)
    train = Training(16, 1024, memory_fraction=mem, memory_reserve=0, microbatches=(1, 2, 4),
                     recompute=("none", "selective", "full"), zero=(0, 1, 2, 3),
                     schedules=("1f1b", "kfkb", "gpipe"))
    search = PlanSearch(model, load_cluster(cluster), train, top=3)
    three = [sid for sid, sh in enumerate(search.shapes) if sh.mode == "pipe" and len(sh.parts) == 3]
    # a quarter: the time-only floors count whole blocks per stage too (30 of 97 on the second case)
    assert sum(start_bound(search, sid) > search.root_lb[sid] * (1 + 1e-9) for sid in three) > len(three) // 4
    exhaustive = ExhaustivePlanSearch(model, load_cluster(cluster), train)
    raised: list = []  # nodes whose several-part floor of the stages left settled higher at a limit
    assert check_bounds_below_completions(search, exhaustive, three, lambda node: True, raised) > 50
    assert raised
    same_optimum(search.search(prune_level=False), exhaustive.search(prune_level=False))


def hap_completions(exhaustive: ExhaustivePlanSearch, node: tuple, out: dict) -> float:
    """The best leaf time below ``node`` in the exhaustive tree; every stage node's in ``out``."""
    best = exhaustive.leaf_time(node)[0] if not any(node[3]) and node[2] == exhaustive.n else math.inf
    for child in exhaustive._children(node):
        best = min(best, hap_completions(exhaustive, child, out))
    out[node] = best
    return best


@settings(max_examples=12, deadline=None)
@given(
    layers=st.integers(3, 6),
    hidden=st.sampled_from([2048, 4096, 8192]),
    cluster=st.sampled_from(["dgx-a100-80g:1x4+dgx-v100-16g:1x4", "dgx-a100-40g:1x4+dgx-v100-32g:1x4",
                             "dgx-h100-80g:1x8+dgx-a100-40g:1x8"]),
    per_layer_zero=st.booleans(),
    **TWO_KIND_DRAWS,
)
# memory binds: the hap floor of some state is above its time-only floor
@example(layers=4, hidden=4096, batch=16, cluster="dgx-a100-80g:1x4+dgx-v100-16g:1x4", mem=0.3,
         recompute=("none", "selective", "full"), zero=(0, 1, 2, 3), per_layer_zero=False)
def test_hap_floor_never_exceeds_a_states_best(layers, hidden, batch, cluster, mem, recompute, zero,
                                               per_layer_zero):
    """In hap shapes (whole replicas of each GPU kind), the bound of every state of the exhaustive
    tree, its memory-aware floor per class included (``bounds._hap_suffix``), is at most the best
    completion below it; and BnB, keeping every shape's best (top = the shapes), finds each one's
    exhaustive best: the hap slots it cuts before their options (``_hap_slot_bound``) hold none."""
    model = transformer("small", layers=layers, hidden=hidden, heads=16, vocab=32000, seq=1024)
    train = Training(batch, 1024, memory_fraction=mem, memory_reserve=0, microbatches=(1, 2, 4),
                     recompute=recompute, zero=zero, schedules=("1f1b", "kfkb"), zero_layers=per_layer_zero)
    search = PlanSearch(model, load_cluster(cluster), train, top=3)
    exhaustive = ExhaustivePlanSearch(model, load_cluster(cluster), train, top=len(search.shapes))
    best: dict = {}
    raised = 0
    for sid, sh in enumerate(exhaustive.shapes):
        if sh.mode != "hap" or sh.p == 1:
            continue
        hap_completions(exhaustive, exhaustive.start_node(sid), best)
    assert best
    for node, seconds in best.items():
        sid, lo, counts = node[1], node[2], node[3]
        assert search.time_bound(node) <= seconds * (1 + 1e-12), (search.shapes[sid], node[7])
        q = sum(counts)
        if q and seconds < math.inf:
            tab = search.part_table(sid, 0)
            total = tab.time["none"][search.n] - tab.time["none"][lo]
            time_only = max(total / q, tab.sorted_time[-(-(search.n - lo) // q)])
            raised += search._floors(sid, lo, counts)[0][1] > time_only * (1 + 1e-9)
    every = PlanSearch(model, load_cluster(cluster), train, top=len(search.shapes))
    found = {leaf[1]: seconds for seconds, leaf in every.search(prune_level=False).solutions}
    oracle = {leaf[1]: seconds for seconds, leaf in exhaustive.search(prune_level=False).solutions}
    assert found.keys() == oracle.keys()
    assert all(found[sid] == pytest.approx(oracle[sid], rel=1e-12) for sid in oracle)
    if (layers, hidden, batch, mem) == (4, 4096, 16, 0.3) and cluster.startswith("dgx-a100-80g"):
        assert raised  # the example: memory binds on some feasible state
        assert any(exhaustive.shapes[sid].mode == "hap" for sid in oracle)


def test_floor_is_tight_where_memory_binds():
    """The 1T model on 512 A100: the second plan's shape (tp 8, pp 32, dp 2) must recompute or shard
    its first stages, which the time-only bound misses by about 20%. The floor closes that to within
    1% of the shape's best plan, and stays below it."""
    search = PlanSearch(load_model("megatron-1t"), load_cluster("dgx-a100-80g:64x8"), Training(2048, 2048),
                        top=3)
    result = search.search()
    second, plan = result.solutions[1]
    sid = plan[1]
    shape = search.shapes[sid]
    assert (shape.parts, shape.d, shape.b, shape.schedule) == (((0, 32, 8, 2),), 2, 1, "1f1b")
    floors = search._floors(sid, 0, search.start_counts(sid))  # the time-only floors
    time_only = pipe_bound(floors, 0.0, 0.0, 0.0, shape.div, shape.c1)
    assert time_only < 0.85 * second
    assert 0.99 * second < start_bound(search, sid) <= second


def best_completion(search: PlanSearch, node: tuple) -> float:
    """The least time of any completion of a one-part pipe node: every cut of its remaining blocks
    into its remaining stages under every option of each (independent of the bounds)."""
    _, sid, lo, counts, S, X, E, stages = node[:8]
    shape, n = search.shapes[sid], search.n

    def walk(j: int, pos: int, s: float, x: float, e: float) -> float:
        if j == shape.p:
            if pos != n:
                return math.inf
            return pipe_bound((0.0, 0.0, -math.inf, None), s, x, e, shape.div, shape.c1)
        return min((walk(j + 1, hi, s + a, max(x, b), max(e, c))
                    for hi in range(pos + 1, n - (shape.p - 1 - j) + 1)
                    for a, b, c, _, _ in search._stage_options(sid, 0, pos, hi, j, 0)), default=math.inf)

    return walk(len(stages), lo, S[0], X[0], E)


def test_a_nodes_bound_counts_the_input_sends_of_its_stages(monkeypatch):
    """The 1T model on 512 A100 with both per-layer choices, at pp 32, tp 8, dp 2, 1F1B: once its
    first stage is placed, every stage left receives its input, two sends of 0.75 ms in each steady
    term, times c1 = 1,023. Without them a node three stages from the end was bounded 1.8 s (0.5%)
    under its best completion, and the shape's search took 9,700 nodes to prove its best plan."""
    train = Training(2048, 2048, recompute=("none", "selective", "full", "block"), zero_layers=True,
                     fix={"pp": 32, "tp": 8, "dp": 2, "schedule": "1f1b", "mb": 1})
    search = PlanSearch(load_model("megatron-1t"), load_cluster("dgx-a100-80g:64x8"), train, top=1)
    near_the_end = []
    children = PlanSearch._stage_children

    def watched(self, node):
        if len(node[7]) == 29:
            near_the_end.append(node)
        return children(self, node)

    monkeypatch.setattr(PlanSearch, "_stage_children", watched)
    search.search()
    assert near_the_end
    for node in near_the_end[:4]:
        best = best_completion(search, node)
        assert 0.999 * best < search.time_bound(node) <= best


@settings(max_examples=150, deadline=None)
@given(
    parts=st.lists(st.tuples(st.lists(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0]), min_size=1, max_size=6),
                             st.integers(1, 3)), min_size=1, max_size=4),
    blocks=st.integers(0, 12), start=st.sampled_from([0.0, 1.0, 2.5, 4.0]),
)
def test_the_packing_floor_is_the_least_t_at_which_the_stages_hold_every_block(parts, blocks, start):
    """``least_packing`` against counting at every candidate T (``start`` and each running sum
    above it): the least at which sum c_i x (running sums within T) reaches ``blocks``, ties of
    equal sums on different parts included (the block times are drawn from few values)."""
    prefixes = [np.cumsum(sorted(times)) for times, _ in parts]
    counts = [c for _, c in parts]

    def held(t: float) -> int:
        return sum(c * int(np.searchsorted(p, t, side="right")) for p, c in zip(prefixes, counts))

    candidates = sorted({start, *(x for p in prefixes for x in p if x > start)})
    expected = next((t for t in candidates if held(t) >= blocks), math.inf)
    assert least_packing(prefixes, counts, blocks, start) == expected


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(), n=st.integers(1, 14), parts=st.integers(1, 4), lo=st.integers(0, 14),
    start=st.sampled_from([0.0, 1.0, 2.5, 4.0]),
)
def test_the_compiled_packing_floor_takes_every_block_and_the_trimmed_ones(data, n, parts, lo, start):
    """``packing_floor`` is ``start`` raised to ``least_packing`` of each part's cheapest-first
    running sums of blocks [lo, n), over every block and over those at least half the median of
    part 0's times from lo on (numpy's median): what ``bounds._packing_floor`` computed in Python
    before it was compiled, to the bit."""
    lo = min(lo, n)
    values = st.sampled_from([0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 7.0])  # ties across parts and blocks
    times = [np.array(data.draw(st.lists(values, min_size=n, max_size=n))) for _ in range(parts)]
    counts = data.draw(st.lists(st.integers(1, 3), min_size=parts, max_size=parts))
    ref = times[0]
    expected = start
    if lo < n:
        keep = ref[lo:] >= np.median(ref[lo:]) / 2
        for mask in (np.ones(n - lo, dtype=bool), keep):
            sums = [np.cumsum(np.sort(t[lo:][mask])) for t in times]
            expected = max(expected, least_packing(sums, counts, int(mask.sum()), start))
    assert packing_floor(times, ref, counts, lo, start) == expected


def test_packed_parts_are_shared_across_stage_counts_and_refuse_mixed_origins():
    """One ``PackedPart`` per (part, part 0, lo) serves every stage count the planner asks about, with
    the floor ``packing_floor`` gives; parts packed from different lo are refused, not mixed."""
    rng = np.random.default_rng(7)
    times = [rng.uniform(0.5, 3.0, 20) for _ in range(3)]
    for lo in (0, 5, 19, 20):
        packed = [PackedPart(t, times[0], lo) for t in times]
        assert packed[0].every == 20 - lo
        for counts in ([1, 1, 1], [3, 1, 2], [2, 5, 1]):
            for start in (0.0, 2.0, 50.0):
                expected = packing_floor(times, times[0], counts, lo, start)
                assert packed_floor(packed, counts, start) == expected
    with pytest.raises(ValueError):
        packed_floor([PackedPart(times[0], times[0], 0), PackedPart(times[1], times[0], 3)], [1, 1], 0.0)
    with pytest.raises(ValueError):
        PackedPart(times[0][:5], times[0], 0)


def test_shapes_past_the_split_limit_keep_the_time_floors(monkeypatch):
    """On four GPU kinds, shapes of four parts get the several-part floor; past ``PARTS_SPLITS``
    (here every shape) they keep the time-only floors, and both searches find the same plans."""
    import yewpy.apps.dnn.planner.bounds as bounds

    model = transformer("small", layers=6, hidden=2048, heads=16, vocab=32000, seq=1024)
    cluster = "dgx-a100-80g:1x4+dgx-v100-32g:1x4+dgx-h100-80g:1x4+dgx-a100-40g:1x4"
    train = Training(64, 1024, microbatches=(1, 2), memory_fraction=0.3)
    search = PlanSearch(model, load_cluster(cluster), train, top=3)
    with_floor = search.search()
    assert any(len(search.shapes[sid].parts) == 4 and floor > -math.inf
               for sid, floor in search._parts_floors.items())
    monkeypatch.setattr(bounds, "PARTS_SPLITS", 1)
    without = PlanSearch(model, load_cluster(cluster), train, top=3)
    result = without.search()
    assert without._parts_floors and all(floor == -math.inf for floor in without._parts_floors.values())
    assert [v for v, _ in result.solutions] == [v for v, _ in with_floor.solutions]
    assert with_floor.nodes < result.nodes


def test_the_time_floors_give_every_stage_a_block_of_its_own(monkeypatch):
    """A part's c stages hold c blocks, so the largest takes at least the c-th least block time on
    that part: two V100 stages beside one H100 stage can no longer leave the V100s empty. On 54 of
    188 shapes it raises the root bound (by half on the first of them), never above the shape's best
    plan in the exhaustive tree."""
    model = transformer("small", layers=4, hidden=4096, heads=16, vocab=32000, seq=1024)
    cluster, train = "dgx-h100-80g:1x4+dgx-v100-16g:1x4", Training(16, 1024, microbatches=(1, 2))
    search = PlanSearch(model, load_cluster(cluster), train, top=3)
    monkeypatch.setattr(PlanSearch, "_nth_least_block", staticmethod(lambda tab, c: 0.0))
    without = PlanSearch(model, load_cluster(cluster), train, top=3)
    raised = [sid for sid, bound in enumerate(search.root_lb) if bound > without.root_lb[sid] * (1 + 1e-9)]
    assert len(raised) >= 20 and max(search.root_lb[sid] / without.root_lb[sid] for sid in raised) > 1.4
    exhaustive = ExhaustivePlanSearch(model, load_cluster(cluster), train)
    exhaustive.search(prune_level=False)
    assert all(search.root_lb[sid] <= exhaustive.found[sid] for sid in raised)
