"""Launch output that is the plan: Megatron-LM arguments and DeepSpeed configs read back by an oracle
of the launchers' own rules (tests/megatron_args.py) must give the plan that was chosen, and a plan a
launcher cannot run is never printed as its arguments."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
from dataclasses import replace

import megatron_args
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from support import same_optimum, yewpy_cmd
from yewpy.apps.dnn.cluster import load_cluster
from yewpy.apps.dnn.cost import ZERO_LAYERS, Training
from yewpy.apps.dnn.model_files import load_model
from yewpy.apps.dnn.models import transformer
from yewpy.apps.dnn.planner import ExhaustivePlanSearch, PlanSearch
from yewpy.apps.dnn.planner.launch import (
    CannotExpress,
    deepspeed_config,
    galvatron_refusal,
    megatron_arguments,
    restrict,
)
from yewpy.apps.dnn.planner.pareto import EACH_END, OTHER_END, ZERO3_END, pareto_options
from yewpy.apps.dnn_plan import plan

# model, cluster, global batch, fix: plans with interleaving, uneven stages, GQA, MoE, fp16 and recompute
CASES = [
    ("megatron-145.6b", "dgx-a100-80g:192x8", 2304, {"tp": 8, "pp": 8, "schedule": "interleaved", "v": 4}),
    ("gpt3-175b", "dgx-a100-80g:128x8", 1536, {}),
    ("megatron-7.5b", "dgx-a100-80g:3x8", 264, {"pp": 3, "recompute": "full"}),
    ("llama2-70b", "dgx-a100-80g:16x8", 512, {}),
    ("mixtral-8x7b", "dgx-a100-80g:8x8", 256, {}),
    ("megatron-3.6b", "dgx-v100-32g:4x8", 256, {}),
    ("megatron-18.4b", "dgx-a100-80g:4x8+dgx-v100-32g:4x8", 512, {"tp": 2}),
]


# Without --launcher, what Megatron-LM cannot run in the free optimum of each case (others read back)
MIXED = "its stages recompute differently, and Megatron-LM's recomputation is one setting for all"
REFUSED = {
    "megatron-145.6b": MIXED, "gpt3-175b": MIXED, "llama2-70b": MIXED,
    "mixtral-8x7b": "Megatron-LM interleaves only with more than 2 pipeline stages",
    "megatron-7.5b": "its stage layer counts [13, 12, 11] are not first, equal middle stages and last, "
                     "each at least one layer and a multiple of v=4",
    "megatron-18.4b": "Megatron-LM interleaves only with more than 2 pipeline stages",
}


def precision(cluster: str) -> str:
    return "bf16" if all(g.bf16 for g in load_cluster(cluster).groups) else "fp16"


def chosen(name: str, cluster: str, batch: int, fix: dict, launcher: str) -> tuple:
    model = load_model(name)
    train = restrict(Training(batch, model.seq, fix=fix, precision=precision(cluster)), launcher)
    result = plan(model, load_cluster(cluster), train, top=1)
    return model, train, result.extras["plan"], result.extras["predicted"]["gpus"]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_megatron_arguments_read_back_as_the_plan(case):
    model, train, best, gpus = chosen(*case, launcher="megatron")
    argv = megatron_arguments(best, model, train)
    built = megatron_args.megatron(argv, gpus)
    assert built == megatron_args.plan_view(best, model.meta, train.precision)
    assert built["layers"] and sum(built["layers"]) == model.meta["layers"]


def test_tp_overlap_asks_megatron_for_it_where_megatron_can_overlap():
    """--tp-overlap adds --tp-comm-overlap, which Megatron-LM runs only with sequence parallelism
    (validate_args); without it the cost model hides nothing and the flag is not printed."""
    model = load_model("gpt3-175b")
    cluster = load_cluster("dgx-a100-80g:8x8")
    for sp in (True, False):
        train = restrict(Training(64, 2048, fix={"tp": 8, "pp": 8}, precision="bf16", tp_overlap=0.8,
                                  sequence_parallel=sp), "megatron")
        result = plan(model, cluster, train, top=1)
        argv = megatron_arguments(result.extras["plan"], model, train)
        assert ("--tp-comm-overlap" in argv) == sp
        assert megatron_args.megatron(argv, 64)["tp"] == 8
        exposed = plan(model, cluster, restrict(Training(64, 2048, fix={"tp": 8, "pp": 8}, precision="bf16",
                                                         sequence_parallel=sp), "megatron"), top=1).objective
        assert (result.objective < exposed) == sp
    with pytest.raises(megatron_args.Refused, match="only when sequence parallelism"):
        megatron_args.megatron([*argv, "--tp-comm-overlap"], 64)


@pytest.mark.parametrize("launcher", ["megatron", "none"])
def test_context_parallel_plans_read_back(launcher):
    """Llama-3-8B at 32k tokens on 64 H100s: the plan splits sequences over cp ranks, and Megatron-LM's
    --context-parallel-size (world = tp x pp x cp x dp) builds exactly that plan."""
    model = load_model("llama3-8b")
    train = restrict(Training(64, 32768, fix={}, precision="bf16", max_cp=32), launcher)
    result = plan(model, load_cluster("dgx-h100-80g:8x8"), train, top=1)
    best, gpus = result.extras["plan"], result.extras["predicted"]["gpus"]
    assert best["cp"] > 1 and best["tp"] * best["pp"] * best["cp"] * best["dp"] == gpus
    try:
        argv = megatron_arguments(best, model, train)
    except CannotExpress:
        assert launcher == "none"
        return
    assert megatron_args.megatron(argv, gpus) == megatron_args.plan_view(best, model.meta, train.precision)
    assert deepspeed_refused(best)


def deepspeed_refused(best: dict) -> bool:
    try:
        deepspeed_config(best, Training(64, 32768))
    except CannotExpress:
        return True
    return False


def test_the_issue_case_builds_the_virtual_stages_it_chose():
    """145.6B, v = 4: 10 layers per stage gave Megatron-LM v = 5; now every stage is a multiple of 4."""
    model, train, best, gpus = chosen(*CASES[0], launcher="megatron")
    built = megatron_args.megatron(megatron_arguments(best, model, train), gpus)
    assert built["interleave"] == 4 and all(k % 4 == 0 for k in built["layers"])


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_unrestricted_plans_are_read_back_or_refused(case):
    """Without --launcher the plan is free; Megatron-LM's arguments are then exactly the plan or absent."""
    model, train, best, gpus = chosen(*case, launcher="none")
    try:
        argv = megatron_arguments(best, model, train)
    except CannotExpress as why:
        assert str(why) == REFUSED[case[0]]
        return
    assert case[0] not in REFUSED
    assert megatron_args.megatron(argv, gpus) == megatron_args.plan_view(best, model.meta, train.precision)


def test_what_megatron_cannot_run_is_refused_with_the_reason():
    model = load_model("megatron-18.4b")
    base = {"mode": "pipe", "tp": 2, "pp": 4, "dp": 4, "microbatch": 1, "microbatches": 32,
            "schedule": "1f1b", "interleave": 1, "group_size": 1, "stages": [
                      {"blocks": [0, 11], "recompute": "none", "zero": 1},
                      {"blocks": [11, 21], "recompute": "none", "zero": 1},
                      {"blocks": [21, 31], "recompute": "none", "zero": 1},
                      {"blocks": [31, 42], "recompute": "none", "zero": 1}]}
    train = Training(512, 2048)
    megatron_args.megatron(megatron_arguments(base, model, train), 32)      # the base plan runs
    for change, reason in (
            ({"pp": 2, "schedule": "interleaved", "interleave": 2}, "more than 2 pipeline stages"),
            ({"schedule": "kfkb", "group_size": 2}, "no kfkb schedule"),
            ({"mode": "hap"}, "micro-batch shares"),
            ({"tp": [2, 4]}, "different tensor-parallel degrees"),
            ({"stages": [dict(s, zero=3) for s in base["stages"]]}, "ZeRO-2/3"),
            ({"stages": [dict(s, recompute="full" if i else "none") for i, s in enumerate(base["stages"])]},
             "recompute differently"),
            ({"stages": [{"blocks": [0, 1], "recompute": "none", "zero": 1}] + base["stages"][1:]},
             "layer counts"),
            ({"schedule": "interleaved", "interleave": 4}, "multiple of v=4")):
        with pytest.raises(CannotExpress, match=reason):
            megatron_arguments(dict(base, **change), model, train)
    with pytest.raises(CannotExpress, match="decoder-only"):
        megatron_arguments(base, load_model("t5-11b"), train)


def test_deepspeed_config_reads_back_and_refuses_pipelines():
    model, train, best, gpus = chosen("megatron-18.4b", "dgx-a100-80g:32x8", 1024, {}, "deepspeed")
    built = megatron_args.deepspeed(deepspeed_config(best, train), gpus)
    assert built == {"dp": best["dp"], "microbatch": best["microbatch"], "microbatches": best["microbatches"],
                     "zero": best["stages"][0]["zero"], "precision": "bf16",
                     "recompute": best["stages"][0]["recompute"]}
    _, train, piped, _ = chosen("gpt3-175b", "dgx-a100-80g:128x8", 1536, {}, "none")
    with pytest.raises(CannotExpress, match="pipeline"):
        deepspeed_config(piped, train)


@settings(max_examples=20, deadline=None)
@given(layers=st.integers(3, 9), batch=st.sampled_from([16, 32, 64]),
       cluster=st.sampled_from(["dgx-a100-80g:1x8", "dgx-a100-80g:2x4", "dgx-v100-16g:2x4"]),
       mem=st.sampled_from([0.3, 0.6, 0.9]))
def test_megatron_restricted_bnb_equals_exhaustive(layers, batch, cluster, mem):
    """The launcher's rules (one recompute mode, equal middle stages: in the dominance memo's key) keep
    the bound and memo exact: BnB = the exhaustive tree under the same rules, and the plan reads back."""
    model = transformer("small", layers=layers, hidden=4096, heads=32, vocab=32000, seq=1024)
    train = restrict(Training(batch, 1024, memory_fraction=mem, memory_reserve=0, microbatches=(1, 2, 4),
                              precision=precision(cluster)), "megatron")
    bnb = PlanSearch(model, load_cluster(cluster), train).search(prune_level=False)
    exhaustive = ExhaustivePlanSearch(model, load_cluster(cluster), train).search(prune_level=False)
    if not same_optimum(bnb, exhaustive):
        return
    result = plan(model, load_cluster(cluster), train, top=1)
    best = result.extras["plan"]
    built = megatron_args.megatron(megatron_arguments(best, model, train), result.extras["predicted"]["gpus"])
    assert built == megatron_args.plan_view(best, model.meta, train.precision)


def _galvatron_best(search):
    """The least time, by replay, over every plan of every shape that Galvatron runs: each stage a
    transformer layer or more, the first and last stages both under ZeRO-3 or neither (one
    vocab_sdp), the ZeRO stages the launcher allows."""
    best, n = math.inf, search.n
    for sid, sh in enumerate(search.shapes):
        assert sh.mode == "pipe" and len(sh.parts) == 1
        for cuts in itertools.combinations(range(1, n), sh.p - 1):
            ends = (0, *cuts, n)
            if any(hi - lo - (lo == 0) - (hi == n) < 1 for lo, hi in zip(ends, ends[1:])):
                continue
            sizes = [hi - lo for lo, hi in zip(ends, ends[1:])]
            for rcs in itertools.product(search.train.recompute, repeat=sh.p):
                for zs in itertools.product(search.train.zero if sh.d > 1 else [0], repeat=sh.p):
                    if (zs[0] == 3) == (zs[-1] == 3):
                        stages = tuple((0, size, rc, z) for size, rc, z in zip(sizes, rcs, zs))
                        best = min(best, search.replay(("s", sid, 0, (), (), (), 0.0, stages)))
    return best


@settings(max_examples=12, deadline=None)
@given(layers=st.integers(2, 5), vocab=st.sampled_from([32000, 256000]), batch=st.sampled_from([16, 64]),
       cluster=st.sampled_from(["dgx-a100-40g:2x4", "dgx-v100-16g:2x4", "dgx-v100-32g:1x4"]),
       mem=st.sampled_from([0.3, 0.6]), zero=st.sampled_from([(0, 3), (2, 3)]))
@example(layers=3, vocab=256000, batch=16, cluster="dgx-a100-40g:2x4", mem=0.3, zero=(0, 3))
def test_galvatron_restricted_search_is_exact_and_runs(layers, vocab, batch, cluster, mem, zero):
    """--launcher galvatron's stage rules (a transformer layer in every stage; ZeRO-3 on both ends or
    neither) are in the search, not refused after it: BnB equals the best runnable plan by replay,
    and Galvatron runs the plan found. In the example, the best plan without the rules puts the
    output layer in a stage of its own."""
    model = transformer("small", layers=layers, hidden=4096, heads=32, vocab=vocab, seq=1024)
    train = restrict(Training(batch, 1024, memory_fraction=mem, memory_reserve=0, microbatches=(1, 2, 4),
                              recompute=("none", "full"), zero=zero, precision=precision(cluster)),
                     "galvatron")
    search = PlanSearch(model, load_cluster(cluster), train)
    found, oracle = search.search(), _galvatron_best(search)
    if math.isinf(oracle):
        assert found.objective is None or math.isinf(found.objective)
        return
    assert found.objective == pytest.approx(oracle, rel=1e-9)
    chosen = plan(model, load_cluster(cluster), train, top=1).extras["plan"]
    assert galvatron_refusal(chosen, model, train) is None
    if (layers, vocab, batch, cluster, mem, zero) == (3, 256000, 16, "dgx-a100-40g:2x4", 0.3, (0, 3)):
        free = replace(train, galvatron_stages=False)
        unruled = plan(model, load_cluster(cluster), free, top=1).extras["plan"]
        assert "holds no transformer layer" in galvatron_refusal(unruled, model, free)


def test_galvatron_end_rule_keeps_each_zero_kind_where_the_last_stage_decides():
    """The ZeRO end rule binds only where the last stage cannot take the faster kind, so its parts are
    checked apart: a first stage keeps the best option of each kind even when one kind is faster in
    every term, the last stage takes its first stage's kind, and the dominance memo never drops a
    state for one whose first stage is of the other kind."""
    zero3, ddp = (1.0, 1.0, 1.0, "none", 3), (2.0, 2.0, 2.0, "none", 0)
    assert pareto_options([zero3, ddp], True) == (zero3,)
    assert set(pareto_options([zero3, ddp], True, EACH_END)) == {zero3, ddp}
    assert pareto_options([zero3, ddp], True, OTHER_END) == (ddp,)
    assert pareto_options([zero3, ddp, (0.5, 3.0, 3.0, "full", 3)], True, ZERO3_END) == (
        (0.5, 3.0, 3.0, "full", 3), zero3)
    model = transformer("small", layers=4, hidden=1024, heads=16, vocab=32000, seq=1024)
    train = restrict(Training(64, 1024, zero=(0, 3)), "galvatron")
    search = PlanSearch(model, load_cluster("dgx-a100-80g:1x8"), train)
    n = search.n
    assert search._galvatron_ends((), 2) == EACH_END and search._galvatron_ends((), n) is None
    assert search._galvatron_ends(((0, 2, "none", 3),), n) == ZERO3_END
    assert search._galvatron_ends(((0, 2, "none", ZERO_LAYERS),), n) == OTHER_END
    sid = next(i for i, sh in enumerate(search.shapes) if sh.p == 2)
    faster = ("s", sid, 2, (1,), (1.0,), (1.0,), 1.0, ((0, 2, "none", 0),), (0,))
    slower = ("s", sid, 2, (1,), (2.0,), (2.0,), 2.0, ((0, 2, "none", 3),), (1,))
    assert not search._dominated(faster) and not search._dominated(slower)
    free = PlanSearch(model, load_cluster("dgx-a100-80g:1x8"), replace(train, galvatron_stages=False))
    assert not free._dominated(faster) and free._dominated(slower)


def test_cli_launcher_and_precision():
    run = subprocess.run([*yewpy_cmd(), "dnn-plan", "--model", "megatron-3.6b", "--cluster",
                          "dgx-v100-32g:4x8", "--global-batch", "256", "--launcher", "megatron", "--json"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    argv = out["launch"]["megatron"]["arguments"]
    assert "--fp16" in argv and "--bf16" not in argv                  # V100s have no bfloat16
    assert megatron_args.megatron(argv, out["predicted"]["gpus"])["tp"] == out["plan"]["tp"]
    for flags, message in ((["--precision", "bf16"], "do not compute in bfloat16"),
                           (["--model", "t5-11b", "--launcher", "megatron"], "not a decoder-only"),
                           (["--launcher", "deepspeed", "--fix", "pp=2"], "pure data parallelism"),
                           (["--launcher", "megatron", "--zero", "3"], "no ZeRO stage")):
        args = ["--model", "megatron-3.6b", "--cluster", "dgx-v100-32g:4x8", "--global-batch", "256", *flags]
        run = subprocess.run([*yewpy_cmd(), "dnn-plan", *args], capture_output=True, text=True, timeout=120)
        assert run.returncode == 2 and message in run.stderr and "Traceback" not in run.stderr, run.stderr
