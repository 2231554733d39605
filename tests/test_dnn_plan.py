"""DNN planner: formula vectors, Megatron Table 1 re-discovery, BnB vs brute force, determinism, errors."""

from __future__ import annotations

import copy
import gc
import json
import math
import re
import subprocess
import time
import weakref
from dataclasses import replace
from pathlib import Path

import pytest
from dnn_oracle import brute_force, small_model
from hypothesis import given, settings
from hypothesis import strategies as st

from support import assert_names_line, run_ranks, same_optimum, yewpy_cmd
from yewpy.apps.dnn.cluster import load_cluster
from yewpy.apps.dnn.cost import (
    StageTables,
    Training,
    allreduce,
    hierarchical_allreduce,
    megatron_flops,
    megatron_params,
    stage_cost,
    state_bytes_per_param,
)
from yewpy.apps.dnn.model_files import load_model, read_model
from yewpy.apps.dnn.models import transformer
from yewpy.apps.dnn.planner import ExhaustivePlanSearch, PlanSearch, integer_shares, water_fill
from yewpy.apps.dnn.planner.bounds import SAFETY
from yewpy.apps.dnn.planner.treecount import exhaustive_nodes
from yewpy.apps.dnn_plan import parse_fix, plan
from yewpy.errors import InputError, UsageError

# Megatron SC'21 Table 1: name, t, p, GPUs, batch, TF/s per GPU; derived Eq. 2 params (B) and Eq. 3 PFLOP
TABLE1 = [
    ("megatron-1.7b", 1, 1, 32, 512, 137, 1.65, 15.5),
    ("megatron-3.6b", 2, 1, 64, 512, 138, 3.56, 32.7),
    ("megatron-7.5b", 4, 1, 128, 512, 142, 7.47, 67.2),
    ("megatron-18.4b", 8, 1, 256, 1024, 135, 18.45, 324.8),
    ("megatron-39.1b", 8, 2, 512, 1536, 138, 39.10, 1021.2),
    ("megatron-76.1b", 8, 4, 1024, 1792, 140, 76.05, 2302.0),
    ("megatron-145.6b", 8, 8, 1536, 2304, 148, 145.62, 5641.7),
    ("megatron-310.1b", 8, 16, 1920, 2160, 155, 310.13, 11194.0),
    ("megatron-529.6b", 8, 35, 2520, 2520, 163, 529.60, 22215.9),
    ("megatron-1t", 8, 64, 3072, 3072, 163, 1008.04, 51390.5),
]
COORDINATIONS = [
    ("seq", {}),
    ("stacksteal", {}),
    ("stacksteal", {"chunked": True}),
    ("depthbounded", {"spawn_depth": 2}),
    ("budget", {"backtracks": 100}),
    ("budget", {"backtracks": 20, "spawn_all": True, "pool": "deque"}),
    ("ordered", {"spawn_depth": 1}),
]
MIB = 2**20


@pytest.mark.parametrize("row", TABLE1, ids=[r[0] for r in TABLE1])
def test_megatron_equations(row):
    name, _, _, _, batch, _, psi, pflop = row
    model = load_model(name)
    L, h = model.meta["layers"], model.meta["hidden"]
    assert model.params == pytest.approx(megatron_params(L, h, 51200, 2048), rel=1e-12)
    assert model.params / 1e9 == pytest.approx(psi, abs=0.005)
    assert megatron_flops(batch, 2048, L, h, 51200) / 1e15 == pytest.approx(pflop, abs=0.05)
    # Eq. 3 without recompute is 3x the model's own forward FLOPs
    assert 3 * model.forward_flops(batch, 2048) == pytest.approx(
        megatron_flops(batch, 2048, L, h, 51200, recompute=False), rel=1e-12
    )


def test_gpt3_forward_flops_and_korthikanti_activations():
    gpt3 = load_model("gpt3-175b")
    assert gpt3.forward_flops(1, 2048) == 734_851_724_476_416
    layer = gpt3.blocks[1]
    mib = {
        (t, sp, rc): layer.activation_bytes(1, 2048, t, sp, rc) / MIB
        for t, sp, rc in [
            (1, False, "none"),
            (8, False, "none"),
            (8, True, "none"),
            (8, False, "selective"),
            (8, True, "selective"),
            (1, False, "full"),
        ]
    }
    assert list(mib.values()) == [2736, 552, 342, 312, 102, 48]


def test_zero_memory_example():
    psi, d = 7.5e9, 64
    assert [state_bytes_per_param(z, d) * psi / 1e9 for z in range(4)] == [120, 31.40625, 16.640625, 1.875]


def test_table1_expert_configuration_tflops():
    """Expert (t, p) with full recompute and b = 1 as published, default eta curve (fitted on the odd
    rows only, benchmarks/calibrate_dnn_eta.py): every row within the issue's 25%."""
    for name, t, p, n, batch, published, _, _ in TABLE1:
        model = load_model(name)
        train = Training(batch, 2048, fix={"tp": t, "pp": p, "recompute": "full", "mb": 1})
        result = plan(model, load_cluster(f"dgx-a100-80g:{n // 8}x8"), train, top=1)
        achieved = megatron_flops(batch, 2048, model.meta["layers"], model.meta["hidden"], 51200)
        tflops = achieved / n / result.objective / 1e12
        assert abs(tflops / published - 1) <= 0.25, (name, tflops)
        assert result.extras["predicted"]["tflops_per_gpu"] == pytest.approx(tflops, rel=0.02)


def test_eta_curve_fixes_the_small_rows():
    """The flat eta over-predicts the 1.7B row by more than 25%; the curve (not fitted on it) does not."""
    name, t, p, n, batch, published, _, _ = TABLE1[0]
    model, cluster = load_model(name), load_cluster(f"dgx-a100-80g:{n // 8}x8")
    fix = {"tp": t, "pp": p, "recompute": "full", "mb": 1}
    achieved = megatron_flops(batch, 2048, model.meta["layers"], model.meta["hidden"], 51200)
    flat = plan(model, cluster, Training(batch, 2048, eta=0.58, eta_h0=0.0, fix=fix), top=1).objective
    curve = plan(model, cluster, Training(batch, 2048, fix=fix), top=1).objective
    assert achieved / n / flat / 1e12 > 1.25 * published
    assert abs(achieved / n / curve / 1e12 / published - 1) <= 0.10


def test_table1_expert_tp_pp_close_to_free_optimum():
    """Within what Megatron-LM ran for Table 1 (its distributed optimizer is ZeRO-1; ZeRO-3 is
    Table 2's separate comparison), the experts' (t, p) is within 15% of the free optimum."""
    for name, t, p, n, batch, *_ in TABLE1:
        model, cluster = load_model(name), load_cluster(f"dgx-a100-80g:{n // 8}x8")
        free = plan(model, cluster, Training(batch, 2048, zero=(0, 1)), top=1).objective
        pinned = plan(model, cluster, Training(batch, 2048, zero=(0, 1), fix={"tp": t, "pp": p}), top=1)
        assert free <= pinned.objective <= 1.15 * free, name
        assert pinned.extras["plan"]["tp"] == t and pinned.extras["plan"]["pp"] == p


# Megatron SC'21 Table 2: model, batch, GPUs, PTD-P (t, p), published TF/s per GPU for ZeRO-3 without
# model parallelism and for PTD-P. The 768-GPU row fitted cost.ZERO3_OVERLAP; these rows validate it.
TABLE2 = [
    ("gpt3-175b", 1536, 384, (8, 12), 144, 153),
    ("gpt3-175b", 1536, 1536, (8, 12), 44, 141),
    ("megatron-529.6b", 2240, 2240, (8, 35), 48, 159),
]


@pytest.mark.parametrize("row", TABLE2, ids=[f"{r[0]}-{r[2]}" for r in TABLE2])
def test_table2_ptdp_against_zero3(row):
    """The brief's T4: PTD-P over ZeRO-3 at least 2x at the largest GPU counts, within 1.3x at the
    smallest (published 3.2x, 3.3x and 1.06x); each predicted TF/s within 25% of the published."""
    name, batch, gpus, (t, p), zero3_published, ptdp_published = row
    model, cluster = load_model(name), load_cluster(f"dgx-a100-80g:{gpus // 8}x8")
    zero3 = plan(model, cluster, Training(batch, 2048, fix={"tp": 1, "pp": 1, "zero": 3}), top=1)
    ptdp = plan(model, cluster, Training(batch, 2048, fix={"tp": t, "pp": p}), top=1)
    zero3_tflops = zero3.extras["predicted"]["tflops_per_gpu"]
    ptdp_tflops = ptdp.extras["predicted"]["tflops_per_gpu"]
    ratio = ptdp_tflops / zero3_tflops
    assert ratio >= 2 if ptdp_published / zero3_published >= 2 else ratio <= 1.3
    assert abs(zero3_tflops / zero3_published - 1) <= 0.25 and abs(ptdp_tflops / ptdp_published - 1) <= 0.25


@settings(max_examples=6, deadline=None)
@given(
    layers=st.integers(2, 4),
    hidden=st.sampled_from([512, 2048, 8192]),
    batch=st.sampled_from([4, 8, 16]),
    mem=st.sampled_from([0.3, 0.9]),
)
def test_bnb_equals_brute_force(layers, hidden, batch, mem):
    model = small_model(layers, hidden)
    cluster = load_cluster("dgx-a100-80g:1x2+dgx-v100-16g:1x2")
    train = Training(
        batch,
        1024,
        memory_fraction=mem,
        memory_reserve=0,
        microbatches=(1, 2, 4),
        schedules=("1f1b", "gpipe"),
    )
    bnb = PlanSearch(model, cluster, train).search()
    exhaustive = ExhaustivePlanSearch(model, cluster, train).search()
    oracle = brute_force(PlanSearch(model, cluster, train, rank=False))
    if math.isinf(oracle):
        assert bnb.objective is None or math.isinf(bnb.objective)
    else:
        assert bnb.objective == pytest.approx(oracle, rel=1e-12)
        assert exhaustive.objective == pytest.approx(oracle, rel=1e-12)


def test_bnb_equals_exhaustive_with_fewer_nodes():
    model = small_model(8, 4096)
    cluster = load_cluster("dgx-a100-80g:2x4")
    train = Training(64, 1024, microbatches=(1, 2))
    bnb = PlanSearch(model, cluster, train).search()
    exhaustive = ExhaustivePlanSearch(model, cluster, train).search()
    assert bnb.objective == exhaustive.objective
    assert bnb.nodes * 5 < exhaustive.nodes


@settings(max_examples=25, deadline=None)
@given(
    layers=st.integers(3, 7),
    hidden=st.sampled_from([1024, 4096, 12288]),
    batch=st.sampled_from([16, 32, 128]),
    cluster=st.sampled_from(["dgx-a100-80g:1x8", "dgx-a100-80g:2x4", "dgx-v100-16g:2x4"]),
    mem=st.sampled_from([0.3, 0.6, 0.9]),
    grad_bytes=st.sampled_from([2.0, 4.0, 8.0]),
)
def test_bnb_equals_exhaustive_deep_pipelines(layers, hidden, batch, cluster, mem, grad_bytes):
    """One device group, d > 1, up to 7 stages: where the min-max partition and Jensen terms bite."""
    model = small_model(layers, hidden)
    train = Training(
        batch, 1024, memory_fraction=mem, memory_reserve=0, microbatches=(1, 2, 4), grad_bytes=grad_bytes
    )
    bnb = PlanSearch(model, load_cluster(cluster), train).search(prune_level=False)
    exhaustive = ExhaustivePlanSearch(model, load_cluster(cluster), train).search(prune_level=False)
    if same_optimum(bnb, exhaustive):
        assert bnb.nodes <= exhaustive.nodes


@settings(max_examples=20, deadline=None)
@given(
    layers=st.integers(3, 9),
    hidden=st.sampled_from([1024, 4096, 12288]),
    batch=st.sampled_from([16, 64]),
    cluster=st.sampled_from(["dgx-a100-80g:1x8", "dgx-a100-80g:2x4", "dgx-v100-16g:2x4",
                             "dgx-a100-80g:1x4+dgx-v100-32g:1x4", "dgx-h100-80g:1x4+dgx-a100-40g:1x4"]),
    mem=st.sampled_from([0.3, 0.6, 0.9]),
    replication=st.booleans(),
)
def test_seed_limits_are_plans_of_their_shapes(layers, hidden, batch, cluster, mem, replication):
    """Each shape's seed limit (the min-max cut's leaf or a walk's first leaf) is the time of a real
    plan of that shape: never below the shape's best in the exhaustive tree, so it prunes nothing the
    answer needs; and the cut finds a plan wherever a one-part shape has one. The cut of a shape
    of several parts (GPU kinds, DAPPLE's widths) is a real plan too, where it finds one (it
    need not: its parts' stages come in two orders only)."""
    model = small_model(layers, hidden)
    train = Training(batch, 1024, memory_fraction=mem, memory_reserve=0, microbatches=(1, 2, 4),
                     stage_replication=replication)
    search = PlanSearch(model, load_cluster(cluster), train, top=3)
    exhaustive = ExhaustivePlanSearch(model, load_cluster(cluster), train)
    exhaustive.search(prune_level=False)
    for sid, seconds in search.seeded.items():
        assert seconds >= exhaustive.found[sid] * (1 - 1e-12)
    for sid in exhaustive.found:
        sh = search.shapes[sid]
        if sh.mode == "pipe":
            cut = search._cut_plan(sid)[0]
            assert cut >= exhaustive.found[sid] * (1 - 1e-12), sh
            if len(sh.parts) == 1:
                assert cut < math.inf, sh


@pytest.mark.parametrize("replication", [False, True])
def test_the_cut_finds_plans_of_shapes_of_several_parts(replication):
    """On a small model on 4 A100 + 4 V100 GPUs, the cut finds a plan in every pipe shape of
    several parts (two GPU kinds; with --stage-replication, two widths too) that has one, and the
    shape's best in at least half of them (stop 52: 134 of 191, and 218 of 395)."""
    model = small_model(6, 4096)
    cluster = load_cluster("dgx-a100-80g:1x4+dgx-v100-32g:1x4")
    train = Training(64, 1024, memory_fraction=0.9, memory_reserve=0, microbatches=(1, 2, 4),
                     stage_replication=replication)
    search = PlanSearch(model, cluster, train, top=3)
    exhaustive = ExhaustivePlanSearch(model, cluster, train)
    exhaustive.search(prune_level=False)
    several = [(search._cut_plan(sid)[0], best) for sid, best in exhaustive.found.items()
               if search.shapes[sid].mode == "pipe" and len(search.shapes[sid].parts) > 1]
    assert len(several) > 100
    assert all(best * (1 - 1e-12) <= cut < math.inf for cut, best in several)
    assert sum(cut <= best * (1 + 1e-9) for cut, best in several) >= len(several) / 2


@pytest.mark.parametrize("model, cluster, batch", [
    ("megatron-1t", "dgx-a100-80g:64x8", 2048),           # memory binds: the stage floor raises most roots
    ("llama3-70b", "dgx-a100-80g:64x8", 2048),
    ("megatron-18.4b", "dgx-a100-80g:4x8+dgx-v100-32g:4x8", 512),
])
def test_every_shape_the_seed_leaves_open_has_its_stage_floor(model, cluster, batch):
    """The constructor adds the one-part stage floor to a root bound only where the seed's bar does
    not prune that root (``_stage_floored``): every shape under the bar has the root bound it would
    have with every floor computed, and every other is above the bar without it."""
    search = PlanSearch(load_model(model), load_cluster(cluster), Training(batch, 2048), top=3)
    eager = copy.copy(search)
    eager.root_lb, eager.stage_floors, eager._staged = list(search.root_lb), list(search.stage_floors), \
        list(search._staged)
    left = 0
    for sid, bound in enumerate(search.root_lb):
        eager._stage_floored(sid)
        if bound * SAFETY <= search.seed_bar:
            assert bound == eager.root_lb[sid]
        else:
            assert bound <= eager.root_lb[sid]
            left += eager.root_lb[sid] > bound
    assert search.seed_bar < math.inf and left > 0  # some floors are left out, and they would raise roots


SITES = json.dumps({"groups": [{"preset": "dgx-a100-80g", "name": "a", "nodes": 1, "site": "x"},
                                {"preset": "dgx-v100-32g", "name": "b", "nodes": 1, "site": "y"}],
                     "links": [{"sites": ["x", "y"], "mbps": 1000, "latency_ms": 10}]})


@pytest.mark.parametrize("cluster, settings", [
    ("dgx-a100-80g:1x4+dgx-v100-32g:1x4", {}),
    ("dgx-a100-80g:1x2+dgx-v100-16g:1x2+dgx-h100-80g:1x2", {"uniform_recompute": True}),
    ("dgx-a100-80g:1x8+dgx-v100-32g:1x8", {"mixed_tp": True}),
    ("dgx-a100-80g:2x4+dgx-v100-32g:1x4", {"stage_replication": True}),
    ("dgx-a100-80g:1x8", {"schedules": ("1f1b", "interleaved", "kfkb", "gpipe", "terapipe")}),
    ("sites", {"wan_compression": (1.0, 10.0)}),
])
def test_shapes_that_share_a_rank_key_share_their_root_bounds(cluster, settings, tmp_path):
    """The constructor computes one memory floor and root bound per ``rank_key`` (shapes that differ
    only in schedule, at one Eq. 1 divisor and c1): each is what the shape's own computation gives,
    on one site and across sites (where the schedule's exposed sends count)."""
    if cluster == "sites":
        cluster = str(tmp_path / "sites.json")
        Path(cluster).write_text(SITES)
    model = small_model(6, 4096)
    train = Training(64, 1024, microbatches=(1, 2), memory_fraction=0.4, **settings)
    search = PlanSearch(model, load_cluster(cluster), train, top=3, rank=False)
    search.floors = [search.memory_floor(i) for i in range(len(search.shapes))]
    search.stage_floors = [-math.inf if need <= usable else math.inf for need, usable in search.floors]
    own = [search._bound_state(i, 0, search.start_counts(i), *search.zero_state(i), reached=False)
           if need <= usable else math.inf for i, (need, usable) in enumerate(search.floors)]
    shared = PlanSearch(model, load_cluster(cluster), train, top=3, memo=False)
    assert shared.floors == search.floors
    for sid, bound in enumerate(own):  # the one-part stage floor, added after, only raises a bound
        assert shared.root_lb[sid] == bound or shared._staged[sid] and shared.root_lb[sid] >= bound, sid
    keys = {search.rank_key(i) for i in range(len(search.shapes))}
    # some shapes do share one; across sites none (every schedule exposes its own sends)
    assert (len(keys) < len(search.shapes)) == (settings.get("wan_compression") is None)


@pytest.mark.parametrize("cluster, memory", [
    ("dgx-a100-80g:1x4+dgx-v100-32g:1x4", 0.4),
    ("dgx-a100-80g:1x4+dgx-v100-32g:1x4", 0.1),             # memory binds: in-flight counts matter
    ("dgx-a100-80g:1x2+dgx-v100-16g:1x2+dgx-h100-80g:1x2", 0.2),
])
def test_a_siblings_several_part_floor_is_at_most_the_shapes_own(cluster, memory):
    """``_sibling_parts_floor`` (what prunes a start node before its own several-part floor is
    computed) never exceeds that shape's own floor, whichever sibling's floor is known first, and
    it is finite for some kFkB or GPipe shape once the 1F1B ones are known."""
    model = small_model(6, 4096)
    train = Training(64, 1024, microbatches=(1, 2), memory_fraction=memory)
    search = PlanSearch(model, load_cluster(cluster), train, top=3, rank=False)
    several = [i for i, sh in enumerate(search.shapes) if sh.mode == "pipe" and len(sh.parts) > 1]
    own = {i: search._bisect_parts_floor(i) for i in several}
    for order in (several, several[::-1]):
        search._parts_floors.clear()
        search._sibling_floors.clear()
        for sid in order:
            assert search._sibling_parts_floor(sid) <= own[sid], search.shapes[sid]
            search._bisect_parts_floor(sid)
    search._sibling_floors.clear()
    for sid in several:
        if search.shapes[sid].schedule == "1f1b":
            known = search._sibling_floors.setdefault(search.rank_key(sid), [])
            known.append((search._inflight(sid), sid))
    assert any(search._sibling_parts_floor(i) > -math.inf for i in several
               if search.shapes[i].schedule in ("kfkb", "gpipe"))


def test_a_shape_no_plan_fits_keeps_an_infinite_root_bound_without_a_seed():
    """Without a seed's bar (the exhaustive tree) the constructor adds every stage floor; a shape
    whose model state alone overfills its GPUs keeps its infinite root bound, whatever its mode."""
    model = small_model(6, 12288)
    for cluster in ("dgx-a100-80g:1x8", "dgx-a100-80g:1x4+dgx-v100-16g:1x4"):
        search = ExhaustivePlanSearch(model, load_cluster(cluster), Training(64, 1024, memory_fraction=0.05))
        full = [i for i, (need, usable) in enumerate(search.floors) if need > usable]
        assert full and all(search.root_lb[i] == math.inf for i in full)
        assert any(search.shapes[i].mode == "hap" or len(search.shapes[i].parts) > 1 for i in full) \
            or "+" not in cluster


@pytest.mark.parametrize("cluster, many", [
    ("dgx-a100-80g:1x4+dgx-v100-32g:1x4", 3),
    ("dgx-a100-80g:1x4+dgx-v100-32g:1x4", 12),
    ("dgx-a100-80g:1x2+dgx-v100-16g:1x2+dgx-h100-80g:1x2", 6),
])
def test_the_seed_dives_into_the_shapes_of_least_start_bounds(cluster, many):
    """``_seed_shapes`` computes start bounds only as far as the root bounds reach, and picks what
    ranking all 16 x many shapes of least root bound by start bound picks; given the shapes tried
    before, it passes over them."""
    model = small_model(6, 4096)
    train = Training(64, 1024, microbatches=(1, 2), memory_fraction=0.4)
    search = PlanSearch(model, load_cluster(cluster), train, top=3)
    every = range(len(search.shapes))
    by_root = sorted(every, key=lambda i: (search.root_lb[i], i))
    first = by_root[: 16 * many]
    ranked = sorted(first, key=lambda i: (search._start_bound(i), i))[:many]
    search.seed_bar = math.inf  # what the seed found would stop the walk
    tried: set = set()
    assert list(search._seed_shapes(many, every, tried)) == ranked
    assert tried == set(ranked)
    assert any(search._start_bound(i) > search.root_lb[i] for i in first)  # it ranks by something new
    rest = [i for i in by_root if i not in tried][: 16 * many]
    assert list(search._seed_shapes(many, every, tried)) == sorted(
        rest, key=lambda i: (search._start_bound(i), i))[:many]
    # with a bar, only the shapes whose start bounds are under it
    search.seed_bar = bar = search._start_bound(ranked[len(ranked) // 2])
    assert list(search._seed_shapes(many, every, set())) == [
        i for i in ranked if search._start_bound(i) < bar] != ranked


FIVE_KINDS = "dgx-a100-80g:1x8+dgx-a100-40g:1x8+dgx-h100-80g:1x8+dgx-v100-32g:1x8+dgx-v100-16g:1x8"


def test_the_seed_visits_every_set_of_groups_and_widens_on_the_best(monkeypatch):
    """On five single-node kinds the shapes of least root bound span four or five of them and seed
    a bar 19% above the third best plan (0.3605 s against 0.3039 s); the subset round seeds the
    sets of fewer groups, whose plans are the best, and the bar comes within 5% of it. The plans
    are the search's, whatever the seed."""
    model, cluster, train = load_model("megatron-1.7b"), load_cluster(FIVE_KINDS), Training(64, 2048)
    search = PlanSearch(model, cluster, train, top=3)
    result = search.search()
    third = result.solutions[2][0]
    assert search.seed_bar <= 1.05 * third
    groups = {tuple(sorted({part[0] for part in sh.parts})) for sh in search.shapes}
    seeded = {tuple(sorted({part[0] for part in search.shapes[sid].parts})) for sid in search.seeded}
    assert len(groups) == 31 and len(seeded) >= 10 and min(map(len, seeded)) <= 2
    monkeypatch.setattr(PlanSearch, "_seed_layouts", lambda self, *args: None)  # the round after it
    assert PlanSearch(model, cluster, train, top=3).seed_bar <= 1.05 * third
    monkeypatch.setattr(PlanSearch, "_seed_subsets", lambda self, *args: None)
    assert PlanSearch(model, cluster, train, top=3).seed_bar > 1.15 * third


FOUR_SMALL = "dgx-a100-80g:1x4+dgx-v100-16g:1x4+dgx-h100-80g:1x4+dgx-a100-40g:1x4"


@pytest.mark.parametrize("hidden", [
    2048,   # the subset round lowers the bar to the third best plan exactly
    1024,   # ... to within 5% of it
])
def test_plans_on_several_kinds_match_the_exhaustive_tree(hidden, monkeypatch):
    """Four GPU kinds, where the seed's subset round seeds shapes that the rounds before it left
    out and lowers the bar: the top 3 are the exhaustive tree's."""
    model = small_model(4, hidden)
    train = Training(16, 1024, memory_fraction=0.5, memory_reserve=0, microbatches=(1, 2))
    search = PlanSearch(model, load_cluster(FOUR_SMALL), train, top=3)
    bnb = search.search()
    exhaustive = ExhaustivePlanSearch(model, load_cluster(FOUR_SMALL), train, top=3).search()
    assert len(bnb.solutions) == 3
    assert [v for v, _ in bnb.solutions] == pytest.approx([v for v, _ in exhaustive.solutions], rel=1e-9)
    assert search.seed_bar >= bnb.solutions[2][0] * (1 - 1e-9)
    monkeypatch.setattr(PlanSearch, "_seed_subsets", lambda self, *args: None)
    assert PlanSearch(model, load_cluster(FOUR_SMALL), train, top=3).seed_bar > search.seed_bar


def test_a_slot_on_two_parts_keeps_the_floors_of_its_own_stage_counts():
    """A slot (shape, part, blocks, stage index, previous part) is reached with different stage
    counts per part in a two-group pipe shape; its cached floors once came from the first counts
    that reached it, which cut the optimum here (3.6358 against 3.6219 s)."""
    model = small_model(5, 8192)
    train = Training(128, 1024, memory_fraction=0.4, memory_reserve=0, microbatches=(1, 2, 4),
                     recompute=("none", "full"), zero=(0,), sequence_parallel=False)
    cluster = "dgx-a100-80g:1x4+dgx-v100-16g:1x4"
    oracle = ExhaustivePlanSearch(model, load_cluster(cluster), train).search(prune_level=False)
    assert oracle.objective == pytest.approx(3.621887986389326, rel=1e-9)
    assert same_optimum(PlanSearch(model, load_cluster(cluster), train).search(prune_level=False), oracle)


@pytest.mark.parametrize(
    "layers, cluster, batch, mem, tp_layers",
    [
        (4, "dgx-a100-80g:1x2+dgx-v100-16g:1x2", 8, 0.9, False),  # pipe stages on two groups, and hap
        (3, "dgx-a100-80g:1x2+dgx-v100-16g:1x2", 16, 0.3, False),  # memory-starved: options drop out
        (8, "dgx-a100-80g:2x4", 64, 0.9, False),
        (5, "dgx-a100-80g:1x4+dgx-v100-32g:1x4", 32, 0.9, False),
        (5, "dgx-v100-16g:2x4", 32, 0.1, True),  # per-layer TP's options among them
    ],
)
def test_exhaustive_node_count_is_exact(layers, cluster, batch, mem, tp_layers):
    """The combinatorial count (treecount.py) equals a real --exhaustive enumeration's node count."""
    model = small_model(layers, 2048)
    train = Training(batch, 1024, memory_fraction=mem, memory_reserve=0, microbatches=(1, 2, 4),
                     tp_layers=tp_layers)
    walked = ExhaustivePlanSearch(model, load_cluster(cluster), train).search(prune_level=False).nodes
    counted = exhaustive_nodes(PlanSearch(model, load_cluster(cluster), train))
    assert counted == walked
    assert exhaustive_nodes(PlanSearch(model, load_cluster(cluster), train), filtered=False) > counted
    if tp_layers:  # the widened options are in the tree
        narrow = replace(train, tp_layers=False)
        assert counted > exhaustive_nodes(PlanSearch(model, load_cluster(cluster), narrow))


@pytest.mark.parametrize("experts", [0, 2])
def test_stage_options_match_stage_cost(experts):
    """The batched stage arithmetic of the search equals stage_cost (through make) for every option,
    for a dense model and for a mixture of experts (expert state and gradients over d/ep replicas)."""
    model = transformer("small", layers=5, hidden=4096, heads=16, vocab=32000, seq=1024, experts=experts)
    cluster = load_cluster("dgx-a100-80g:1x4+dgx-v100-16g:1x4")
    search = PlanSearch(model, cluster, Training(32, 1024, memory_fraction=0.5, microbatches=(1, 2)))
    checked = 0
    for sid, sh in enumerate(search.shapes):
        node = search.start_node(sid)
        groups = ([i for i, part in enumerate(sh.parts) for _ in range(part[1])] if sh.mode == "pipe"
                  else [None] * sh.p)
        for j, g in enumerate(groups[:-1]):
            lo, prev = node[2], node[7][-1][0] if node[7] else None
            terms = {(rc, z): rest for *rest, rc, z in search.stage_terms(sid, g, lo, lo + 1, j, prev)}
            for rc, z in search._allowed(sid):
                child = search.make(sid, node, g, 1, rc, z)
                if child is None:
                    assert (rc, z) not in terms
                    continue
                a, b, c = terms[(rc, z)]
                if sh.mode == "pipe":
                    assert child[4][0] == pytest.approx(node[4][0] + a, rel=1e-12)
                    assert child[5][0] == pytest.approx(max(node[5][0], b), rel=1e-12)
                else:
                    assert child[4] == pytest.approx(tuple(x + y for x, y in zip(node[4], a)), rel=1e-12)
                    assert child[5] == pytest.approx(tuple(max(x, y) for x, y in zip(node[5], b)), rel=1e-12)
                assert child[6] == pytest.approx(max(node[6], c), rel=1e-12)
                checked += 1
            nxt = [search.make(sid, node, g, 1, rc, z) for rc, z in search._allowed(sid)]
            nxt = [x for x in nxt if x is not None]
            if not nxt:
                break
            node = nxt[-1]
    assert checked > 300


def test_expert_state_and_gradients_live_on_the_expert_replicas():
    """With E = 2 experts on d = 8 data-parallel ranks, ep = 2: each expert is held by d/ep = 4 ranks,
    so ZeRO shards its state 4 ways (not 8) and its gradients are all-reduced over those 4 (they
    were never all-reduced)."""
    model = transformer("moe", layers=2, hidden=1024, heads=16, vocab=32000, seq=1024, experts=2, top_k=1)
    group = load_cluster("dgx-a100-80g:1x8").groups[0]
    train = Training(64, 1024)
    tab = StageTables(model, group, 1, 8, 1, train, ep_group_inter=False)
    blk = model.blocks[1]
    experts, dense = blk.expert_params / 2, blk.params - blk.expert_params
    assert tab.expert_replicas == 4 and tab.expert[2] - tab.expert[1] == pytest.approx(experts)
    link = (8, 1, group.intra_bandwidth * 0.7, group.inter_bandwidth * 0.7, group.intra_latency,
            group.inter_latency)
    cost = stage_cost(tab, 1, 2, "none", 1, 0, 1, 1, "1f1b", 1, 1, train, link, None, 3)
    state = (dense * state_bytes_per_param(1, 8, 2, 4, 12) + experts * state_bytes_per_param(1, 4, 2, 4, 12))
    assert cost.memory - tab.act["none"][2] + tab.act["none"][1] == pytest.approx(state, rel=1e-12)
    grads = hierarchical_allreduce(dense * 4, *link) + allreduce(experts * 4, 4, *link[2:3], link[4])
    touched = 2 * 18 * (dense / 8 + experts / 4) / group.hbm_bandwidth
    assert cost.exposed == pytest.approx(max(0.0, grads - cost.tau * 2 / 3) + touched, rel=1e-12)


@pytest.mark.parametrize("cluster, batch", [("dgx-a100-80g:8x8", 256), ("dgx-a100-80g:2x8", 64)])
def test_expert_parallelism_is_searched(cluster, batch):
    """ep is a search dimension: the free plan's time is the least of the searches with ep fixed to
    each divisor of gcd(d, E), and the free plan names the ep it was costed with (Mixtral, E = 8)."""
    model, cl = load_model("mixtral-8x7b"), load_cluster(cluster)
    free = plan(model, cl, Training(batch, 4096), top=1)
    fixed = {ep: plan(model, cl, Training(batch, 4096, fix={"ep": ep}), top=1) for ep in (1, 2, 4, 8)}
    assert free.objective == min(r.objective for r in fixed.values())
    chosen = free.extras["plan"]["ep"]
    assert fixed[chosen].objective == free.objective
    assert all(r.extras["plan"]["ep"] == ep for ep, r in fixed.items() if not math.isinf(r.objective))
    assert free.extras["plan"]["dp"] % chosen == 0 and 8 % chosen == 0
    assert len({r.objective for r in fixed.values()}) > 1          # the choice matters


def test_an_all_to_all_across_nodes_costs_more():
    """The ep ranks of an all-to-all are t apart: within a node while ep * t <= 8, over the network
    beyond. The same MoE block at ep = 8 costs more time at t = 2 (16 ranks span) than ep = 4."""
    model = transformer("moe", layers=2, hidden=4096, heads=32, vocab=32000, seq=4096, experts=8, top_k=2)
    group = load_cluster("dgx-a100-80g:4x8").groups[0]
    train = Training(256, 4096)

    def a2a_share(ep: int) -> float:
        tab = StageTables(model, group, 2, 16, 1, train, ep_group_inter=True, ep=ep)
        dense = StageTables(model, group, 2, 16, 1, train, ep_group_inter=True, ep=1)
        return (tab.time["none"][2] - tab.time["none"][1]) - (dense.time["none"][2] - dense.time["none"][1])

    intra, inter = a2a_share(4), a2a_share(8)
    assert 0 < intra < inter
    assert inter / intra > group.intra_bandwidth / group.inter_bandwidth / 2   # bandwidth-bound


@pytest.mark.parametrize("model", [
    transformer("moe", layers=3, hidden=2048, heads=16, vocab=32000, seq=2048, experts=8, top_k=2),
    transformer("dense", layers=3, hidden=2048, heads=16, vocab=32000, seq=2048),
])
def test_tables_copied_to_another_data_parallel_degree_are_the_tables_built_there(model):
    """The search builds a group's tables once per (t, b, ep, c, slices) and copies them to every
    other d (``StageTables.with_replicas``): with ep given, a MoE block costs alike at every d,
    and the copy's replica counts and rings are those a build at that d gives."""
    cluster = load_cluster("dgx-a100-80g:4x8")
    group, train = cluster.groups[0], Training(256, 2048)
    search = PlanSearch(model, cluster, train, rank=False)
    for d, ep, inter in ((2, 2, False), (8, 2, True), (16, 4, True), (4, 1, False)):
        first = StageTables(model, group, 2, 32 // d, 1, train, ep_group_inter=True, ep=ep)
        copied, built = first.with_replicas(d, inter), StageTables(model, group, 2, d, 1, train, inter, ep=ep)
        assert {k: v for k, v in vars(copied).items() if k != "_arrays"} == \
            {k: v for k, v in vars(built).items() if k != "_arrays"}, (d, ep)
        assert search._table(0, 2, d, 1, ep, 1, 1).expert_replicas == (d // ep if model.moe else d)


def test_expert_parallelism_needs_experts():
    argv = ["dnn-plan", "--model", "megatron-1.7b", "--cluster", "dgx-a100-80g:1x8", "--global-batch", "64",
            "--fix", "ep=2"]
    out = subprocess.run([*yewpy_cmd(), *argv], capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr == ("yewpy: error: --fix ep=2: megatron-1.7b has no experts "
                          "(expert parallelism is for MoE models)\n")


def dnn_json(*argv: str) -> dict:
    out = subprocess.run([*yewpy_cmd(), "dnn-plan", *argv, "--json", "--quiet"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_long_sequences_split_over_context_parallel_ranks():
    """The issue's case: Llama-3-8B at 256k tokens fell back to tp8 pp8 dp1. From 16k tokens on the CLI
    searches context parallelism: the plan splits each sequence over cp ranks and is faster than the
    best plan without it."""
    argv = ["--model", "llama3-8b", "--cluster", "dgx-h100-80g:8x8", "--global-batch", "64",
            "--seq", "262144"]
    free, without = dnn_json(*argv), dnn_json(*argv, "--max-cp", "1")
    assert without["plan"]["cp"] == 1 and without["plan"]["tp"] == 8
    best = free["plan"]
    assert best["cp"] > 1 and 262144 % (2 * best["cp"]) == 0
    assert free["objective"] < without["objective"] / 2


@pytest.mark.parametrize("layers, cluster, batch, mem", [
    (4, "dgx-a100-80g:2x4", 8, 0.9), (6, "dgx-a100-80g:1x8", 16, 0.3), (3, "dgx-v100-16g:2x4", 8, 0.6)])
def test_bnb_equals_exhaustive_with_context_parallelism(layers, cluster, batch, mem):
    model = transformer("long", layers=layers, hidden=2048, heads=16, vocab=32000, seq=16384)
    train = Training(batch, 16384, memory_fraction=mem, memory_reserve=0, microbatches=(1, 2), max_cp=8)
    search = PlanSearch(model, load_cluster(cluster), train)
    assert any(sh.c > 1 for sh in search.shapes)
    bnb = search.search(prune_level=False)
    exhaustive = ExhaustivePlanSearch(model, load_cluster(cluster), train).search(prune_level=False)
    same_optimum(bnb, exhaustive)


def test_a_context_parallel_rank_holds_a_cth_of_the_work():
    """c ranks share every sequence: each computes 1/c of the FLOPs, keeps s/c tokens' activations
    (attending to all s), and waits for K/V only where the attention core cannot hide the ring."""
    model = transformer("long", layers=2, hidden=4096, heads=32, vocab=32000, seq=65536, kv_heads=8)
    group = load_cluster("dgx-h100-80g:1x8").groups[0]
    blk = model.blocks[1]
    for seq, hidden_ring in ((65536, True), (1024, False)):
        train = Training(8, seq, sequence_parallel=False, pass_overhead=0.0)  # work alone, no fixed cost
        one = StageTables(model, group, 1, 1, 1, train, ep_group_inter=False)
        four = StageTables(model, group, 1, 1, 1, train, ep_group_inter=False, c=4)
        for rc in ("none", "selective", "full"):
            whole = one.flops[rc][2] - one.flops[rc][1]
            assert four.flops[rc][2] - four.flops[rc][1] == pytest.approx(whole / 4)
        assert four.act["none"][2] - four.act["none"][1] == pytest.approx(
            blk.activation_bytes(1, seq / 4, 1, False, "none", context=seq))
        compute = (one.time["none"][2] - one.time["none"][1]) / 4
        if hidden_ring:
            assert four.time["none"][2] - four.time["none"][1] == pytest.approx(compute)
        else:
            assert four.time["none"][2] - four.time["none"][1] > compute * 1.01


@pytest.mark.parametrize("argv, message", [
    (["--model", "llama3-8b", "--seq", "4096", "--fix", "cp=3"],
     "--fix cp=3: the sequence (4096 tokens) must split into 2 x cp equal chunks (Megatron-LM's "
     "load-balanced causal split)"),
    (["--model", "mixtral-8x7b", "--fix", "cp=2"],
     "--fix cp=2: context parallelism is not planned for MoE models"),
    (["--model", "llama3-8b", "--max-cp", "0"], "--max-cp must be an integer in [1, 1,048,576], got 0"),
    (["--model", "llama3-8b", "--pass-overhead", "-1"], "--pass-overhead must be in [0, 1e+06], got -1.0"),
    (["--model", "llama3-8b", "--fix", "cp=2", "--launcher", "deepspeed"],
     "--launcher deepspeed plans pure data parallelism: no context parallelism (cp=1)"),
])
def test_context_parallel_options_are_checked(argv, message):
    argv += ["--cluster", "dgx-a100-80g:2x8", "--global-batch", "64"]
    out = subprocess.run([*yewpy_cmd(), "dnn-plan", *argv], capture_output=True, text=True)
    assert (out.returncode, out.stderr) == (2, f"yewpy: error: {message}\n")


def test_a_pass_overhead_makes_small_gemms_cost_more_than_their_flops():
    """--pass-overhead adds a fixed time to every block pass (forward, backward x2), so per sample a
    micro-batch of 2 costs less than one of 1, and a narrower per-GPU width (t = 8) loses a larger
    share than t = 1. With no overhead a block without TP takes time exactly proportional to b (with
    TP, the all-reduces' latency is per pass)."""
    model = small_model(4, 4096)
    group = load_cluster("dgx-a100-80g:1x8").groups[0]

    def per_sample(t: int, b: int, overhead: float) -> float:
        train = Training(64, 2048, pass_overhead=overhead)
        tab = StageTables(model, group, t, 1, b, train, ep_group_inter=False)
        return (tab.time["none"][3] - tab.time["none"][1]) / b

    losses = []
    for t in (1, 8):
        if t == 1:
            assert per_sample(t, 2, 0.0) == pytest.approx(per_sample(t, 1, 0.0), rel=1e-12)
        assert per_sample(t, 2, 50e-6) < per_sample(t, 1, 50e-6)
        bare = per_sample(t, 1, 0.0)
        assert per_sample(t, 1, 50e-6) == pytest.approx(bare + 2 * 3 * 50e-6, rel=1e-12)
        losses.append(per_sample(t, 1, 50e-6) / bare)
    assert losses[1] > losses[0]


# Two readings of Megatron SC'21 Fig. 16's 91B GPT (the paper gives no layer count): h 8192 with 112
# layers, or h 10240 with 72; both are 91B by Eq. 2.
FIG16_MODELS = [(112, 8192, 64), (72, 10240, 80)]


@pytest.mark.parametrize("layers, hidden, heads", FIG16_MODELS)
def test_fig16_best_micro_batch_is_two(layers, hidden, heads):
    """Megatron SC'21 Fig. 16: for the 91B model at (t, p) = (8, 8) the best micro-batch is 2 (a
    larger one buys GEMM efficiency with a longer pipeline bubble). The default pass overhead is the
    least that predicts it (benchmarks/calibrate_dnn_eta.py); without it h 10240 picks b = 1."""
    model = transformer("gpt-91b", layers=layers, hidden=hidden, heads=heads, vocab=51200, seq=2048)
    cluster = load_cluster("dgx-a100-80g:8x8")

    def seconds(b: int, **kw: float) -> float:
        train = Training(512, 2048, fix={"tp": 8, "pp": 8, "mb": b, "schedule": "1f1b"}, **kw)
        return plan(model, cluster, train, top=1).objective

    times = {b: seconds(b) for b in (1, 2, 4, 8)}
    assert min(times, key=times.get) == 2, times
    if hidden == 10240:
        assert seconds(1, pass_overhead=0.0) < seconds(2, pass_overhead=0.0)


def test_every_coordination_same_plan():
    model, cluster = load_model("megatron-1.7b"), load_cluster("dgx-a100-80g:1x8+dgx-v100-32g:2x4")
    train = Training(64, 2048)
    plans = [plan(model, cluster, train, top=2, coordination=c, **p).extras for c, p in COORDINATIONS]
    assert all(x["plan"] == plans[0]["plan"] and x["top"] == plans[0]["top"] for x in plans)


def test_mixed_cluster_no_worse_than_a100_part():
    model, train = load_model("megatron-18.4b"), Training(512, 2048)
    mixed = plan(model, load_cluster("dgx-a100-80g:2x8+dgx-v100-32g:2x8"), train, top=1).objective
    alone = plan(model, load_cluster("dgx-a100-80g:2x8"), train, top=1).objective
    assert mixed <= alone


def test_hap_shares_water_filling_matches_linprog():
    from scipy.optimize import linprog

    A, X, d, M = [0.5, 1.0, 0.2], [1.0, 2.5, 0.7], [2, 3, 1], 40
    # variables m_1..m_3, lambda: minimise lambda, A_c + m_c X_c <= lambda, sum d_c m_c = M, m_c >= 1
    res = linprog(
        [0, 0, 0, 1],
        A_ub=[[X[0], 0, 0, -1], [0, X[1], 0, -1], [0, 0, X[2], -1]],
        b_ub=[-a for a in A],
        A_eq=[d + [0]],
        b_eq=[M],
        bounds=[(1, None)] * 3 + [(None, None)],
    )
    assert water_fill(A, X, d, M) == pytest.approx(res.fun, rel=1e-9)
    assert water_fill([0, 50.0], [1.0, 1.0], [1, 1], 4) == pytest.approx(51.0)  # a replica at its floor
    # every replica at its floor (M = sum d): the slowest one, not inf (rounding fixed both classes,
    # and a hap shape with a plan of 0.0715 s had an infinite bound: found by the two-kind floor test)
    x0, x1 = 0.022804997739203088, 0.07150776526946107
    assert water_fill([0.0, 0.0], [x0, x1], [4, 4], 8) == pytest.approx(x1)
    worst, counts = integer_shares(A, X, d, M)
    assert sum(dc * c for dc, cs in zip(d, counts) for c in cs) == M or sum(map(sum, counts)) == M
    assert worst >= water_fill(A, X, d, M) - 1e-12


@pytest.mark.parametrize("cluster, mem", [
    ("dgx-a100-80g:1x2+dgx-v100-16g:1x2", 0.9),
    ("dgx-a100-80g:1x2+dgx-v100-16g:1x2", 0.3),   # no option fits: no plan, and an infinite bound
    ("dgx-a100-80g:1x4+dgx-v100-32g:1x2+dgx-h100-80g:1x2", 0.5),
])
def test_a_one_stage_hap_shape_is_bounded_by_its_own_plans(cluster, mem):
    """A hap shape of one stage is bounded at its start by its options' water-filled times
    (``_hap_one_stage``): at most its best plan in the exhaustive tree, and within the shares'
    rounding of it (the time-only root bounds here are 0.25-0.8 of it; on three-kind Mixtral,
    where memory binds, down to a tenth)."""
    model = small_model(4, 4096)
    train = Training(64, 1024, microbatches=(1, 2), memory_fraction=mem)
    search = ExhaustivePlanSearch(model, load_cluster(cluster), train)
    checked = 0
    for sid, sh in enumerate(search.shapes):
        if sh.mode != "hap" or sh.p != 1:
            continue
        best = min((search.objective(leaf) for leaf in search.children(search.start_node(sid))),
                   default=math.inf)
        bound = search.time_bound(search.start_node(sid))
        assert bound <= best, sh
        assert bound >= 0.95 * best, sh  # inf where no plan fits
        checked += 1
    assert checked >= 4


def test_malformed_inputs_name_the_line(tmp_path):
    path = tmp_path / "m.json"
    assert_names_line(read_model, path, '{"seq": 8,\n "blocks": [\n  {"params": 1, "boundary": 4}\n]}', 3)
    assert_names_line(
        read_model,
        path,
        '{"seq": 8,\n "blocks": [\n {"params": 1,\n "flops_per_token": 2,\n "boundary": -4}]}',
        3,
    )
    assert_names_line(read_model, path, '{"seq": 8,\n "blocks": [}', 2)
    from yewpy.apps.dnn.cluster import read_cluster

    cpath = tmp_path / "c.json"
    assert_names_line(
        read_cluster,
        cpath,
        '{"groups": [\n {"preset": "dgx-a100-80g", "nodes": 2},\n {"preset": "nope"}]}',
        3,
    )
    assert_names_line(read_cluster, cpath, '{"groups": [\n {"name": "x",\n "nodes": 0}]}', 2)
    with pytest.raises(InputError):
        read_cluster(str(tmp_path / "missing.json"))


@pytest.mark.parametrize("text", ["tp", "tp=", "tp=x", "foo=2", "schedule=zigzag", "tp=0", "zero=7",
                                  "tp=\u00b2"])
def test_bad_fix_is_usage_error(text):
    with pytest.raises(UsageError):
        parse_fix(text)


def test_text_output_names_each_plans_schedule_and_stage_times():
    """The top-K lines carry the interleave factor (plans #1 and #3 differ only in v), and every
    stage line says what its time is; the figures match the JSON plan's."""
    argv = ["dnn-plan", "--model", "gpt3-175b", "--cluster", "dgx-a100-80g:128x8", "--global-batch", "1536",
            "--quiet"]
    text = subprocess.run([*yewpy_cmd(), *argv], capture_output=True, text=True, timeout=120)
    assert text.returncode == 0, text.stderr
    plans = dnn_json(*argv[1:-1])
    lines = text.stdout.splitlines()
    alternatives = [line for line in lines if re.match(r"#\d+: ", line)]
    assert len(alternatives) == len(plans["top"]) - 1 >= 2
    for line, alt in zip(alternatives, plans["top"][1:]):
        if alt["schedule"] == "interleaved":
            assert f"interleaved v={alt['interleave']} " in line
    schedules = [(alt["schedule"], alt.get("interleave")) for alt in plans["top"]]
    assert len(set(schedules)) > 1 or len({alt["pp"] for alt in plans["top"]}) > 1
    stages = [line for line in lines if line.startswith("  stage ")]
    assert len(stages) == plans["plan"]["pp"]
    for line, stage in zip(stages, plans["plan"]["stages"]):
        assert f" {stage['ms_per_microbatch'][0]:.2f} ms per micro-batch (fwd+bwd), " in line
        assert "[" not in line


def test_cli_json_and_two_ranks(tmp_path):
    model = tmp_path / "model.json"
    model.write_text(
        json.dumps({"transformer": {"layers": 6, "hidden": 2048, "heads": 16, "vocab": 32000, "seq": 1024}})
    )
    args = [
        "dnn-plan",
        "--model",
        str(model),
        "--cluster",
        "dgx-a100-80g:1x8+dgx-v100-32g:1x8",
        "--global-batch",
        "64",
        "--top",
        "2",
        "--json",
    ]
    seq = subprocess.run([*yewpy_cmd(), *args], capture_output=True, text=True, timeout=120)
    assert seq.returncode == 0, seq.stderr
    out = json.loads(seq.stdout)
    assert {"tp", "pp", "dp", "microbatch", "schedule", "stages"} <= set(out["plan"])
    assert {"iteration_seconds", "tflops_per_gpu", "memory_gb_per_gpu"} <= set(out["predicted"])
    assert out["nodes"] > 0 and out["seconds"] > 0
    mpi = run_ranks(2, [*yewpy_cmd(), *args, "--skeleton", "stacksteal"])
    assert mpi.returncode == 0, mpi.stderr
    par = json.loads(mpi.stdout)
    assert par["ranks"] == 2 and par["plan"] == out["plan"] and par["top"] == out["top"]
    bad = subprocess.run([*yewpy_cmd(), *args[:-1], "--fix", "tp=8,bogus"], capture_output=True, text=True)
    assert bad.returncode == 2 and "bad --fix" in bad.stderr


@pytest.mark.parametrize("flags, message", [
    (["--eta", "0"], "--eta must be in (0, 1]"), (["--eta", "-1"], "--eta must be in (0, 1]"),
    (["--eta", "nan"], "--eta must be in (0, 1]"), (["--eta", "5"], "--eta must be in (0, 1]"),
    (["--seq", "0"], "--seq must be an integer in [1, 16,777,216]"),
    (["--seq", "-5"], "--seq must be an integer in [1, "),
    (["--seq", "1" + "0" * 200], "--seq must be an integer in [1, 16,777,216], got 1000"),
    (["--global-batch", "1" + "0" * 300], "--global-batch must be an integer in [1, 16,777,216], got 1000"),
    (["--top", "10001"], "--top must be an integer in [1, 10,000], got 10001"),
    (["--memory-fraction", "2"], "--memory-fraction must be in (0, 1]"),
    (["--grad-bytes", "-1"], "--grad-bytes must be in [0, 64]"),
    (["--optimizer-bytes", "inf"], "--optimizer-bytes must be in [0, 64]"),
    (["--eta-h0", "-3"], "--eta-h0 must be in [0, inf]"),
    (["--cluster", "dgx-a100-80g:2x16"], "bad cluster group 'dgx-a100-80g:2x16': a dgx-a100-80g node has 8"),
])
def test_numeric_options_out_of_range_are_one_line_errors(flags, message):
    """They ended in a traceback (--eta 0, --seq -5, nan, a 300-digit batch) or were taken silently
    (--eta 5 gave 1085 TF/s on a 312 TF/s GPU; --seq 0 became the model's default; 16 GPUs on an
    8-GPU node)."""
    args = {"--model": "gpt3-175b", "--cluster": "dgx-a100-80g:4x8", "--global-batch": "64"}
    args.update(dict(zip(flags[::2], flags[1::2])))
    out = subprocess.run([*yewpy_cmd(), "dnn-plan", *[w for kv in args.items() for w in kv]],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stderr.startswith(f"yewpy: error: {message}"), out.stderr
    assert "Traceback" not in out.stderr and out.stderr.count("\n") == 1


def test_a_preset_json_group_keeps_the_presets_node_size(tmp_path):
    """``{"preset": "dgx-a100-80g", "gpus_per_node": 64}`` was planned as a 64-GPU node with the
    DGX's NVLink numbers, which the spec string ``dgx-a100-80g:2x64`` refuses; a node described
    field by field may be any size."""
    preset = tmp_path / "preset.json"
    preset.write_text('{"groups": [\n{"preset": "dgx-a100-80g", "nodes": 2, "gpus_per_node": 64}]}\n')
    args = ["dnn-plan", "--model", "llama3-70b", "--global-batch", "2048", "--quiet", "--cluster"]
    out = subprocess.run([*yewpy_cmd(), *args, str(preset)], capture_output=True, text=True, timeout=120)
    assert (out.returncode, out.stderr) == (
        2, f"yewpy: error: {preset}:2: a dgx-a100-80g node has 8 GPUs, not 64: leave out 'preset' and give "
           "every field to describe a bigger node\n")
    node = {"name": "nvl", "nodes": 1, "gpus_per_node": 64, "memory_gib": 80, "peak_tflops": 312,
            "hbm_gbps": 2000, "intra_gbps": 300, "inter_gbps": 25, "intra_latency_us": 5,
            "inter_latency_us": 15}
    custom = tmp_path / "custom.json"
    custom.write_text(json.dumps({"groups": [node]}))
    out = subprocess.run([*yewpy_cmd(), *args, str(custom)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "on nvl:1x64" in out.stdout, out.stderr


@pytest.mark.parametrize("fix, message", [
    ("", "needs at least 91.5 GiB per GPU for its weights, gradients and optimizer state"),
    ("dp=3", "no tp x pp x dp layout using every GPU of a group of dgx-a100-80g:4x8 (98 blocks"),
])
def test_instances_no_shape_can_hold_are_refused_at_the_root(fix, message):
    """175B on 32 A100s searched 700k nodes for 29 s before saying no plan fits; now the root check
    says why before any search (its time is in docs/benchmarks.md). The floor is a lower bound:
    the BnB = exhaustive tests run with it pruning shapes."""
    args = ["--model", "gpt3-175b", "--cluster", "dgx-a100-80g:4x8", "--global-batch", "1536", "--fix", fix]
    out = subprocess.run([*yewpy_cmd(), "dnn-plan", *args], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and message in out.stderr and out.stderr.count("\n") == 1, out.stderr
    model, cluster = load_model("gpt3-175b"), load_cluster("dgx-a100-80g:4x8")
    search = PlanSearch(model, cluster, Training(1536, 2048, fix=parse_fix(fix)))
    assert all(math.isinf(lb) for lb in search.root_lb)


def test_model_files_that_are_not_utf8_or_plan_nothing_are_refused(tmp_path):
    binary = tmp_path / "m.json"
    binary.write_bytes(b"\xff\xfe{}")
    with pytest.raises(InputError, match="cannot read"):
        read_model(str(binary))
    zero = {"name": "z", "seq": 8,
            "blocks": [{"params": 0, "flops_per_token": 0, "boundary": 0, "repeat": 2}]}
    (tmp_path / "z.json").write_text(json.dumps(zero))
    with pytest.raises(InputError, match="every block has zero FLOPs"):
        read_model(str(tmp_path / "z.json"))


def test_tensor_parallelism_divides_the_attention_heads(tmp_path):
    """25 heads at tp = 8 was planned (Megatron-LM's arguments.py asserts heads % tp == 0)."""
    model = tmp_path / "h25.json"
    model.write_text(json.dumps({"transformer": {"layers": 8, "hidden": 1600, "heads": 25, "vocab": 50257,
                                                 "seq": 1024}}))
    base = [*yewpy_cmd(), "dnn-plan", "--model", str(model), "--cluster", "dgx-a100-80g:1x8",
            "--global-batch", "64", "--json", "--top", "5"]
    out = subprocess.run(base, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    plans = data["top"]
    assert plans and all(25 % p["tp"] == 0 for p in plans)
    assert data["kind"] == "topk"               # the top-K answer lists the same plans, best first
    assert [s["solution"] for s in data["solutions"]] == plans
    assert [s["objective"] for s in data["solutions"]] == [p["iteration_seconds"] for p in plans]
    refused = subprocess.run([*base, "--fix", "tp=8"], capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "must divide the model's 25 attention heads" in refused.stderr



# The brief's T6: the DeepSpeed autotuner's largest micro-batch under ZeRO-1 on 16 V100-32GB ranks,
# s = 1024, fp16 (name, layers, hidden, heads, autotuner's micro-batch)
GPT2_AUTOTUNER = [("gpt2", 12, 768, 12, 14), ("gpt2-medium", 24, 1024, 16, 6),
                  ("gpt2-large", 36, 1280, 20, 3), ("gpt2-xl", 48, 1600, 25, 1)]


@pytest.mark.parametrize("row", GPT2_AUTOTUNER, ids=[r[0] for r in GPT2_AUTOTUNER])
def test_largest_micro_batch_against_the_deepspeed_autotuner(row):
    """T6 (soft): the memory model's largest micro-batch is within [0.5x, 2x] of the autotuner's."""
    name, layers, hidden, heads, autotuner = row
    model = transformer(name, layers=layers, hidden=hidden, heads=heads, vocab=50257, seq=1024)
    cluster = load_cluster("dgx-v100-32g:2x8")

    def fits(b: int) -> bool:
        train = Training(16 * b, 1024, grad_bytes=2.0, microbatches=(b,), precision="fp16",
                         recompute=("none",), zero=(1,), fix={"tp": 1, "pp": 1, "dp": 16})
        return bool(PlanSearch(model, cluster, train).search().solutions)

    largest = max(b for b in range(1, 4 * autotuner + 1) if fits(b))
    assert fits(largest) and not fits(largest + 1)
    assert 0.5 <= largest / autotuner <= 2, largest


@pytest.mark.parametrize("rho", [1.5, 2.0, 3.0])
def test_two_device_speeds_split_the_layers_by_speed(rho, tmp_path):
    """T9: two groups whose speeds differ by rho, ample memory: the fast stage holds rho / (1 + rho) of
    the 24 layers within one; with the fast GPUs short of memory, more layers go to the slow ones."""
    model = transformer("t9", layers=24, hidden=4096, heads=32, vocab=32000, seq=2048)

    def fast_layers(fast_memory_gib: float) -> int:
        doc = {"groups": [{"preset": "dgx-a100-80g", "name": "fast", "peak_tflops": 100 * rho,
                           "memory_gib": fast_memory_gib},
                          {"preset": "dgx-a100-80g", "name": "slow", "peak_tflops": 100, "memory_gib": 640}]}
        path = tmp_path / "cluster.json"
        path.write_text(json.dumps(doc))
        train = Training(64, 2048, fix={"pp": 2, "tp": 8}, schedules=("1f1b",))
        best = plan(model, load_cluster(str(path)), train, top=1).extras["plan"]
        stage = next(s for s in best["stages"] if s["group"] == "fast")
        lo, hi = stage["blocks"]
        return hi - lo - (lo == 0) - (hi == 26)             # less the embedding and head blocks

    assert abs(fast_layers(640) - 24 * rho / (1 + rho)) <= 1
    if rho == 2.0:
        assert fast_layers(8) < 24 * rho / (1 + rho) - 1


def test_ada_grouper_picks_k_per_network_condition(tmp_path):
    """For each slowdown of the inter-node network, the reported kFkB group size and time are the best
    of independent searches over k (same tp, pp, dp, micro-batch), never worse than 1F1B, and a trace
    weights the levels by their seconds; its gain grows as the network slows."""
    from yewpy.apps.dnn.planner.adagrouper import KS, ada_grouper, read_trace, slowed

    model, cluster = load_model("megatron-3.6b"), load_cluster("dgx-v100-32g:8x8")
    train = Training(512, 2048)
    chosen = plan(model, cluster, Training(512, 2048, fix={"pp": 4}), top=1).extras["plan"]
    trace = tmp_path / "trace.txt"
    trace.write_text("# seconds factor\n10 1\n30 16\n20 4\n")
    report = ada_grouper(model, cluster, train, chosen, read_trace(str(trace)))
    rows = report["levels"]
    assert [r["slowdown"] for r in rows] == [1, 4, 16]
    fix = {"tp": chosen["tp"], "pp": chosen["pp"], "dp": chosen["dp"], "mb": chosen["microbatch"]}
    for row in rows:
        net = slowed(cluster, row["slowdown"])
        one = plan(model, net, Training(512, 2048, fix=dict(fix, schedule="1f1b")), top=1).objective
        by_k = {}
        for k in KS:
            try:
                narrowed = Training(512, 2048, fix=dict(fix, schedule="kfkb"), group_sizes=(k,))
                by_k[k] = plan(model, net, narrowed, top=1).objective
            except UsageError:                              # k not below the micro-batches, or no memory
                pass
        best = min([(one, 1)] + [(t, k) for k, t in by_k.items()])
        assert row["1f1b_seconds"] == pytest.approx(one, rel=1e-12)
        assert (row["best_seconds"], row["best_k"]) == (pytest.approx(best[0], rel=1e-12), best[1])
    gains = [r["gain"] for r in rows]
    assert gains == sorted(gains) and gains[-1] > 0.05
    weighted = (10 * gains[0] + 20 * gains[1] + 30 * gains[2]) / 60
    assert report["weighted_gain"] == pytest.approx(weighted, rel=1e-12)
    bad = tmp_path / "bad.txt"
    bad.write_text("10 1\n5 0.5\n")
    with pytest.raises(InputError, match=":2:"):
        read_trace(str(bad))
    args = ["--model", "megatron-1.7b", "--cluster", "dgx-a100-80g:1x8", "--global-batch", "8",
            "--network-slowdown", "1,0.5"]
    out = subprocess.run([*yewpy_cmd(), "dnn-plan", *args], capture_output=True, text=True)
    assert out.returncode == 2 and "--network-slowdown: '0.5'" in out.stderr


@pytest.mark.parametrize("batch", [32, 128, 512])
def test_tensor_parallelism_across_nodes_loses_to_8x8(batch):
    """The brief's T5 (Megatron SC'21 §5.4.1): the 162B model (h = 20480, L = 32) on 64 A100s, all
    t x p = 64 with t up to 32, TP across nodes costed on the network: (8, 8) is predicted best."""
    model = transformer("162b", layers=32, hidden=20480, heads=128, vocab=51200, seq=2048)
    assert model.params == pytest.approx(162.2e9, rel=1e-3)
    cluster = load_cluster("dgx-a100-80g:8x8")
    times = {}
    for t in (2, 4, 8, 16, 32):
        train = Training(batch, 2048, max_tp=32, fix={"tp": t, "pp": 64 // t})
        times[(t, 64 // t)] = plan(model, cluster, train, top=1).objective
    assert min(times, key=times.get) == (8, 8), times
    free = plan(model, cluster, Training(batch, 2048, max_tp=32, fix={"dp": 1}), top=1).extras["plan"]
    assert free["tp"] <= 8                                      # no free plan puts TP across nodes


@pytest.mark.parametrize("cluster, settings", [
    ("dgx-a100-80g:2x8+dgx-v100-32g:2x8+dgx-h100-80g:1x8", {}),
    ("dgx-a100-80g:2x8+dgx-v100-32g:2x8", {"mixed_tp": True}),
    ("dgx-a100-80g:4x8", {"uniform_recompute": True, "stage_replication": True}),
])
def test_the_sensitivity_sweep_reuses_the_searchs_shapes(cluster, settings):
    """``sensitivity`` hands the search's shapes to its replay searches on clusters whose links are
    scaled: they are the shapes those clusters enumerate themselves, in the same order (a leaf names
    its shape by index), and the replayed top plan keeps its time at x1."""
    from yewpy.apps.dnn_plan import SWEEP

    model = transformer("moe", layers=4, hidden=2048, heads=16, vocab=32000, seq=1024, experts=8)
    train = Training(256, 1024, microbatches=(1, 2), **settings)
    search = PlanSearch(model, load_cluster(cluster), train, top=3)
    result = search.search()
    for f in SWEEP:
        scaled = load_cluster(cluster).scaled(f, f)
        assert PlanSearch(model, scaled, train, rank=False).shapes == search.shapes, f
    again = PlanSearch(model, load_cluster(cluster), train, rank=False, shapes=search.shapes)
    assert again.replay(result.solutions[0][1]) == pytest.approx(result.solutions[0][0], rel=1e-12)
    assert plan(model, load_cluster(cluster), train).extras["sensitivity"]["compared_with"] == 2


def test_planning_pauses_the_cyclic_collector_and_leaves_nothing_for_it(monkeypatch):
    """``plan`` turns the cyclic collector off while it plans and back on after, and leaves it off
    where the caller had it off. That is only safe because every search it builds (the plan's and
    the sensitivity range's) is freed by reference counting when ``plan`` returns: a search kept
    alive by a cycle would wait for a full collection."""
    built: list = []
    init = PlanSearch.__init__

    def recording(self, *args, **kwargs):
        built.append(weakref.ref(self))
        init(self, *args, **kwargs)

    monkeypatch.setattr(PlanSearch, "__init__", recording)
    model, cluster = load_model("gpt3-175b"), load_cluster("dgx-a100-80g:8x8")
    assert gc.isenabled()
    assert plan(model, cluster, Training(2048, 2048)).solution
    assert gc.isenabled()
    gc.disable()
    try:
        built.clear()
        assert plan(model, cluster, Training(2048, 2048)).solution
        assert not gc.isenabled()
        assert built and all(ref() is None for ref in built)
    finally:
        gc.enable()


@pytest.mark.parametrize("flags, expected", [
    (["--exhaustive", "--node-limit", "1"],
     "No plan yet: the search stopped (node limit) before it found one"),
    (["--node-limit", "1"], "Model megatron-1.7b"),    # the seed's plans
    (["--estimate", "0.2"], "estimated nodes = "),
])
def test_a_search_stopped_before_its_first_plan_says_so(flags, expected):
    """A limit that stops the search before it meets a plan, and ``--estimate``, which only samples
    the tree, said "no plan fits ... in memory" with exit status 2 (the same plan is found in 9
    nodes without the limit). Where the seed met plans (not in the exhaustive tree), they are
    the answer."""
    argv = ["dnn-plan", "--model", "megatron-1.7b", "--cluster", "dgx-a100-80g:2x8", "--global-batch", "64",
            "--quiet", *flags]
    out = subprocess.run([*yewpy_cmd(), *argv], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert out.stdout.startswith(expected)
    if "--node-limit" in flags:
        assert "status = node_limit" in out.stdout.splitlines()


def test_the_time_limit_counts_the_shapes_and_the_seed(monkeypatch):
    """``--time-limit`` bounds the whole planning: the search gets what the constructor (shapes,
    root bounds, seed: 4.6 s of megatron-1.7b on six kinds) left of it, and none where it used all."""
    given: list = []
    build, search = PlanSearch.__init__, PlanSearch.search

    def slow_build(self, *args, **kwargs):
        build(self, *args, **kwargs)
        time.sleep(0.3)

    def noted_search(self, **params):
        given.append(params)
        return search(self, **params)

    monkeypatch.setattr(PlanSearch, "__init__", slow_build)
    monkeypatch.setattr(PlanSearch, "search", noted_search)
    model, train = small_model(4, 2048), Training(16, 1024, memory_fraction=0.5, memory_reserve=0)
    for limit in (10.0, 0.2):
        assert plan(model, load_cluster("dgx-a100-80g:1x4+dgx-v100-32g:1x4"), train, top=3,
                    time_limit=limit).solutions
    assert 9.0 < given[0]["time_limit"] <= 9.7 and given[1]["time_limit"] == 0.0


@pytest.mark.parametrize("cluster", ["dgx-a100-80g:1x4+dgx-v100-32g:1x4", FOUR_SMALL])
def test_a_stopped_search_reports_the_seeds_plans(cluster):
    """A search stopped before it meets the seed's plans (six GPU kinds: 60 s) reports the best of
    them and of its own, one per shape: real plans, replayed at their times, each of the K no
    better than the K-th best of the whole search."""
    model = small_model(4, 2048)
    train = Training(16, 1024, memory_fraction=0.5, memory_reserve=0, microbatches=(1, 2))
    whole = plan(model, load_cluster(cluster), train, top=3)
    stopped = plan(model, load_cluster(cluster), train, top=3, node_limit=3)
    assert stopped.status == "node_limit" and whole.status == "optimal"
    assert len(stopped.solutions) == 3 and stopped.objective == stopped.solutions[0][0]
    times = [seconds for seconds, _ in stopped.solutions]
    assert times == sorted(times) and all(t >= w * (1 - 1e-9) for t, (w, _) in zip(times, whole.solutions))
    assert [p["iteration_seconds"] for p in stopped.extras["top"]] == pytest.approx(times, rel=1e-9)
    search = PlanSearch(model, load_cluster(cluster), train, top=3)
    assert search.search(node_limit=3).solutions == []       # the search alone met none
    for sid, leaf in search.seed_plans.items():
        assert search.replay(leaf) == pytest.approx(search.seeded[sid], rel=1e-12)
    bound = whole.solutions[0][0] * (1 - 1e-6)   # the seed's plans slower than an initial bound stay out
    assert plan(model, load_cluster(cluster), train, top=3, node_limit=3, initial_bound=bound).solutions == []


def test_a_stopped_search_keeps_the_better_of_its_own_and_the_seeds_plan_of_a_shape():
    """Stopped after 100 nodes, the search has met two shapes that the seed met too, and the seed
    one more: each shape's better time, three shapes by (time, shape)."""
    model = small_model(4, 2048)
    train = Training(16, 1024, memory_fraction=0.5, memory_reserve=0, microbatches=(1, 2))
    search = PlanSearch(model, load_cluster(FOUR_SMALL), train, top=3)
    stopped = search.search(node_limit=100)
    own = {leaf[1]: seconds for seconds, leaf in stopped.solutions}
    assert stopped.status == "node_limit" and set(own) & set(search.seeded) and set(search.seeded) - set(own)
    merged = search.best_known(stopped.solutions)
    shapes = set(own) | set(search.seeded)
    expected = sorted((min(own.get(sid, math.inf), search.seeded.get(sid, math.inf)), sid) for sid in shapes)
    assert [(v, leaf[1]) for v, leaf in merged] == expected[:3]


@pytest.mark.parametrize("coordination", ["seq", "stacksteal", "budget"])
def test_a_stopped_plan_search_proves_a_bound_below_the_optimum(coordination):
    """``Result.bound`` of a stopped plan search: no plan is faster (the whole search's optimum is
    at least it), the reported plan no faster than the optimum, and the gap between them; a
    finished search's bound is its plan. Every node limit on four kinds, past the seed's plans."""
    model = small_model(4, 2048)
    train = Training(16, 1024, memory_fraction=0.5, memory_reserve=0, microbatches=(1, 2))
    whole = plan(model, load_cluster(FOUR_SMALL), train, top=3)
    optimum = whole.objective
    assert whole.status == "optimal" and whole.bound == optimum and whole.gap == 0
    gaps = []
    for limit in (1, 3, 10, 30, 100, 300, 1000):
        stopped = plan(model, load_cluster(FOUR_SMALL), train, top=3, node_limit=limit,
                       coordination=coordination)
        if stopped.status == "optimal":
            assert stopped.bound == stopped.objective == optimum
            continue
        assert stopped.bound <= optimum <= stopped.objective * (1 + 1e-9), limit
        gaps.append(stopped.gap)
    assert len(gaps) >= 5 and all(g > 0 for g in gaps) and gaps[-1] < gaps[0] / 2   # it tightens


@pytest.mark.parametrize("flag", [["--estimate", "1"], ["--node-limit", "5"], ["--time-limit", "1"],
                                  ["--model", "gpt3-175b"], ["--top", "5"], ["--seq", "4096"], ["--no-sp"],
                                  ["--eta", "0.5"], ["--recompute", "full"], ["--fix", "tp=8"],
                                  ["--skeleton", "stacksteal"], ["--no-prune-level"],
                                  ["--checkpoint-every", "5"]])
def test_validate_refuses_the_options_it_would_ignore(flag):
    """Each published run pins its own model, cluster, batch, constants and layout: a planning or
    coordination flag beside ``--validate`` would be dropped without a word, so it is refused."""
    out = subprocess.run([*yewpy_cmd(), "dnn-plan", "--validate", *flag], capture_output=True, text=True,
                         timeout=120)
    shown = "--skeleton or its options" if flag[0] == "--skeleton" else flag[0]
    assert (out.returncode, out.stderr) == (
        2, f"yewpy: error: --validate plans each published run whole; it does not take {shown}\n")


@pytest.mark.parametrize("cluster", ["dgx-a100-80g:1x2+dgx-a100-80g:1x2+dgx-v100-16g:1x2",
                                     "dgx-v100-16g:1x2+dgx-a100-80g:1x2+dgx-v100-16g:1x2"])
def test_interchangeable_groups_keep_the_optimum_with_fewer_shapes(monkeypatch, cluster):
    """Groups that differ only in name take only their first ones and non-increasing stage counts
    (``Shapes._interchangeable``): far fewer shapes, and the optimum brute force finds over every
    shape of the unreduced enumeration."""
    model = small_model(3, 2048)
    train = Training(8, 1024, memory_fraction=0.5, memory_reserve=0, microbatches=(1, 2),
                     schedules=("1f1b", "gpipe"))
    reduced = PlanSearch(model, load_cluster(cluster), train)
    monkeypatch.setattr(PlanSearch, "_interchangeable", lambda self, real: [])
    every = PlanSearch(model, load_cluster(cluster), train, rank=False)
    assert len(reduced.shapes) < len(every.shapes)
    assert reduced.search().objective == pytest.approx(brute_force(every), rel=1e-9)


def test_identical_groups_take_few_shapes_and_keep_the_best_plans(monkeypatch):
    """Eight identical single-node groups made 2^8 - 1 subsets and every stage count on each: 14.5 s
    and 1.7 GB before any search. The shapes are now those of 8 subsets with ordered counts. On four
    such groups the top 3 are those the unreduced enumeration plans."""
    model = load_model("megatron-1.7b")
    eight = PlanSearch(model, load_cluster("+".join(["dgx-a100-80g:1x8"] * 8)), Training(64, 2048))
    assert len(eight.shapes) < 20_000 and eight.search().objective > 0
    four = load_cluster("+".join(["dgx-a100-80g:1x8"] * 4))
    reduced = PlanSearch(model, four, Training(64, 2048)).search()
    monkeypatch.setattr(PlanSearch, "_interchangeable", lambda self, real: [])
    every = PlanSearch(model, four, Training(64, 2048)).search()
    assert [value for value, _ in reduced.solutions] == [value for value, _ in every.solutions]


SMALL_PLAN = ["dnn-plan", "--model", "megatron-1.7b", "--cluster", "dgx-a100-80g:2x8", "--global-batch", "64",
              "--quiet"]


@pytest.mark.parametrize("argv, message", [
    # an adversarial pass (stop 55): each was taken silently, or gave a misleading reason
    (["--fix", "tp=8,tp=4"], "bad --fix item 'tp=4': tp is pinned twice"),
    (["--fix", "v=1000"], "--fix v=1000: the interleaved schedule takes 2 to 13 chunks per stage here"),
    (["--fix", "v=13,pp=4"], "--fix v=13: the interleaved schedule takes 2 to 6 chunks per stage here"),
    (["--fix", "v=2,schedule=gpipe"], "--fix v=2: model chunks per stage go with schedule=interleaved"),
    (["--fix", "recompute=block"], "--fix recompute=block: add it to --recompute (now none,selective,full)"),
    (["--network-slowdown", ""], "--network-slowdown: '' is not a factor between 1 and 1e6"),
    (["--network-slowdown", "@"], "--network-slowdown @: name the trace file, as @FILE"),
    (["--network-slowdown", "@{trace}"], "{trace}:1: expected 'SECONDS FACTOR' (0 < seconds <= 1e9"),
    (["--wan-compression", "1_0"], "--wan-compression: '1_0' is not a ratio in [1, 1000]"),
    (["--estimate", "1", "--walltime", "1e-300"], "--walltime must be at least 1 second, got 1e-300"),
])
def test_pinned_and_network_options_say_what_is_wrong(tmp_path, argv, message):
    trace = tmp_path / "trace.txt"
    trace.write_text("1e308 2\n1e308 4\n")  # the weights' sum was inf, and the gain printed +0.0%
    argv = [*SMALL_PLAN, *(a.format(trace=trace) for a in argv)]
    out = subprocess.run([*yewpy_cmd(), *argv], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stderr.startswith(f"yewpy: error: {message.format(trace=trace)}")
    assert out.stderr.count("\n") == 1, out.stderr


def test_a_pinned_interleave_factor_is_planned_not_ignored():
    """--fix v=3 planned a schedule without chunks (only v = 2 and 4 were searched); it now plans v = 3."""
    out = subprocess.run([*yewpy_cmd(), *SMALL_PLAN, "--fix", "v=3", "--json"], capture_output=True,
                         text=True, timeout=120)
    plan = json.loads(out.stdout)["plan"]
    assert (plan["schedule"], plan["interleave"]) == ("interleaved", 3)


def test_interchangeable_groups_with_stage_replication_keep_the_top_plans(monkeypatch):
    """DAPPLE's split patterns on interchangeable groups are taken in one order too: six identical
    single-node groups with --stage-replication took 20 s and 1.6 GB of shapes, now 2.8 s. On three
    such groups (and a fourth of another kind) the top 3 are the unreduced enumeration's."""
    model = small_model(4, 4096)
    cluster = load_cluster("dgx-a100-80g:1x4+dgx-a100-80g:1x4+dgx-a100-80g:1x4+dgx-v100-32g:1x4")
    train = Training(32, 1024, stage_replication=True, microbatches=(1, 2))
    reduced = PlanSearch(model, cluster, train)
    monkeypatch.setattr(PlanSearch, "_interchangeable", lambda self, real: [])
    every = PlanSearch(model, cluster, train)
    assert len(reduced.shapes) < len(every.shapes) / 2
    assert [v for v, _ in reduced.search().solutions] == [v for v, _ in every.search().solutions]


def test_an_estimate_probes_under_the_search_s_bar_and_frees_it_after(monkeypatch):
    """``search(estimate=...)`` runs Knuth's probes after its short search, and a top-K search prunes
    them with its ranking's bar (``PlanSearch._bar``): the ranking is released only when the
    estimate is done."""
    from yewpy.operations.treesize import Sampler

    cluster = load_cluster("dgx-a100-80g:4x8+dgx-v100-32g:4x8+dgx-h100-80g:2x8")
    search = PlanSearch(load_model("mixtral-8x7b"), cluster, Training(512, 2048))
    ranked: list = []
    run = Sampler.run

    def probing(self, *args, **kwargs):
        ranked.append(search._ranking is not None)
        return run(self, *args, **kwargs)

    monkeypatch.setattr(Sampler, "run", probing)
    result = search.search(estimate=0.2)
    assert result.status == "time_limit" and ranked == [True] and search._ranking.key is None


def test_the_layout_round_seeds_the_layouts_that_the_root_bounds_rank_late(monkeypatch):
    """GPT-3 on four kinds of four nodes: the shapes the rounds before it seed are d = 4 and d = 8
    ones that memory makes slow, and the best plan's shape (d = 2) ranks past 2,000th by root bound.
    The layout round, which compares the start bounds of the first shapes of each (d, p), seeds d = 2
    shapes and lowers the bar by a tenth (41.8 s against 45.1 s; the third best plan takes 41.1 s).
    """
    model, cluster = load_model("gpt3-175b"), load_cluster(
        "dgx-a100-80g:4x8+dgx-a100-40g:4x8+dgx-h100-80g:4x8+dgx-v100-32g:4x8")
    search = PlanSearch(model, cluster, Training(512, 2048), top=3)
    assert 2 in {search.shapes[sid].d for sid in search.seeded}
    monkeypatch.setattr(PlanSearch, "_seed_layouts", lambda self, *args: None)
    without = PlanSearch(model, cluster, Training(512, 2048), top=3)
    assert 2 not in {without.shapes[sid].d for sid in without.seeded}
    assert search.seed_bar < 0.95 * without.seed_bar
