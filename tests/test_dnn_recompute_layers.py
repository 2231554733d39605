"""Per-layer recomputation (``--recompute ...,block``): a stage recomputes in full the fewest of its
layers that let it fit, first layers first, as Megatron-LM's ``--recompute-method block`` does. The
stage arithmetic matches the reference cost, the search stays exact, and the launch lines say it or
refuse it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import megatron_args
import pytest
from dnn_oracle import check_bounds_below_completions, check_options_above_floor_modes
from hypothesis import given, settings
from hypothesis import strategies as st

from support import same_optimum, yewpy_cmd
from yewpy.apps.dnn.cluster import load_cluster
from yewpy.apps.dnn.cost import RECOMPUTE, StageTables, Training, inflight, stage_cost
from yewpy.apps.dnn.model_files import load_model
from yewpy.apps.dnn.models import transformer
from yewpy.apps.dnn.planner import ExhaustivePlanSearch, PlanSearch
from yewpy.apps.dnn.planner.launch import CannotExpress, deepspeed_config, megatron_arguments, restrict
from yewpy.apps.dnn_plan import plan
from yewpy.errors import UsageError

ALL = RECOMPUTE  # none, selective, full and block
VGG19 = str(Path(__file__).parent / "data" / "vgg19.json")


def small(layers: int, hidden: int = 4096) -> object:
    return transformer("small", layers=layers, hidden=hidden, heads=32, vocab=32000, seq=1024)


@settings(max_examples=40, deadline=None)
@given(layers=st.integers(1, 12), lo=st.integers(0, 13), width=st.integers(1, 14),
       room=st.floats(0.0, 40.0), inflight=st.sampled_from([1.0, 2.0, 4.0, 7.0]))
def test_fewest_recomputed_is_the_least_count_that_fits(layers, lo, width, room, inflight):
    """Against trying every count: the least r whose activations (and working set, once r > 0) fit."""
    model = small(layers, 2048)
    tab = StageTables(model, load_cluster("dgx-a100-80g:1x8").groups[0], 1, 1, 2, Training(16, 1024), False)
    n = len(model.blocks)
    lo = min(lo, n - 1)
    hi = min(n, lo + width)
    first, end = tab.layers(lo, hi)
    room *= 2**30 / 4

    def fits(r: int) -> bool:
        act = sum(tab.act["full" if first <= i < first + r else "none"][i + 1]
                  - tab.act["full" if first <= i < first + r else "none"][i] for i in range(lo, hi))
        return act * inflight + (tab.working_set if r else 0.0) <= room

    fitting = [r for r in range(max(0, end - first) + 1) if fits(r)]
    assert tab.fewest_recomputed(lo, hi, room, inflight) == (fitting[0] if fitting else None)


@pytest.mark.parametrize("cluster", ["dgx-a100-80g:1x8", "dgx-a100-80g:1x4+dgx-v100-16g:1x4"])
def test_block_options_match_stage_cost(cluster):
    """Every per-layer option of the batched stage arithmetic equals stage_cost (through make), on
    stages of several blocks, for pipe and hap shapes; and each recomputes the fewest layers."""
    model = small(9)
    search = PlanSearch(model, load_cluster(cluster),
                        Training(32, 1024, memory_fraction=0.35, memory_reserve=0, microbatches=(1, 2),
                                 recompute=("none", "full", "block")))
    checked = partial = 0
    for sid, sh in enumerate(search.shapes):
        if sh.p < 2:
            continue
        node = search.start_node(sid)
        g = 0 if sh.mode == "pipe" else None
        for k in range(1, search.n - (sh.p - 1) * sh.v + 1):  # blocks left for the other stages
            for opt in search.stage_terms(sid, g, 0, k, 0, None):
                if opt[3] != "block":
                    continue
                child = search.make(sid, node, g, k, "block", opt[4])
                assert child is not None
                if sh.mode == "pipe":
                    assert child[4][0] == pytest.approx(opt[0], rel=1e-12)
                    assert child[5][0] == pytest.approx(opt[1], rel=1e-12)
                assert child[6] == pytest.approx(opt[2], rel=1e-12)
                for part in [g] if sh.mode == "pipe" else range(len(sh.parts)):
                    tab = search.part_table(sid, part)
                    args = (0, k, "block", opt[4], 0, sh.p, sh.m if sh.mode == "pipe" else sh.p, sh.schedule,
                            sh.v, sh.k, search.train, search.dp_link(sid, part), None, search.n - 1)
                    cost = stage_cost(tab, *args)
                    assert cost.memory <= search.train.usable(tab.group)
                    if cost.recomputed:  # one layer fewer does not fit
                        fewer = tab.partial(tab.act, 0, k, cost.recomputed - 1)
                        more = tab.partial(tab.act, 0, k, cost.recomputed)
                        assert cost.memory - more * _inflight(sh) + fewer * _inflight(sh) - (
                            tab.working_set if cost.recomputed == 1 else 0.0) > search.train.usable(tab.group)
                        partial += cost.recomputed < tab.layers(0, k)[1] - tab.layers(0, k)[0]
                checked += 1
    assert checked > 20 and partial > 0


def _inflight(sh) -> float:
    return inflight(sh.schedule, 0, sh.p, sh.m if sh.mode == "pipe" else sh.p, sh.v, sh.k)


@settings(max_examples=20, deadline=None)
@given(layers=st.integers(3, 8), hidden=st.sampled_from([2048, 4096, 8192]),
       batch=st.sampled_from([16, 32, 128]),
       cluster=st.sampled_from(["dgx-a100-80g:1x8", "dgx-a100-80g:2x4", "dgx-v100-16g:2x4",
                                "dgx-a100-80g:1x2+dgx-v100-16g:1x2"]),
       mem=st.sampled_from([0.2, 0.35, 0.6]))
def test_the_search_with_per_layer_recomputation_equals_the_exhaustive_tree(layers, hidden, batch, cluster,
                                                                           mem):
    model = small(layers, hidden)
    train = Training(batch, 1024, memory_fraction=mem, memory_reserve=0, microbatches=(1, 2, 4),
                     recompute=ALL)
    bnb = PlanSearch(model, load_cluster(cluster), train).search(prune_level=False)
    exhaustive = ExhaustivePlanSearch(model, load_cluster(cluster), train).search(prune_level=False)
    if same_optimum(bnb, exhaustive):
        assert bnb.nodes <= exhaustive.nodes


@pytest.mark.parametrize("zero_layers", [False, True])
@pytest.mark.parametrize("recompute", [("block",), ("block", "full"), ("none", "block")])
def test_stage_floor_modes_hold_every_block_stage(recompute, zero_layers):
    """Every "block" stage that fits (alone or with per-layer ZeRO) costs and holds at least some floor
    mode of its shape (``bounds._block_variants``): on layers that cost alike, the mode of its
    recomputed share's quarter; a stage that recomputes no layer (the embedding alone, or layers
    that fit without) holds every activation and no working set."""
    train = Training(32, 1024, memory_fraction=0.2, memory_reserve=0, microbatches=(1, 2),
                     recompute=recompute, zero=(0, 1, 3), zero_layers=zero_layers)
    search = PlanSearch(small(5), load_cluster("dgx-a100-80g:1x8"), train)
    assert search._recompute_steps(search.part_table(0, 0)) is not None  # transformer layers: quarters
    assert check_options_above_floor_modes(search, lambda sid, z: True) > 1000


@pytest.mark.parametrize("layers, hidden, mem", [(5, 4096, 0.2), (6, 4096, 0.25), (5, 8192, 0.6)])
def test_hap_floors_split_block_by_share_and_stay_below_every_plan(layers, hidden, mem, monkeypatch):
    """A hap shape's per-class floor (``bounds._hap_modes``) takes "block" as pipe shapes do, one mode
    per quarter of the recomputed share on layers that cost alike: never below the single mode at
    the least time and activations of any count, above it on some shape here, and below every
    completion of the exhaustive tree, and each plan's largest stage per class above its class's
    floor; the search's plan is the exhaustive tree's. (Charging each bucket 3/K of the layers'
    extra time more fails here; 1/K more, the bucket's top, is not caught on these instances.)"""
    cluster = "dgx-a100-80g:1x4+dgx-v100-32g:1x4"
    train = Training(32, 1024, memory_fraction=mem, memory_reserve=0, microbatches=(1, 2),
                     recompute=("none", "block"), zero=(0, 1))

    def hap_floors(search: PlanSearch) -> list[float]:
        return [search._hap_suffix(i, c, 0, sh.p, 0.0) for i, sh in enumerate(search.shapes)
                if sh.mode == "hap" and sh.p > 1 for c in range(len(sh.parts))]

    search = PlanSearch(small(layers, hidden), load_cluster(cluster), train)
    quarters = hap_floors(search)
    with monkeypatch.context() as m:
        m.setattr(PlanSearch, "_recompute_steps", lambda self, tab: None)  # the single mode
        single = hap_floors(PlanSearch(small(layers, hidden), load_cluster(cluster), train, rank=False))
    assert all(q >= s * (1 - 1e-12) for q, s in zip(quarters, single))
    assert any(q > s * (1 + 1e-6) for q, s in zip(quarters, single))
    exhaustive = ExhaustivePlanSearch(small(layers, hidden), load_cluster(cluster), train)
    hap = [i for i, sh in enumerate(search.shapes) if sh.mode == "hap" and sh.p > 1]
    assert check_bounds_below_completions(search, exhaustive, hap, lambda node: True) > 50
    leaves = 0

    def walk(node: tuple) -> None:  # every plan's largest stage per class lies above its class's floor
        nonlocal leaves
        if not any(node[3]):
            sid, largest = node[1], node[5]
            p = search.shapes[sid].p
            floors = [search._hap_suffix(sid, c, 0, p, 0.0) for c in range(len(largest))]
            assert all(x >= f * (1 - 1e-9) for x, f in zip(largest, floors)), (sid, largest, floors)
            leaves += 1
            return
        for child in exhaustive.children(node):
            walk(child)

    for sid in hap:
        walk(exhaustive.start_node(sid))
    assert leaves > 20
    assert same_optimum(search.search(prune_level=False), exhaustive.search(prune_level=False))


def test_block_floor_modes_on_layers_that_differ_hold_every_stage():
    """VGG-19's layers differ, so "block" keeps one mode at its least time and activations (and one
    without recomputation where none is not allowed), below every stage that fits."""
    train = Training(480, 1, max_tp=1, precision="fp16", memory_fraction=0.3, recompute=("block",),
                     zero=(0, 1))
    search = PlanSearch(load_model(VGG19), load_cluster("p3.16xlarge:2x8"), train)
    assert search._recompute_steps(search.part_table(0, 0)) is None
    assert check_options_above_floor_modes(search, lambda sid, z: True) > 1000


def test_megatron_readme_finding_fewest_layers_that_fit_beat_all_or_nothing():
    """Megatron-LM's README ("Activation Recomputation", the block method): recompute the first N
    layers of a stage, N raised until the stage just fits, to use the memory fully and run fastest.
    Under our model, on the 18.4B model at tp 2, pp 4, b 2, 1F1B without sequence parallelism: the
    fewest layers per stage beat recomputing every layer or none of a stage (at 60% of 80 GB: 7.35
    against 8.14 s), and, as 1F1B keeps p - j micro-batches in flight on stage j, the counts fall
    along the pipeline (4, 3, 1, 0): one count for every stage, as Megatron-LM takes, would recompute
    more than the later stages need (Galvatron-BMW's and FlagScale's per-stage counts)."""
    model = load_model("megatron-18.4b")
    cluster = load_cluster("dgx-a100-80g:32x8")
    fix = {"tp": 2, "pp": 4, "mb": 2, "schedule": "1f1b"}
    for fraction, gain in ((0.9, 1.01), (0.6, 1.05)):
        best = {}
        for modes in (("none", "full"), ("none", "full", "block")):
            train = Training(1024, 2048, recompute=modes, zero=(0, 1), sequence_parallel=False, fix=fix,
                             memory_fraction=fraction)
            best[modes] = plan(model, cluster, train, top=1).extras
        all_or_nothing, per_layer = best[("none", "full")], best[("none", "full", "block")]
        assert (all_or_nothing["predicted"]["iteration_seconds"]
                > gain * per_layer["predicted"]["iteration_seconds"])
        counts = [s.get("recomputed_layers", 0) for s in per_layer["plan"]["stages"]]
        assert all(s["recompute"] in ("none", "block") for s in per_layer["plan"]["stages"])
        assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1], counts
        stages = per_layer["plan"]["stages"]
        assert all(c < s["blocks"][1] - s["blocks"][0] - 1 for c, s in zip(counts, stages))


def _plan_with(recomputed: list[int], schedule: str = "1f1b", v: int = 1) -> dict:
    layers = [(0, 11), (11, 21), (21, 31), (31, 42)]  # 40 layers, embedding and head: 10 per stage
    return {"mode": "pipe", "tp": 2, "pp": 4, "dp": 8, "cp": 1, "ep": 1, "microbatch": 1, "microbatches": 64,
            "schedule": schedule, "interleave": v, "group_size": 1, "token_slices": 1,
            "stages": [{"blocks": [lo, hi], "recompute": "block", "recomputed_layers": r, "zero": 1}
                       for (lo, hi), r in zip(layers, recomputed)]}


def test_megatron_runs_one_count_for_every_stage_and_refuses_others():
    model, train = load_model("megatron-18.4b"), Training(512, 2048)
    argv = megatron_arguments(_plan_with([3, 3, 3, 3]), model, train)
    assert argv[argv.index("--recompute-method") + 1] == "block"
    assert argv[argv.index("--recompute-num-layers") + 1] == "3"
    built = megatron_args.megatron(argv, 64)
    assert built["recompute"] == "block" and built["recompute_layers"] == 3
    assert built == megatron_args.plan_view(_plan_with([3, 3, 3, 3]), model.meta, "bf16")
    argv = megatron_arguments(_plan_with([4, 4, 4, 4], "interleaved", 2), model, train)
    assert argv[argv.index("--recompute-num-layers") + 1] == "2"             # per virtual stage
    assert megatron_args.megatron(argv, 64)["recompute_layers"] == 4
    argv = megatron_arguments(_plan_with([0, 0, 0, 0]), model, train)   # --recompute block, nothing to do
    assert "--recompute-granularity" not in argv and megatron_args.megatron(argv, 64)["recompute"] == "none"
    with pytest.raises(CannotExpress, match="different numbers of layers"):
        megatron_arguments(_plan_with([3, 2, 2, 0]), model, train)
    with pytest.raises(CannotExpress, match="multiple of v=2"):
        megatron_arguments(_plan_with([3, 3, 3, 3], "interleaved", 2), model, train)
    with pytest.raises(CannotExpress, match="model's code"):
        deepspeed_config(dict(_plan_with([3]), tp=1, pp=1, stages=_plan_with([3])["stages"][:1]), train)


def test_launchers_that_cannot_say_it_do_not_search_it():
    train = Training(512, 2048, recompute=ALL)
    assert "block" not in restrict(train, "megatron").recompute
    assert "block" not in restrict(train, "deepspeed").recompute
    with pytest.raises(UsageError, match="recomputation mode"):
        restrict(Training(512, 2048, recompute=("block",)), "megatron")


CLI = ["dnn-plan", "--model", "megatron-18.4b", "--cluster", "dgx-a100-80g:32x8", "--global-batch", "1024",
       "--recompute", "none,full,block", "--zero", "0,1", "--no-sp", "--fix", "tp=2,pp=4,mb=2,schedule=1f1b"]


def test_cli_prints_the_recomputed_layers():
    run = subprocess.run([*yewpy_cmd(), *CLI], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "recompute=block:1 " in run.stdout
    assert "recompute different numbers of layers" in run.stdout or "recompute differently" in run.stdout
    run = subprocess.run([*yewpy_cmd(), *CLI, "--json"], capture_output=True, text=True, timeout=120)
    stages = json.loads(run.stdout)["plan"]["stages"]
    assert [s.get("recomputed_layers") for s in stages if s["recompute"] == "block"] == [1]
