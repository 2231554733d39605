"""DAPPLE's per-stage replication (``--stage-replication``): stages of different data-parallel degrees,
each replica of a stage taking its share of the pipeline's micro-batch. Exact against the replay
oracle and the exhaustive tree, costed as a hand computation says, refused by both launchers, and
DAPPLE's VGG-19 finding under our model."""

from __future__ import annotations

import json
import math
import pickle
import subprocess
from pathlib import Path

import numpy as np
import pytest
from dnn_oracle import brute_force, check_bounds_below_completions, small_model
from hypothesis import given, settings
from hypothesis import strategies as st

from support import same_optimum, yewpy_cmd
from yewpy.apps.dnn.cluster import load_cluster
from yewpy.apps.dnn.cost import Training, stage_cost
from yewpy.apps.dnn.model_files import load_model
from yewpy.apps.dnn.models import transformer
from yewpy.apps.dnn.planner import ExhaustivePlanSearch, PlanSearch, bounds
from yewpy.apps.dnn.planner._fill_floor import FillFloor
from yewpy.apps.dnn.planner.treecount import exhaustive_nodes
from yewpy.apps.dnn_plan import plan

VGG19 = str(Path(__file__).parent / "data" / "vgg19.json")


def _replicated(**kw: object) -> Training:
    return Training(stage_replication=True, **kw)


def test_shapes_split_a_group_into_two_widths():
    """Two 8-GPU nodes: besides the one-width pipelines, DAPPLE's 15:1 (one stage of 15 replicas,
    one of 1) and 12:4 are shapes; every shape uses all 16 GPUs, and no shape has one width only
    and two degrees."""
    search = PlanSearch(load_model(VGG19), load_cluster("p3.16xlarge:2x8"),
                        _replicated(global_batch=480, seq=1, max_tp=1), rank=False)
    widths = {tuple((stages, t * d) for _, stages, t, d in sh.parts) for sh in search.shapes}
    assert {((1, 15), (1, 1)), ((1, 12), (1, 4)), ((2, 8),), ((1, 16),)} <= widths
    for sh in search.shapes:
        assert sum(stages * t * d for _, stages, t, d in sh.parts) == 16
        assert sh.uneven == (len({d for *_, d in sh.parts}) > 1)
        assert all(sh.part_b(i) * sh.part_d(i) == sh.b * sh.d for i in range(len(sh.parts)))
    plain = PlanSearch(load_model(VGG19), load_cluster("p3.16xlarge:2x8"),
                       Training(480, 1, max_tp=1), rank=False)
    assert not any(sh.uneven for sh in plain.shapes)
    assert len(plain.shapes) < len(search.shapes)


@settings(max_examples=5, deadline=None)
@given(
    layers=st.integers(2, 3),
    hidden=st.sampled_from([512, 4096]),
    batch=st.sampled_from([8, 16]),
    mem=st.sampled_from([0.15, 0.9]),
    cluster=st.sampled_from(["dgx-a100-80g:1x4", "dgx-a100-80g:1x2+dgx-v100-16g:1x2"]),
)
def test_bnb_equals_brute_force_with_replication(layers, hidden, batch, mem, cluster):
    """The pruned search's best equals the oracle's over every shape, cut, part order and option,
    with uneven shapes among them (a 4-GPU group holds 3:1, 2:1:1, ...)."""
    model = small_model(layers, hidden)
    train = _replicated(global_batch=batch, seq=1024, memory_fraction=mem, memory_reserve=0,
                        microbatches=(1, 2), schedules=("1f1b",), recompute=("none", "full"),
                        zero=(0, 1), max_tp=2)
    search = PlanSearch(model, load_cluster(cluster), train)
    assert any(sh.uneven for sh in search.shapes)
    oracle = brute_force(PlanSearch(model, load_cluster(cluster), train, rank=False))
    found = search.search()
    if math.isinf(oracle):
        assert found.objective is None or math.isinf(found.objective)
    else:
        assert found.objective == pytest.approx(oracle, rel=1e-12)


@pytest.mark.parametrize("cluster", ["dgx-a100-80g:1x8", "dgx-a100-80g:1x4+dgx-v100-32g:1x2"])
def test_replication_matches_the_exhaustive_tree_and_its_count(cluster):
    """Top 3 equal the exhaustive tree's, and treecount counts that tree exactly."""
    model = small_model(4, 2048)
    train = _replicated(global_batch=32, seq=1024, microbatches=(1, 2, 4), memory_fraction=0.5)
    exhaustive = ExhaustivePlanSearch(model, load_cluster(cluster), train, top=3)
    oracle = exhaustive.search(prune_level=False)
    found = PlanSearch(model, load_cluster(cluster), train, top=3).search()
    assert [s for s, _ in found.solutions] == pytest.approx([s for s, _ in oracle.solutions], rel=1e-12)
    assert same_optimum(found, oracle)
    assert exhaustive_nodes(PlanSearch(model, load_cluster(cluster), train)) == oracle.nodes


def test_an_uneven_stage_is_costed_as_by_hand():
    """15:1 on two 8-GPU nodes: the 1-replica stage runs the pipeline's whole micro-batch (15 x b
    samples), holds its blocks' full model state (no ZeRO sharding over 1 rank), has no gradient
    all-reduce, and receives all 15 senders' activations: the 7 on its own node over NVLink, the
    8 on the other node over the whole NIC of its node (DAPPLE's split and concatenation)."""
    model = load_model(VGG19)
    cluster = load_cluster("p3.16xlarge:2x8")
    train = _replicated(global_batch=480, seq=1, max_tp=1, precision="fp16")
    search = PlanSearch(model, cluster, train, rank=False)
    sid = next(i for i, sh in enumerate(search.shapes)
               if [(s, d) for _, s, _, d in sh.parts] == [(1, 15), (1, 1)] and sh.b == 2
               and sh.schedule == "1f1b")
    sh = search.shapes[sid]
    assert (sh.d, sh.part_b(1), sh.m) == (15, 30, 16)
    one = search.part_table(sid, 1)
    assert (one.d, one.b) == (1, 30)
    group = cluster.groups[0]
    lat, per_element = search._class_consts(sid, 1, 0)[7]
    assert lat == group.inter_latency
    seconds_per_byte = max(8 / 15 / (8 * group.inter_bandwidth), 7 / 15 / group.intra_bandwidth)
    assert per_element == pytest.approx(2.0 * 30 * seconds_per_byte / train.link_efficiency)
    # and the other way: 15 receivers, each 2 samples, from one sender of 30: the sender's 30 set the time
    lat, back = search._class_consts(sid, 0, 1)[7]
    assert back == pytest.approx(per_element)
    assert search._class_consts(sid, 1, 0)[4] is None  # one replica: no gradient all-reduce
    assert search._class_consts(sid, 0, None)[4] is not None
    fc = model.blocks[16:]
    stage = search.make(sid, search.make(sid, search.start_node(sid), 0, 16, "none", 1), 1, 3, "none", 0)
    cost = search.costs[(sid, 1, 16, 19, "none", 0, 1, 0)]
    full_state = sum(blk.params for blk in fc) * (train.weight_bytes + train.grad_bytes
                                                  + train.optimizer_bytes)
    assert cost.memory >= full_state
    assert cost.tau >= sum(3 * blk.forward_flops(30, 1) for blk in fc) / one.rate
    assert cost.p2p == pytest.approx(lat + per_element * model.blocks[15].boundary)  # conv16's output
    assert stage is not None and search.leaf_time(stage)[0] > 0


def test_vgg19_on_two_servers_replicates_the_convolutions():
    """DAPPLE's VGG-19 setting (its authors' scripts: two 8-V100 servers on 25 Gb/s Ethernet, global
    batch 480): the best plan puts the fully connected layers, 86% of the weights, on a stage of one
    replica and replicates the convolutions; it beats the best plan of one data-parallel degree, and
    data parallelism alone by more than 4x. The authors' own 15:1 beats data parallelism too, by
    more than 2x, but not the best plan: its one GPU receives all 15 replicas' activations, 8 of
    them over the 25 Gb/s link, where 5:5:5:1's last stage gets its input inside its node
    (docs/dnn.md)."""
    model, cluster = load_model(VGG19), load_cluster("p3.16xlarge:2x8")
    train = _replicated(global_batch=480, seq=1, max_tp=1, precision="fp16")
    best = plan(model, cluster, train, top=1)
    stages = best.extras["plan"]["stages"]
    assert isinstance(best.extras["plan"]["dp"], list)
    last = stages[-1]
    assert last["dp"] == 1 and last["blocks"][1] == 19 and last["blocks"][0] <= 16
    assert all(s["dp"] > 1 for s in stages[:-1])
    even = plan(model, cluster, Training(480, 1, max_tp=1, precision="fp16"), top=1).objective
    data_parallel = plan(model, cluster, Training(480, 1, max_tp=1, precision="fp16", fix={"pp": 1}),
                         top=1).objective
    assert best.objective < even * 0.97
    assert data_parallel > 4 * best.objective
    search = PlanSearch(model, cluster, train, top=400)
    result = search.search()
    fifteen = min(seconds for seconds, leaf in result.solutions
                  if [(s, d) for _, s, _, d in search.shapes[leaf[1]].parts] == [(1, 15), (1, 1)])
    assert best.objective < fifteen < data_parallel / 2


def test_launchers_refuse_uneven_replication_and_megatron_plans_without_it(tmp_path):
    """Neither launcher builds data-parallel groups of different sizes: both refuse such a plan, and
    --launcher megatron searches only even plans; the text names each stage's degree and share."""
    args = [*yewpy_cmd(), "dnn-plan", "--model", VGG19, "--cluster", "p3.16xlarge:2x8",
            "--global-batch", "480", "--max-tp", "1", "--stage-replication", "--top", "1"]
    out = subprocess.run([*args, "--json", "--quiet"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    for launcher in ("megatron", "deepspeed"):
        assert "data-parallel degree" in doc["launch"][launcher]["refused"] or launcher == "megatron"
    assert "data-parallel degree" in doc["launch"]["deepspeed"]["refused"]
    text = subprocess.run(args, capture_output=True, text=True, timeout=300).stdout
    assert " dp=1 mb=" in text and "dp=[" in text
    model = small_model(4, 2048)
    restricted = Training(64, 1024, stage_replication=True)
    from yewpy.apps.dnn.planner.launch import megatron_refusal, restrict
    narrowed = restrict(restricted, "megatron")
    assert not narrowed.stage_replication
    uneven = {"mode": "pipe", "tp": 1, "dp": [3, 1], "pp": 2, "schedule": "1f1b", "stages": []}
    assert "data-parallel degree" in megatron_refusal(uneven, model, restricted)


@settings(max_examples=200, deadline=None)
@given(
    parts=st.lists(st.tuples(st.floats(0.5, 4.0), st.integers(1, 4)), min_size=2, max_size=3),
    spare=st.floats(0.0, 1.0), bump=st.floats(0.0, 0.5), lift=st.one_of(st.just(0.0), st.floats(0.0, 3.0)),
    c1=st.one_of(st.floats(0.0, 2.0), st.floats(0.0, 30.0), st.floats(0.0, 200.0)),
    div=st.sampled_from([1, 2, 4]), send=st.floats(0.0, 0.5),
)
def test_the_fill_floor_is_the_least_over_every_split(parts, spare, bump, lift, c1, div, send):
    """``FillFloor`` of ``_fill_curve`` (a mixed state's Jensen-slot term) against a grid over
    every split of the work between the parts: part i holds W_i at time r_i W_i over c_i stages, so
    its largest stage is at least r_i W_i / c_i, and at least the state's own largest stage
    (``at``: ``lift`` above the floors' largest). The grid's least must not be below the floor (it
    would not be a floor) and may exceed it only by the grid's step. ``with_sends`` raises every
    stage by ``send`` (a floor at x with the sends is the floor at x - send without, plus c1 of them)."""
    work = 1.0
    total = work * min(r for r, _ in parts) * (1 + spare)
    largest = work / sum(c / r for r, c in parts) * (1 + bump)
    state = largest * (1 + lift) if lift else 0.0
    fill = FillFloor(bounds._fill_curve(work, parts), total, largest, c1, div)
    floor = fill.at(state)
    steps = 240
    grid = np.linspace(0.0, work, steps + 1)
    splits = np.stack(np.meshgrid(*[grid] * (len(parts) - 1), indexing="ij"), -1).reshape(-1, len(parts) - 1)
    splits = splits[splits.sum(1) <= work + 1e-12]
    splits = np.concatenate([splits, work - splits.sum(1, keepdims=True)], 1)
    r = np.array([r for r, _ in parts])
    c = np.array([c for _, c in parts])
    spent = (splits * r).sum(1)
    x = np.maximum(max(largest, state), (splits * r / c).max(1))
    least = ((np.maximum(spent, total) - total) / div + c1 * x).min()
    step = work / steps * r.max()  # one grid step moves two parts' shares by this much time
    assert floor <= least + 1e-9
    assert least <= floor + 2 * step * (1 / div + c1 / c.min()) + 1e-9
    assert fill.at(0.0) == fill.least <= floor
    sent = fill.with_sends(send)
    assert sent.least == pytest.approx(fill.least + c1 * send, abs=1e-9)
    assert sent.at(state + send) == pytest.approx(floor + c1 * send, abs=1e-9)
    assert pickle.loads(pickle.dumps(sent)).at(state + send) == sent.at(state + send)


@settings(max_examples=12, deadline=None)
@given(
    layers=st.integers(3, 5), hidden=st.sampled_from([1024, 4096]), experts=st.sampled_from([0, 2]),
    batch=st.sampled_from([16, 32]), mem=st.sampled_from([0.3, 0.9]),
    cluster=st.sampled_from(["dgx-a100-80g:1x4+dgx-v100-16g:1x4",
                             "dgx-h100-80g:1x2+dgx-a100-40g:1x2+dgx-v100-32g:1x2",
                             "dgx-a100-80g:2x2+dgx-v100-32g:2x2"]),
)
def test_the_top_three_on_mixed_kinds_are_the_exhaustive_trees(layers, hidden, experts, batch, mem, cluster):
    """The fill floor reads a state's largest stage and exposed time (``FillFloor.at``, and e added
    in ``pipe_bound``): on clusters of two and three GPU kinds, with data-parallel stages whose
    all-reduce is exposed and with experts, the pruned search's top 3 are the exhaustive tree's."""
    model = transformer("small", layers=layers, hidden=hidden, heads=16, vocab=32000, seq=1024,
                        experts=experts)
    train = Training(batch, 1024, memory_fraction=mem, memory_reserve=0, microbatches=(1, 2),
                     recompute=("none", "full"), zero=(0, 1, 3))
    bnb = PlanSearch(model, load_cluster(cluster), train, top=3).search()
    exhaustive = ExhaustivePlanSearch(model, load_cluster(cluster), train, top=3).search()
    assert [v for v, _ in bnb.solutions] == pytest.approx([v for v, _ in exhaustive.solutions], rel=1e-9)


@pytest.mark.parametrize("cluster, replication", [
    ("dgx-a100-80g:1x4+dgx-v100-32g:1x4", False),   # two GPU kinds: the time-ratio floors
    ("dgx-a100-80g:1x2+dgx-v100-16g:1x2+dgx-h100-80g:1x2", False),
    ("dgx-a100-80g:1x8", True),                       # one kind, parts of different d
])
def test_mixed_part_floors_never_exceed_a_completion(cluster, replication):
    """Where the live parts differ in kind (GPU type, or d under replication), the floors come from
    FLOPs and from each part's time ratio to part 0 (``_time_ratios``). At every stage node of the
    exhaustive tree, the bound is at most the best leaf below it, found by walking that subtree."""
    model = small_model(4, 4096)
    train = Training(32, 1024, microbatches=(1, 2), memory_fraction=0.5, stage_replication=replication)
    search = ExhaustivePlanSearch(model, load_cluster(cluster), train)

    def mixed(node: tuple) -> bool:  # the live parts differ in kind
        return len({search._gpu_kind(node[1], i) for i, c in enumerate(node[3]) if c}) > 1

    sids = [sid for sid, sh in enumerate(search.shapes) if sh.mode == "pipe" and len(sh.parts) > 1]
    assert check_bounds_below_completions(search, search, sids, mixed) > 50


@pytest.mark.parametrize("cluster", ["dgx-v100-16g:2x4", "dgx-a100-80g:1x8"])
def test_a_replicated_parts_floor_reads_each_part_at_its_own_replicas(cluster):
    """DAPPLE shapes take the several-part stage floor (``bounds._parts_floor``) with each part's modes
    costed at its own data-parallel degree: on every part and every stage [lo, hi) but the whole
    model, a mode's cost is at most c1 tau + exposed of the stage it stands for, ZeRO-3's
    collectives over the part's replicas (a one-replica stage has none), not the widest part's."""
    model = small_model(4, 8192)
    train = _replicated(global_batch=64, seq=2048, zero=(0, 1, 2, 3), recompute=("none", "selective", "full"))
    search = PlanSearch(model, load_cluster(cluster), train)
    n, checked = search.n, 0
    uneven = [sid for sid, sh in enumerate(search.shapes) if sh.uneven]
    assert any(search._parts_floor(sid) > -math.inf for sid in uneven)
    for sid in uneven:
        sh = search.shapes[sid]
        for part in range(len(sh.parts)):
            tab, _, zc, *_ = search._class_consts(sid, part, None)
            modes = search._new_floor_modes(sid, tab, zc, part)
            for (rc, z), mode in zip(search._allowed(sid), modes, strict=True):
                for lo in range(n):
                    for hi in range(lo + 1, n + (lo > 0)):
                        floor = max(pre[hi] - pre[lo] + offset for pre, offset in mode.terms)
                        cost = stage_cost(tab, lo, hi, rc, z, 0, sh.p, sh.m, sh.schedule, sh.v, sh.k, train,
                                          search.dp_link(sid, part), None, n - 1)
                        actual = sh.c1 * cost.tau + cost.exposed
                        assert floor * bounds.SAFETY <= actual, (sh, part, rc, z, lo, hi)
                        checked += 1
    assert checked > 1000


def test_with_stage_replication_the_seed_takes_the_plain_shapes_first():
    """With --stage-replication the seed first takes the shapes it takes without the flag, then
    DAPPLE's: Falcon-180B on 32 H100 + 16 A100 nodes, whose two-width shapes have low root bounds
    and poor plans, once seeded a bar of 30.8 s with the flag and 24.1 s without."""
    model = load_model(str(Path(__file__).parent / "data" / "hf_configs" / "falcon-180b.json"))
    cluster = load_cluster("dgx-h100-80g:32x8+dgx-a100-80g:16x8")
    plain = PlanSearch(model, cluster, Training(1536, 2048), top=3)
    both = PlanSearch(model, cluster, _replicated(global_batch=1536, seq=2048), top=3)
    assert {plain.shapes[i] for i in plain.seeded} <= {both.shapes[i] for i in both.seeded}
    assert both.seed_bar <= plain.seed_bar < 24.2
    # what made this a test: two-width shapes hold most of the seed's window of least root bounds
    window = sorted(range(len(both.shapes)), key=lambda i: both.root_lb[i])[: 16 * 24]
    assert sum(both.shapes[i].uneven for i in window) > len(window) / 2


def test_parts_that_cost_the_blocks_alike_share_their_mixed_floors():
    """DAPPLE's parts of one GPU kind at different widths cost every block alike, so the mixed floors
    are shared between them (``bounds._alike``): some tables are merged, only tables of equal block
    times, FLOPs and rate are, and every shape's mixed root floors are those computed without it."""
    model = small_model(4, 4096)
    cluster = load_cluster("dgx-a100-80g:1x4+dgx-v100-32g:1x4")
    train = _replicated(global_batch=32, seq=1024, microbatches=(1, 2))
    search = PlanSearch(model, cluster, train)
    merged = [(key, alike) for key, alike in search._alike_cache.items() if key != alike]
    assert merged and len(search._alike_by_costs) < len(search._alike_cache)
    for key, alike in merged:
        a, b = search._table(*key), search._table(*alike)
        assert (a.rate, list(a.work), list(a.time["none"])) == (b.rate, list(b.work), list(b.time["none"]))
    fresh = PlanSearch(model, cluster, train, rank=False)
    fresh._alike = lambda key: key  # every table its own class
    checked = 0
    for sid, sh in enumerate(search.shapes):
        live = [(i, part[1]) for i, part in enumerate(sh.parts)]
        if sh.mode == "pipe" and len({search._gpu_kind(sid, i) for i, _ in live}) > 1:
            assert fresh._mixed_floors(sid, 0, live) == search._mixed_floors(sid, 0, live)
            checked += 1
    assert checked > 20
