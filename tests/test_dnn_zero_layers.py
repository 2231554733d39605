"""Per-layer ZeRO (``--zero ...,layers``, Galvatron-BMW's per-layer sharded data parallelism): a stage
shards with ZeRO-3 the fewest of its layers that let it fit, first layers first, and keeps the rest
under the ZeRO stage B it would otherwise use (option ``B+3``). The stage arithmetic matches the
reference cost, the search stays exact, and the launchers refuse what they cannot run."""

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
from yewpy.apps.dnn.cost import (
    ZERO_LAYERS,
    StageTables,
    Training,
    per_layer_zero,
    stage_cost,
    state_bytes_per_param,
)
from yewpy.apps.dnn.model_files import load_model
from yewpy.apps.dnn.models import transformer
from yewpy.apps.dnn.planner import ExhaustivePlanSearch, PlanSearch
from yewpy.apps.dnn.planner.launch import deepspeed_refusal, galvatron_refusal, megatron_refusal, restrict
from yewpy.apps.dnn_plan import plan
from yewpy.errors import UsageError


def small(layers: int, hidden: int = 4096) -> object:
    return transformer("small", layers=layers, hidden=hidden, heads=32, vocab=32000, seq=1024)


@settings(max_examples=60, deadline=None)
@given(layers=st.integers(1, 12), lo=st.integers(0, 13), width=st.integers(1, 14),
       over=st.floats(-1.0, 6.0), gather=st.floats(0.0, 2.0), experts=st.sampled_from([0, 4]))
def test_fewest_sharded_is_the_least_count_that_saves_enough(layers, lo, width, over, gather, experts):
    """Against trying every count: the least r whose saving, less the gather buffer once r > 0,
    covers ``over`` (dense models take a bisection of their own, MoE ones the general one)."""
    model = transformer("small", layers=layers, hidden=2048, heads=32, vocab=32000, seq=1024, experts=experts)
    tab = StageTables(model, load_cluster("dgx-a100-80g:2x8").groups[0], 1, 16, 2, Training(32, 1024), True)
    n = len(model.blocks)
    lo = min(lo, n - 1)
    hi = min(n, lo + width)
    first, end = tab.layers(lo, hi)
    over, gather = over * 2**30, gather * 2**30
    per = state_bytes_per_param(1, 16) - state_bytes_per_param(3, 16)

    def saves(r: int) -> bool:
        params = sum(tab.dense[i + 1] - tab.dense[i] + tab.expert[i + 1] - tab.expert[i]
                     for i in range(first, first + r))
        return params * per - (gather if r else 0.0) >= over

    fitting = [r for r in range(max(0, end - first) + 1) if saves(r)]
    assert tab.fewest_sharded(lo, hi, over, per, per, gather) == (fitting[0] if fitting else None)


@pytest.mark.parametrize("cluster", ["dgx-v100-32g:2x8", "dgx-a100-80g:1x4+dgx-v100-16g:1x4"])
def test_per_layer_options_match_stage_cost(cluster):
    """Every per-layer ZeRO option of the batched stage arithmetic equals stage_cost (through make),
    on stages of several blocks, for pipe and hap shapes; each shards the fewest layers that fit,
    some shard only part of their layers, and some also recompute some (fewer than without)."""
    model = small(9)
    search = PlanSearch(model, load_cluster(cluster),
                        Training(32, 1024, memory_fraction=0.3, memory_reserve=0, microbatches=(1, 2),
                                 zero=(0, 1, 2), zero_layers=True, recompute=("none", "full", "block")))
    checked = partial = both = 0
    for sid, sh in enumerate(search.shapes):
        node = search.start_node(sid)
        g = 0 if sh.mode == "pipe" else None
        ks = [search.n] if sh.p == 1 else range(1, search.n - (sh.p - 1) * sh.v + 1)  # room for the rest
        for k in ks:
            for opt in search.stage_terms(sid, g, 0, k, 0, None):
                if opt[4] < ZERO_LAYERS:
                    continue
                child = search.make(sid, node, g, k, opt[3], opt[4])
                assert child is not None
                if sh.mode == "pipe":
                    assert child[4][0] == pytest.approx(opt[0], rel=1e-12)
                    assert child[5][0] == pytest.approx(opt[1], rel=1e-12)
                assert child[6] == pytest.approx(opt[2], rel=1e-12)
                shards = 0
                for part in [g] if sh.mode == "pipe" else range(len(sh.parts)):
                    tab = search.part_table(sid, part)
                    args = (0, k, opt[3], opt[4], 0, sh.p, sh.m if sh.mode == "pipe" else sh.p, sh.schedule,
                            sh.v, sh.k, search.train, search.dp_link(sid, part), None, search.n - 1)
                    cost = stage_cost(tab, *args)
                    usable = search.train.usable(tab.group)
                    assert cost.memory <= usable * (1 + 1e-12)
                    base = stage_cost(tab, *args[:3], opt[4] - ZERO_LAYERS, *args[4:])
                    if opt[3] == "block":  # sharding lets it recompute fewer layers than without
                        assert cost.recomputed <= base.recomputed or base.memory > usable
                        if cost.sharded:
                            assert cost.recomputed < base.recomputed or base.memory > usable
                        both += cost.recomputed > 0 and cost.sharded > 0
                    else:
                        assert (base.memory > usable) == (cost.sharded > 0)  # it shards only where needed
                    if cost.sharded > 1:  # one layer fewer does not fit (none: ``base`` above)
                        tr = search.train
                        widths = (tr.weight_bytes, tr.grad_bytes, tr.optimizer_bytes)
                        saving = (state_bytes_per_param(opt[4] - ZERO_LAYERS, tab.d, *widths)
                                  - state_bytes_per_param(3, tab.d, *widths))
                        dense = tab.sharded(0, k, cost.sharded)[0] - tab.sharded(0, k, cost.sharded - 1)[0]
                        assert cost.memory + dense * saving > usable
                    layers = tab.layers(0, k)[1] - tab.layers(0, k)[0]
                    assert cost.sharded <= layers
                    shards += cost.sharded > 0
                    partial += 0 < cost.sharded < layers
                assert shards
                checked += 1
    assert checked > 10 and partial > 0 and both > 0


@settings(max_examples=12, deadline=None)
@given(layers=st.integers(3, 8), hidden=st.sampled_from([2048, 4096, 8192]),
       batch=st.sampled_from([16, 32, 128]),
       cluster=st.sampled_from(["dgx-a100-80g:2x4", "dgx-v100-32g:2x4", "dgx-v100-16g:4x2",
                                "dgx-a100-80g:1x2+dgx-v100-16g:1x2"]),
       mem=st.sampled_from([0.15, 0.25, 0.4, 0.6]), zeros=st.sampled_from([(0, 1, 2, 3), (1,), (0, 2)]))
# optima that a floor with ZeRO-1's state for the option, a Jensen term hiding both kinds of traffic
# at once, or the line of a whole-stage ZeRO stage in place of the per-layer one, would cut
@example(layers=8, hidden=4096, batch=128, cluster="dgx-v100-32g:2x4", mem=0.25, zeros=(1,))
@example(layers=6, hidden=4096, batch=32, cluster="dgx-a100-80g:2x4", mem=0.15, zeros=(0, 2))
@example(layers=5, hidden=8192, batch=16, cluster="dgx-v100-32g:4x2", mem=0.4, zeros=(1,))
def test_the_search_with_per_layer_zero_equals_the_exhaustive_tree(layers, hidden, batch, cluster, mem,
                                                                   zeros):
    model = small(layers, hidden)
    train = Training(batch, 1024, memory_fraction=mem, memory_reserve=0, microbatches=(1, 2, 4),
                     recompute=("none", "full", "block"), zero=zeros, zero_layers=True)
    bnb = PlanSearch(model, load_cluster(cluster), train).search(prune_level=False)
    exhaustive = ExhaustivePlanSearch(model, load_cluster(cluster), train).search(prune_level=False)
    if same_optimum(bnb, exhaustive):
        assert bnb.nodes <= exhaustive.nodes


GALVATRON_LIKE = ["--model", "x.json", "--cluster", "dgx-v100-32g:4x8", "--global-batch", "512",
                  "--fix", "tp=1,pp=1", "--memory-fraction", "0.6"]


def galvatron_like_model() -> object:
    """2.4B parameters in 48 layers of width 2048: the depth and size of the T5-3B that Galvatron's
    searched configuration shards by layer (docs/dnn.md)."""
    return transformer("galvatron-like", layers=48, hidden=2048, heads=32, vocab=32000, seq=2048)


def thirteen_b() -> object:
    return transformer("13b", layers=40, hidden=5120, heads=40, vocab=32000, seq=2048)


def _best(model, cluster: str, fraction: float, layered: bool, launcher: str = "none", **kw) -> dict:
    train = restrict(Training(512, 2048, fix={"tp": 1, "pp": 1}, memory_fraction=fraction,
                              zero_layers=layered, **kw), launcher)
    return plan(model, load_cluster(cluster), train, top=1).extras


def test_galvatron_finding_per_layer_sharding_beats_all_or_nothing_where_memory_binds():
    """Galvatron-BMW (Wang et al., TKDE 2024) searches data, sharded-data (ZeRO-3), tensor and pipeline
    parallelism and checkpointing per layer, and finds the hybrid faster than spaces of one strategy
    for the whole model. Its own searched plan for T5-3B on 8 GPUs under 34 GB
    (Hetu-Galvatron, galvatron_config_t5-3B_1nodes_8gpus_per_node_34GB_bf16) is pure data
    parallelism, every layer checkpointed, 41 of its 48 layers under ZeRO-3 and 7 under ZeRO-2.
    Under our model, pure data parallelism on 32 V100s (4 nodes), batch 512:
    - in Galvatron's space (whole-layer checkpointing; DDP, ZeRO-2 or ZeRO-3), a 13B model at 50%
      of 32 GB: the same shape of plan (every layer checkpointed, most layers under ZeRO-3, the rest
      under ZeRO-2), 1.09x faster than sharding all or none; at 70% both shard everything alike;
    - with selective recomputation and ZeRO-1 too, the 2.4B model at 60%: 1.27x, with about half
      its layers under ZeRO-3; at 90% within 1%."""
    seconds = {}
    for fraction in (0.7, 0.5):
        for layered in (False, True):
            extras = _best(thirteen_b(), "dgx-v100-32g:4x8", fraction, layered, "galvatron",
                           recompute=("none", "full"))
            seconds[fraction, layered] = extras["predicted"]["iteration_seconds"]
            stage = extras["plan"]["stages"][0]
            if layered and fraction == 0.5:
                assert (stage["recompute"], stage["zero"]) == ("full", 2), stage
                assert 30 <= stage["zero3_layers"] < 40, stage
    assert seconds[0.5, False] > 1.08 * seconds[0.5, True]
    assert seconds[0.7, False] == pytest.approx(seconds[0.7, True], rel=1e-9)
    for fraction in (0.9, 0.6):
        for layered in (False, True):
            extras = _best(galvatron_like_model(), "dgx-v100-32g:4x8", fraction, layered)
            seconds[fraction, layered] = extras["predicted"]["iteration_seconds"]
            stage = extras["plan"]["stages"][0]
            if layered and fraction == 0.6:
                assert stage["zero"] == 2 and 16 <= stage["zero3_layers"] <= 32, stage
            if not layered:
                assert "zero3_layers" not in stage
    assert seconds[0.6, False] > 1.2 * seconds[0.6, True]
    assert seconds[0.9, False] == pytest.approx(seconds[0.9, True], rel=0.01)


def test_cli_prints_the_sharded_layers_and_the_launchers_refuse_them(tmp_path):
    (tmp_path / "x.json").write_text(json.dumps({"name": "galvatron-like", "transformer": {
        "layers": 48, "hidden": 2048, "heads": 32, "vocab": 32000, "seq": 2048}}))
    argv = [*yewpy_cmd(), "dnn-plan", *GALVATRON_LIKE, "--zero", "0,1,2,3,layers"]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert " zero=2+3:" in run.stdout
    assert "shards only some layers with ZeRO-3" in run.stdout
    run = subprocess.run([*argv, "--json"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    out = json.loads(run.stdout)
    stage = out["plan"]["stages"][0]
    assert stage["zero"] == 2 and 0 < stage["zero3_layers"] < 48
    assert "ZeRO-3" in megatron_refusal(out["plan"], galvatron_like_model(), Training(512, 2048))
    assert "ZeRO-3" in deepspeed_refusal(out["plan"])
    for bad, says in (("layers", "name the ZeRO stages"), ("3,layers", "name the ZeRO stages"),
                      ("1,lay", "'lay' is not one of")):
        run = subprocess.run([*yewpy_cmd(), "dnn-plan", *GALVATRON_LIKE, "--zero", bad], capture_output=True,
                             text=True, timeout=120, cwd=tmp_path)
        assert run.returncode == 2, run.stderr
        assert run.stderr.startswith("yewpy: error: --zero") and says in run.stderr, run.stderr


def test_launchers_that_cannot_say_it_do_not_search_it():
    train = Training(512, 2048, zero_layers=True)
    assert not restrict(train, "megatron").zero_layers
    assert not restrict(train, "deepspeed").zero_layers


def _galvatron_reads_the_plan(extras: dict, model, train: Training) -> dict:
    """The strategy file Galvatron reads back, checked against the plan: stages, degrees, and per
    layer which are under ZeRO-3 and which are checkpointed (the first ones of each stage)."""
    chosen, launch = extras["plan"], extras["launch"]["galvatron"]
    assert "refused" not in launch, launch
    world = extras["predicted"]["gpus"]
    n = len(model.blocks)
    layers = [hi - lo - (lo == 0) - (hi == n) for lo, hi in (s["blocks"] for s in chosen["stages"])]
    read = galvatron_strategy.read(launch["strategy"], launch["arguments"], world, sum(layers))
    assert (read["pp"], read["dp"], read["microbatch"], read["microbatches"]) == (
        chosen["pp"], chosen["dp"], chosen["microbatch"], chosen["microbatches"])
    assert read["schedule"] == {"1f1b": "pipedream_flush", "gpipe": "gpipe"}[chosen["schedule"]]
    for got, stage, count in zip(read["stages"], chosen["stages"], layers):
        assert got["layers"] == count and got["tp"] == chosen["tp"]
        sharded = sum(got["zero3"])
        assert got["zero3"] == sorted(got["zero3"], reverse=True)  # the first layers
        assert sharded == (count if stage["zero"] == 3 else stage.get("zero3_layers", 0))
        if stage["zero"] != 3:
            assert read["default"] == {0: "ddp", 2: "zero2"}[stage["zero"]]
        ckpt = sum(got["checkpoint"])
        assert got["checkpoint"] == sorted(got["checkpoint"], reverse=True)
        assert ckpt == {"none": 0, "full": count, "block": stage.get("recomputed_layers")}[stage["recompute"]]
    assert read["vocab_sdp"] == (chosen["stages"][0]["zero"] == 3)
    assert launch["arguments"]["mixed_precision"] == train.precision
    return read


def test_galvatron_runs_per_layer_sharding_and_checkpointing():
    """Galvatron's strategy file says per layer what the plan chose: the finding's plan (ZeRO-2 with
    the first layers under ZeRO-3, every layer checkpointed), and a pipeline with per-layer
    recomputation."""
    train = restrict(Training(512, 2048, fix={"tp": 1, "pp": 1}, memory_fraction=0.5, zero_layers=True,
                              recompute=("none", "full", "block")), "galvatron")
    extras = plan(thirteen_b(), load_cluster("dgx-v100-32g:4x8"), train, top=1).extras
    read = _galvatron_reads_the_plan(extras, thirteen_b(), train)
    assert read["default"] == "zero2" and 0 < sum(read["stages"][0]["zero3"]) < 40
    assert extras["launch"]["galvatron"]["arguments"]["async_grad_reduce"] is False
    train = restrict(Training(1024, 2048, zero=(0, 2, 3), zero_layers=True,
                              recompute=("none", "full", "block"), memory_fraction=0.6,
                              sequence_parallel=False, fix={"tp": 2, "pp": 4, "mb": 2, "schedule": "1f1b"}),
                     "galvatron")
    extras = plan(load_model("megatron-18.4b"), load_cluster("dgx-a100-80g:32x8"), train, top=1).extras
    read = _galvatron_reads_the_plan(extras, load_model("megatron-18.4b"), train)
    assert any(0 < sum(s["checkpoint"]) < s["layers"] for s in read["stages"])


@pytest.mark.parametrize("change, says", [
    ({"schedule": "interleaved", "interleave": 2}, "no interleaved schedule"),
    ({"stage": {"recompute": "selective"}}, "whole layers"),
    ({"stage": {"zero": 1}}, "ZeRO-1"),
    ({"last": {"zero": 0}}, "different ZeRO stages"),
    ({"first": {"zero": 3}}, "vocab_sdp"),
    ({"mode": "hap"}, "micro-batch shares"),
    ({"dp": [4, 2]}, "data-parallel degree"),
    ({"schedule": "kfkb", "group_size": 2}, "no kfkb schedule"),
    ({"last": {"wan": {"compression": 10.0}}}, "compresses activations"),
    ({"first": {"blocks": [0, 1]}, "second": {"blocks": [1, 21]}}, "holds no transformer layer"),
    ({"model": "t5"}, "not a decoder-only transformer"),
])
def test_galvatron_refuses_what_its_strategy_file_cannot_say(change, says):
    stages = [{"blocks": [lo, hi], "recompute": "none", "zero": 2}
              for lo, hi in ((0, 11), (11, 21), (21, 31), (31, 42))]
    chosen = {"mode": "pipe", "tp": 2, "pp": 4, "dp": 8, "cp": 1, "ep": 1, "microbatch": 1,
              "microbatches": 64, "schedule": "1f1b", "interleave": 1, "group_size": 1, "token_slices": 1,
              "stages": stages}
    model, train = load_model("megatron-18.4b"), Training(512, 2048)
    assert galvatron_refusal(chosen, model, train) is None
    for key, value in change.items():
        if key in ("stage", "first"):
            stages[0].update(value)
        elif key == "second":
            stages[1].update(value)
        elif key == "last":
            stages[-1].update(value)
        elif key == "model":
            model = transformer("t5-like", layers=20, hidden=1024, heads=16, vocab=32000, seq=512,
                                decoder_layers=20)
        else:
            chosen[key] = value
    assert says in galvatron_refusal(chosen, model, train)
    with pytest.raises(UsageError, match="context or expert"):
        restrict(Training(512, 2048, fix={"cp": 2}), "galvatron")


@settings(max_examples=6, deadline=None)
@given(layers=st.integers(3, 6), hidden=st.sampled_from([2048, 4096, 8192]), batch=st.sampled_from([16, 64]),
       cluster=st.sampled_from(["dgx-v100-32g:4x2", "dgx-a100-80g:2x4", "dgx-v100-16g:8x1"]),
       mem=st.sampled_from([0.15, 0.3, 0.6]), experts=st.sampled_from([0, 0, 4]),
       zero=st.sampled_from([(0, 1, 2, 3), (0, 1, 2, 3), (0, 2, 3), (0, 3)]))
# a mode holding its bucket's least sharding fails the first, one charging its bucket's most
# traffic the second
@example(layers=3, hidden=8192, batch=16, cluster="dgx-v100-32g:4x2", mem=0.3, experts=0, zero=(0, 1, 2, 3))
@example(layers=4, hidden=8192, batch=16, cluster="dgx-a100-80g:2x4", mem=0.15, experts=0, zero=(0, 1, 2, 3))
@example(layers=4, hidden=8192, batch=16, cluster="dgx-a100-80g:2x4", mem=0.15, experts=0, zero=(0, 3))
def test_every_per_layer_option_lies_above_a_stage_floor_mode(layers, hidden, batch, cluster, mem, experts,
                                                               zero):
    """The stage floor's relaxation: each per-layer ZeRO option that fits, on any blocks as any stage,
    costs (c1 tau + exposed) and holds at least what some floor mode of its shape does, so a floor
    built from the modes is at most every plan's time. Over ZeRO-0 too (``zero`` without 1: with it,
    ZeRO-1 replaces ZeRO-0)."""
    model = transformer("small", layers=layers, hidden=hidden, heads=16, vocab=32000, seq=1024,
                        experts=experts)
    train = Training(batch, 1024, memory_fraction=mem, memory_reserve=0, microbatches=(1, 2, 4),
                     recompute=("none", "full", "block"), zero=zero, zero_layers=True)
    search = PlanSearch(model, load_cluster(cluster), train)
    assert check_options_above_floor_modes(search, lambda sid, z: per_layer_zero(z))


def test_the_floor_charges_every_sharding_its_gather_buffer_and_zero2_its_reduce_scatters():
    """Table 1's 1T model on 512 A100 with both per-layer choices, at pp 32, tp 8, dp 2, 1F1B: the
    first stage must recompute to hold the embedding and four layers at 32 micro-batches in flight.
    The floor let it shard a quarter of its layers for free, without ZeRO-3's gather buffer (over
    ZeRO-1) or without ZeRO-2's reduce-scatter at every micro-batch (over ZeRO-2), and the shape's
    root bound was 0.83 of its best plan: 9,700 of the search's 12,700 nodes. Either gap alone
    keeps it there."""
    train = Training(2048, 2048, recompute=("none", "selective", "full", "block"), zero_layers=True,
                     fix={"pp": 32, "tp": 8, "dp": 2, "schedule": "1f1b", "mb": 1})
    search = PlanSearch(load_model("megatron-1t"), load_cluster("dgx-a100-80g:64x8"), train, top=1)
    assert len(search.shapes) == 1
    search._stage_floored(0)
    bound = search.root_lb[0]
    best = search.search().objective
    assert 0.93 * best < bound <= best


def test_galvatron_llama_plan_recomputes_and_shards_some_layers_of_one_stage():
    """Galvatron's searched plan for a Llama-7B shape on 8 GPUs under 36 GB (Hetu-Galvatron, dev branch,
    galvatron_config_hidden4096_head32_1nodes_8gpus_per_node_36GB_bf16_[tpconsec_off].json) checkpoints
    29 of 32 layers and keeps 3 of them off ZeRO-3, in one stage. Under our model, a Llama-7B shape
    on 16 A100-40GB (2 nodes) in Galvatron's space, pure data parallelism, batch 64: the plan
    recomputes some but not all layers and shards some but not all with ZeRO-3 (the rest ZeRO-2),
    2% faster than without per-layer ZeRO, and Galvatron's strategy file says both per layer."""
    model = transformer("llama-7b-like", layers=32, hidden=4096, heads=32, vocab=32000, seq=2048, ffn=11008,
                        swiglu=True, bias=False, tied=False, positions=False)
    seconds = {}
    for layered in (False, True):
        train = restrict(Training(64, 2048, fix={"tp": 1, "pp": 1}, recompute=("none", "full", "block"),
                                  zero=(0, 2, 3), zero_layers=layered), "galvatron")
        extras = plan(model, load_cluster("dgx-a100-40g:2x8"), train, top=1).extras
        seconds[layered] = extras["predicted"]["iteration_seconds"]
    stage = extras["plan"]["stages"][0]
    assert stage["recompute"] == "block" and 0 < stage["recomputed_layers"] < 32, stage
    assert stage["zero"] == 2 and 0 < stage["zero3_layers"] < 32, stage
    assert seconds[False] > 1.02 * seconds[True]
    read = _galvatron_reads_the_plan(extras, model, train)
    assert 0 < sum(read["stages"][0]["checkpoint"]) < 32 and 0 < sum(read["stages"][0]["zero3"]) < 32
