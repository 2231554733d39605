"""Per-layer tensor parallelism (``--tp-layers``, Galvatron's per-layer TP degrees): a stage runs the
fewest of its first layers that let it fit at twice its TP degree and half its data-parallel degree
(option ``TP_LAYERS + B``, every layer under ZeRO-B). The stage arithmetic matches the reference
cost, the search stays exact, the stage floor stays below every such option, and Galvatron's
strategy file says each layer's degree."""

from __future__ import annotations

import json
import subprocess

import galvatron_strategy
import pytest
from dnn_oracle import check_options_above_floor_modes
from hypothesis import example, given, settings
from hypothesis import strategies as st

from support import same_optimum, yewpy_cmd
from yewpy.apps.dnn.cluster import load_cluster
from yewpy.apps.dnn.cost import TP_LAYERS, Training, hierarchical_allreduce, per_layer_tp, stage_cost
from yewpy.apps.dnn.models import transformer
from yewpy.apps.dnn.planner import ExhaustivePlanSearch, PlanSearch
from yewpy.apps.dnn.planner.launch import deepspeed_refusal, megatron_refusal, restrict
from yewpy.apps.dnn_plan import plan


def gpt_2_7b() -> object:
    """GPT-2.7B's shape (32 layers of width 2560, 32 heads), the model of Galvatron's GPT example."""
    return transformer("gpt-2.7b", layers=32, hidden=2560, heads=32, vocab=50304, seq=2048)


def small(layers: int, hidden: int = 4096) -> object:
    return transformer("small", layers=layers, hidden=hidden, heads=32, vocab=32000, seq=1024)


def test_widened_options_match_stage_cost_and_widen_only_where_needed():
    """Every per-layer TP option of the batched stage arithmetic equals stage_cost (through make), on
    stages of several blocks of pipe shapes; it widens layers only where the stage would not fit
    otherwise, some stages widen only part of their layers, and a widened option is never faster
    per micro-batch than the narrow one with the same memory room."""
    model = small(9)
    train = Training(32, 1024, memory_fraction=0.25, memory_reserve=0, microbatches=(1, 2), zero=(0, 2),
                     recompute=("none", "full"), tp_layers=True)
    search = PlanSearch(model, load_cluster("dgx-v100-32g:2x8"), train)
    checked = partial = 0
    for sid, sh in enumerate(search.shapes):
        if not search.widenable(sid):
            continue
        node = search.start_node(sid)
        ks = [search.n] if sh.p == 1 else range(1, search.n - (sh.p - 1) * sh.v + 1)
        for k in ks:
            for opt in search.stage_terms(sid, 0, 0, k, 0, None):
                if not per_layer_tp(opt[4]):
                    continue
                child = search.make(sid, node, 0, k, opt[3], opt[4])
                assert child is not None
                assert child[4][0] == pytest.approx(opt[0], rel=1e-12)
                assert child[5][0] == pytest.approx(opt[1], rel=1e-12)
                assert child[6] == pytest.approx(opt[2], rel=1e-12)
                tab = search.part_table(sid, 0)
                args = (0, k, opt[3], opt[4], 0, sh.p, sh.m, sh.schedule, sh.v, sh.k, train,
                        search.dp_link(sid, 0), None, search.n - 1)
                cost = stage_cost(tab, *args, search.widened(sid, 0))
                narrow = stage_cost(tab, *args[:3], opt[4] - TP_LAYERS, *args[4:])
                usable = train.usable(tab.group)
                assert cost.memory <= usable * (1 + 1e-12) < narrow.memory  # widened only where needed
                assert cost.widened > 0 and cost.tau > narrow.tau
                layers = tab.layers(0, k)[1] - tab.layers(0, k)[0]
                partial += cost.widened < layers
                checked += 1
    assert checked > 5 and partial > 0


@pytest.mark.parametrize("rc, sp", [("none", True), ("full", False)])
def test_a_stage_of_widened_layers_costs_what_the_wide_layout_does(rc, sp):
    """A stage of transformer layers only, every one widened (memory too small for fewer): its time
    is the wide tables' plus the two (three with full recomputation) activation exchanges between
    partner TP groups, its memory the wide layout's state and activations; the data-parallel
    all-reduce runs on the wide ring (an independent sum, not the planner's arithmetic)."""
    model = small(6)
    train = Training(32, 1024, memory_fraction=0.01, memory_reserve=0, microbatches=(2,), zero=(0, 2),
                     recompute=(rc,), tp_layers=True, sequence_parallel=sp)
    search = PlanSearch(model, load_cluster("dgx-a100-80g:2x8"), train)
    sid = next(i for i, sh in enumerate(search.shapes)
               if search.widenable(i) and sh.parts[0][2] == 2 and sh.parts[0][3] == 4 and sh.p == 2
               and sh.schedule == "1f1b")
    sh, tab = search.shapes[sid], search.part_table(sid, 0)
    wide, wide_link = search.widened(sid, 0)
    assert (wide.t, wide.d, wide.b) == (4, 2, 2 * tab.b)
    lo, hi = 1, 4  # three layers, as the second stage would hold them
    for base in (0, 2):
        cost = stage_cost(tab, lo, hi, rc, TP_LAYERS + base, 1, sh.p, sh.m, sh.schedule, sh.v, sh.k, train,
                          search.dp_link(sid, 0), None, search.n - 1, (wide, wide_link))
        assert cost.widened == 3
        gr = tab.group
        exchange = gr.intra_latency + train.weight_bytes * tab.b * 1024 * 4096 / (2 if sp else 1) / (
            train.link_efficiency * gr.intra_bandwidth)
        tau = wide.time[rc][hi] - wide.time[rc][lo] + (3 if rc == "full" else 2) * exchange
        assert cost.tau == pytest.approx(tau, rel=1e-12)
        per_param = {0: 2.0 + 4.0 + 12.0, 2: 2.0 + (4.0 + 12.0) / 2}[base]  # ZeRO over 2 replicas
        infl = 2 - 1  # 1F1B, stage 1 of 2
        memory = (tab.params[hi] - tab.params[lo]) / 4 * per_param
        memory += (wide.act[rc][hi] - wide.act[rc][lo]) * infl + (wide.working_set if rc == "full" else 0)
        assert cost.memory == pytest.approx(memory, rel=1e-12)
        one = hierarchical_allreduce((tab.dense[hi] - tab.dense[lo]) / 4 * train.grad_bytes, *wide_link)
        dp = one / 2 * sh.m + one / 2 if base == 2 else one
        touched = (tab.params[hi] - tab.params[lo]) / 4 / (2 if base else 1)
        exposed = max(0.0, dp - cost.tau * 2 / 3) + 2 * touched * train.state_bytes / gr.hbm_bandwidth
        assert cost.exposed == pytest.approx(exposed, rel=1e-12)


@settings(max_examples=14, deadline=None)
@given(layers=st.integers(3, 8), hidden=st.sampled_from([2048, 4096, 8192]),
       batch=st.sampled_from([16, 32, 128]),
       cluster=st.sampled_from(["dgx-a100-80g:2x4", "dgx-v100-32g:2x4", "dgx-v100-16g:1x8",
                                "dgx-a100-80g:1x4+dgx-v100-16g:1x4"]),
       mem=st.sampled_from([0.15, 0.25, 0.4, 0.6]), zeros=st.sampled_from([(0, 1, 2, 3), (0,), (0, 2)]),
       sp=st.booleans())
# a slot's cached floors were those of the first stage counts that reached it (a two-part shape)
@example(layers=5, hidden=8192, batch=128, cluster="dgx-a100-80g:1x4+dgx-v100-16g:1x4", mem=0.4, zeros=(0,),
         sp=False)
def test_the_search_with_per_layer_tp_equals_the_exhaustive_tree(layers, hidden, batch, cluster, mem, zeros,
                                                                 sp):
    model = small(layers, hidden)
    train = Training(batch, 1024, memory_fraction=mem, memory_reserve=0, microbatches=(1, 2, 4),
                     recompute=("none", "full"), zero=zeros, tp_layers=True, sequence_parallel=sp)
    bnb = PlanSearch(model, load_cluster(cluster), train).search(prune_level=False)
    exhaustive = ExhaustivePlanSearch(model, load_cluster(cluster), train).search(prune_level=False)
    if same_optimum(bnb, exhaustive):
        assert bnb.nodes <= exhaustive.nodes


@settings(max_examples=12, deadline=None)
@given(layers=st.integers(3, 6), hidden=st.sampled_from([2048, 4096, 8192]), batch=st.sampled_from([16, 64]),
       cluster=st.sampled_from(["dgx-v100-32g:2x4", "dgx-a100-80g:2x4", "dgx-v100-16g:1x8"]),
       mem=st.sampled_from([0.15, 0.3, 0.6]), sp=st.booleans())
# a mode holding the narrow layout's state per parameter fails it
@example(layers=3, hidden=4096, batch=16, cluster="dgx-v100-32g:2x4", mem=0.15, sp=False)
def test_every_widened_option_lies_above_a_stage_floor_mode(layers, hidden, batch, cluster, mem, sp):
    """The stage floor's relaxation: each per-layer TP option that fits, on any blocks as any stage,
    costs (c1 tau + exposed) and holds at least what some floor mode of its shape does."""
    model = transformer("small", layers=layers, hidden=hidden, heads=16, vocab=32000, seq=1024)
    train = Training(batch, 1024, memory_fraction=mem, memory_reserve=0, microbatches=(1, 2, 4),
                     recompute=("none", "full"), zero=(0, 1, 2), tp_layers=True, sequence_parallel=sp)
    search = PlanSearch(model, load_cluster(cluster), train)
    assert check_options_above_floor_modes(search, lambda sid, z: per_layer_tp(z))


@settings(max_examples=12, deadline=None)
@given(layers=st.integers(3, 8), hidden=st.sampled_from([2048, 4096, 8192]),
       batch=st.sampled_from([8, 16, 64]),
       cluster=st.sampled_from(["dgx-v100-32g:2x4", "dgx-a100-80g:2x4", "rtx-titan-24g:2x8",
                                "p3.16xlarge:2x8"]),
       mem=st.sampled_from([0.15, 0.3, 0.6]), zeros=st.sampled_from([(0,), (0, 2), (0, 1, 2, 3)]))
# a Jensen term that takes the narrow layout's all-reduce for every layer fails it (slow links between
# nodes, where widening halves what crosses them)
@example(layers=3, hidden=2048, batch=8, cluster="rtx-titan-24g:2x8", mem=0.15, zeros=(0,))
def test_the_floors_of_a_last_stage_lie_below_each_of_its_options(layers, hidden, batch, cluster, mem, zeros):
    """The floors a node's bound joins for its one remaining stage (the Jensen term of its steady
    and data-parallel time, the memory-aware suffix floor) are at most c1 tau + exposed of every
    option that fits there, the widened ones included."""
    model = transformer("small", layers=layers, hidden=hidden, heads=16, vocab=32000, seq=1024)
    train = Training(batch, 1024, memory_fraction=mem, memory_reserve=0, microbatches=(1, 2, 4),
                     recompute=("none", "full"), zero=zeros, tp_layers=True)
    search = PlanSearch(model, load_cluster(cluster), train)
    checked = 0
    for sid, sh in enumerate(search.shapes):
        if sh.mode != "pipe" or len(sh.parts) > 1 or sh.c1 < 1 or sh.p < 2 or not search.widenable(sid):
            continue
        tab, usable = search.part_table(sid, 0), train.usable(search.part_table(sid, 0).group)
        for lo in range(1, search.n):
            floor = search._time_floors(sid, lo, 1, [(0, 1)])[2]
            for rc, z in search._allowed(sid):
                cost = stage_cost(tab, lo, search.n, rc, z, sh.p - 1, sh.p, sh.m, sh.schedule, sh.v, sh.k,
                                  train, search.dp_link(sid, 0), None, search.n - 1, search.widened(sid, 0))
                if cost.memory <= usable:
                    assert floor <= (sh.c1 * cost.tau + cost.exposed) * (1 + 1e-9), (sid, lo, rc, z)
                    checked += per_layer_tp(z)
    assert checked


@pytest.mark.parametrize("zeros", [(0,), (0, 2), (0, 1, 2, 3)])
def test_the_memory_floor_lies_below_every_widened_one_stage_plan(zeros):
    """A shape's memory floor (the model state on its fullest GPU) is at most the memory of each
    widened option of a one-stage plan, every layer widened (memory too small for fewer)."""
    model = transformer("small", layers=4, hidden=4096, heads=32, vocab=1024, seq=1024)
    train = Training(8, 1024, memory_fraction=0.05, memory_reserve=0, microbatches=(1, 2), zero=zeros,
                     recompute=("none", "full"), tp_layers=True)
    search = PlanSearch(model, load_cluster("dgx-v100-32g:1x4"), train)
    checked = 0
    for sid, sh in enumerate(search.shapes):
        if sh.p != 1 or not search.widenable(sid):
            continue
        floor, _ = search.memory_floor(sid)
        tab = search.part_table(sid, 0)
        for rc, z in search._allowed(sid):
            if per_layer_tp(z):
                cost = stage_cost(tab, 0, search.n, rc, z, 0, 1, sh.m, sh.schedule, sh.v, sh.k, train,
                                  search.dp_link(sid, 0), None, search.n - 1, search.widened(sid, 0))
                assert cost.widened == 4 and floor <= cost.memory, (sh, rc, z)
                checked += 1
    assert checked


def _galvatron_plan(layered: bool, fraction: float = 0.7) -> tuple[dict, Training]:
    train = restrict(Training(128, 2048, zero=(0,), recompute=("none", "full", "block"), precision="fp16",
                              memory_fraction=fraction, tp_layers=layered), "galvatron")
    return plan(gpt_2_7b(), load_cluster("dgx-v100-32g:1x8"), train, top=1).extras, train


def test_galvatron_finding_mixing_tp_degrees_by_layer_beats_one_degree_per_stage():
    """Galvatron (Miao et al., VLDB 2023) chooses a TP degree per layer; its GPT example's searched
    plan mixes tp 2 and tp 1 by layer inside each of two pipeline stages. Under our model, GPT-2.7B
    on 8 V100-32GB at 70% of memory, batch 128, in Galvatron's space without sharded data
    parallelism (DDP; whole-layer checkpointing): tp 2, pp 2, with 12 of the first stage's 16
    layers at tp 4 and dp 1, 1.039x faster than the best plan with one degree per stage (the same
    shape recomputing 6 layers); at 90% of memory nothing is widened and the plans are the same."""
    seconds = {}
    for fraction in (0.7, 0.9):
        for layered in (False, True):
            extras, _ = _galvatron_plan(layered, fraction)
            seconds[fraction, layered] = extras["predicted"]["iteration_seconds"]
            chosen = extras["plan"]
            if layered and fraction == 0.7:
                assert (chosen["tp"], chosen["pp"], chosen["dp"]) == (2, 2, 2), chosen
                first, second = chosen["stages"]
                assert first["wide_tp"] == 4 and 8 <= first["wide_tp_layers"] < 16, first
                assert first["recompute"] == "none" and "wide_tp_layers" not in second, chosen
            if not layered:
                assert all("wide_tp_layers" not in s for s in chosen["stages"])
    assert seconds[0.7, False] > 1.03 * seconds[0.7, True]
    assert seconds[0.9, False] == pytest.approx(seconds[0.9, True], rel=1e-9)


def test_galvatron_strategy_file_gives_each_layer_its_tp_degree():
    extras, train = _galvatron_plan(True)
    launch, chosen = extras["launch"]["galvatron"], extras["plan"]
    assert "refused" not in launch, launch
    read = galvatron_strategy.read(launch["strategy"], launch["arguments"], extras["predicted"]["gpus"], 32)
    assert (read["pp"], read["dp"], read["microbatch"], read["microbatches"]) == (
        chosen["pp"], chosen["dp"], chosen["microbatch"], chosen["microbatches"])
    for got, stage in zip(read["stages"], chosen["stages"]):
        widened = stage.get("wide_tp_layers", 0)
        assert got["layer_tp"] == [2 * stage["tp"]] * widened + [stage["tp"]] * (got["layers"] - widened)
    assert launch["strategy"]["vtp"] == chosen["tp"]
    assert launch["arguments"]["sequence_parallel"] is True


def test_cli_prints_the_widened_layers_and_the_other_launchers_refuse_them(tmp_path):
    (tmp_path / "gpt.json").write_text(json.dumps({"name": "gpt-2.7b", "transformer": {
        "layers": 32, "hidden": 2560, "heads": 32, "vocab": 50304, "seq": 2048}}))
    argv = [*yewpy_cmd(), "dnn-plan", "--model", "gpt.json", "--cluster", "dgx-v100-32g:1x8",
            "--global-batch", "128", "--zero", "0", "--recompute", "none,full,block",
            "--memory-fraction", "0.7", "--tp-layers"]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert " tp=2+4:" in run.stdout and "larger TP degree than others" in run.stdout
    run = subprocess.run([*argv, "--json"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    chosen = json.loads(run.stdout)["plan"]
    assert chosen["stages"][0]["wide_tp"] == 4 and chosen["stages"][0]["wide_tp_layers"] > 0
    assert "larger TP degree" in megatron_refusal(chosen, gpt_2_7b(), Training(128, 2048))
    assert "tensor or pipeline parallelism" in deepspeed_refusal(chosen)
    for launcher in ("megatron", "deepspeed"):
        assert not restrict(Training(128, 2048, tp_layers=True), launcher).tp_layers
    assert restrict(Training(128, 2048, tp_layers=True), "galvatron").tp_layers
