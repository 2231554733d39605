"""DNN parallelism planner: the fastest tensor/pipeline/data-parallel plan under a symbolic cost model.

``yewpy dnn-plan --model gpt3-175b --cluster dgx-a100-80g:128x8 --global-batch 1536 [--fix tp=8,pp=8]``
Branch and bound over pipeline shape, then stage by stage (yewpy.apps.dnn.planner); no profiling.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from yewpy.apps.dnn.cluster import Cluster, load_cluster
from yewpy.apps.dnn.cost import (
    DEFAULT_ETA,
    DEFAULT_ETA_H0,
    DEFAULT_PASS_OVERHEAD,
    DEFAULT_RECOMPUTE,
    DEFAULT_SCHEDULES,
    RECOMPUTE,
    SCHEDULES,
    TERAPIPE_SLICE_OVERHEAD,
    Training,
)
from yewpy.apps.dnn.model_files import load_model
from yewpy.apps.dnn.models import Model
from yewpy.apps.dnn.planner import (
    MAX_PAIRED_FORMATIONS,
    ExhaustivePlanSearch,
    PlanSearch,
    describe,
    heads_not_divided,
    paired_formations,
)
from yewpy.apps.dnn.planner.adagrouper import ada_grouper, read_trace
from yewpy.apps.dnn.planner.launch import LAUNCHERS, launch_lines, megatron_model_refusal, restrict
from yewpy.apps.dnn.published import TP_COMM_OVERLAP, runs, summary
from yewpy.apps.input_numbers import ascii_digits, check_range, parse_float
from yewpy.errors import UsageError
from yewpy.result import STOPPED, Result

FIX_KEYS = {
    "tp": int,
    "pp": int,
    "dp": int,
    "cp": int,
    "ep": int,
    "mb": int,
    "v": int,
    "slices": int,
    "schedule": str,
    "recompute": str,
    "zero": int,
}
LONG_SEQUENCE = 16384  # from this sequence length on, context parallelism is searched by default
SWEEP = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0, 2.0, 4.0, 8.0, 16.0)


def parse_fix(text: str) -> dict:
    """``tp=8,pp=8`` -> {"tp": 8, "pp": 8}; anything else is a UsageError."""
    out: dict[str, Any] = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        key, eq, value = item.partition("=")
        if not eq or key not in FIX_KEYS or not value:
            raise UsageError(f"bad --fix item {item!r}: expected KEY=VALUE with KEY in {', '.join(FIX_KEYS)}")
        if key in out:
            raise UsageError(f"bad --fix item {item!r}: {key} is pinned twice")
        if FIX_KEYS[key] is int:
            if not ascii_digits(value) or int(value) < (0 if key == "zero" else 1):
                raise UsageError(f"bad --fix item {item!r}: {key} takes a positive integer")
            if key == "zero" and int(value) > 3:
                raise UsageError(f"bad --fix item {item!r}: ZeRO stages are 0, 1, 2 and 3")
            out[key] = int(value)
        else:
            allowed = SCHEDULES if key == "schedule" else RECOMPUTE
            if value not in allowed:
                raise UsageError(f"bad --fix item {item!r}: {key} is one of {', '.join(allowed)}")
            out[key] = value
    return out


def plan(
    model: Model, cluster: Cluster, train: Training, top: int = 3, exhaustive: bool = False, **params: Any
) -> Result:
    """Search, then break ties deterministically; ``result.extras`` holds the JSON plan, the top-K
    alternatives and the sensitivity range. ``params`` go to :func:`yewpy.search`."""
    with collector_paused():
        return _plan(model, cluster, train, top, exhaustive, **params)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while planning, restored after (left off where the caller
    had it off). The planner's shapes, tables and caches are hundreds of thousands of objects with
    no cycles among them (a finished search is freed by reference counting, which a test pins), so
    every full collection scanned them all and freed nothing: 11-13% of a mixed-kind plan."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _plan(model: Model, cluster: Cluster, train: Training, top: int, exhaustive: bool,
          **params: Any) -> Result:
    start = time.perf_counter()
    cls = ExhaustivePlanSearch if exhaustive else PlanSearch
    search = cls(model, cluster, train, top=max(1, top))
    refuse_at_root(search)
    if params.get("time_limit") is not None:   # the limit is the planning's: shapes and seed count
        params["time_limit"] = max(params["time_limit"] - (time.perf_counter() - start), 0.0)
    result = search.search(**params)
    if result.status in STOPPED and "estimate" not in params:   # the seed's plans, where it stopped first
        result.solutions = search.best_known(result.solutions, params.get("initial_bound"))
        result.objective = result.solutions[0][0] if result.solutions else None
        if result.stopped_bound is not None and result.objective is not None:
            # what the seed's bar pruned is no faster than the seed's plans
            result.stopped_bound = min(result.stopped_bound, result.objective)
    if "estimate" in params or (not result.solutions and result.status in STOPPED):
        # a tree-size estimate, or a search stopped before its first plan: no plan to describe (and
        # an estimate's short search may hold tree leaves, not plans)
        result.solution, result.solutions, result.objective = None, [], None
        result.seconds = time.perf_counter() - start
        result.extras = {"plan": None, "nodes": result.nodes, "seconds": result.seconds}
        return result
    if not result.solutions:
        raise UsageError(
            f"no plan fits: {model.name} does not fit on {cluster.describe()} in memory "
            "with the allowed techniques"
        )
    ranked = result.solutions
    best = describe(search, ranked[0][1])
    extras = dict(best)
    extras["top"] = [dict(describe(search, leaf)["plan"], iteration_seconds=value) for value, leaf in ranked]
    extras["sensitivity"] = sensitivity(model, cluster, train, [leaf for _, leaf in ranked], search.shapes)
    extras["launch"] = launch_lines(best["plan"], model, train, best["predicted"]["gpus"])
    extras["nodes"] = result.nodes
    result.seconds = time.perf_counter() - start
    extras["seconds"] = result.seconds
    result.solution = best["plan"]
    result.solutions = list(zip([value for value, _ in ranked], extras["top"]))   # plans, not tree leaves
    result.extras = extras
    return result


def refuse_at_root(search: PlanSearch) -> None:
    """Refuse before searching, with the reason, an instance no shape can hold: no (tp, pp, dp,
    micro-batch) divides what it must, or even the most sharded model state does not fit."""
    model, cluster, train = search.model, search.given, search.train
    if not search.shapes:
        heads = (model.meta or {}).get("heads")
        raise UsageError(
            f"no plan fits: no tp x pp x dp layout using every GPU of a group of {cluster.describe()} "
            f"({model.layers} blocks to split into stages) takes the global batch {train.global_batch} in "
            f"whole micro-batches of {', '.join(map(str, train.microbatches))} sequences per data-parallel "
            f"rank with tp <= {train.max_tp} aligned to the node"
            + (f" and the {heads} attention heads" if heads else "")
            + " (and the --fix and --launcher rules)")
    if all(need > usable for need, usable in search.floors):
        need, usable = min(search.floors, key=lambda f: f[0] / f[1])
        raise UsageError(
            f"no plan fits: {model.name} ({model.params / 1e9:.1f}B parameters) needs at least "
            f"{need / 2**30:.1f} GiB per GPU for its weights, gradients and optimizer state even split "
            f"over {cluster.gpus} GPUs by tensor and pipeline parallelism and the allowed ZeRO stages; a GPU "
            f"has {usable / 2**30:.1f} GiB usable (--memory-fraction {train.memory_fraction:g} of its "
            f"memory less {train.memory_reserve / 2**30:g} GiB)")


def sensitivity(model: Model, cluster: Cluster, train: Training, leaves: list,
                shapes: list | None = None) -> dict | None:
    """The interval of network-bandwidth scale factors (all links x f, i.e. compute/network ratio / f)
    over which the chosen plan stays the fastest of the top-K plans, from a sweep of f in 1/16..16.
    ``shapes``: the search's, which scaling the links does not change (not enumerated again)."""
    if len(leaves) < 2:
        return None
    wins = []
    for f in SWEEP:
        s = PlanSearch(model, cluster.scaled(f, f), train, rank=False, shapes=shapes)
        times = [s.replay(leaf) for leaf in leaves]
        wins.append(times[0] <= min(times))
    i = SWEEP.index(1.0)
    lo = hi = i
    while lo > 0 and wins[lo - 1]:
        lo -= 1
    while hi < len(SWEEP) - 1 and wins[hi + 1]:
        hi += 1
    return {
        "bandwidth_factor": [SWEEP[lo], SWEEP[hi]],
        "sweep": list(SWEEP),
        "best_at": wins,
        "compared_with": len(leaves) - 1,
    }


MAX_GLOBAL_BATCH = 2**24  # sequences per iteration: far past any published run's (Llama 3's 16M tokens)
MAX_SEQ = 2**24  # tokens per sequence: past the longest contexts trained (10M)
MAX_DEGREE = 2**20  # --max-tp, --max-cp: the most GPUs a cluster may have
MAX_TOP = 10_000  # plans reported


def check_ranges(args: argparse.Namespace) -> None:
    """Every numeric option within what it means: an error, never a silent other value."""
    for flag, value, low, high, open_low in (
            ("--eta", args.eta, 0.0, 1.0, True),                  # a share of peak FLOP/s
            ("--eta-h0", args.eta_h0, 0.0, math.inf, False),
            ("--pass-overhead", args.pass_overhead, 0.0, 1e6, False),
            ("--slice-overhead", args.slice_overhead, 0.0, 1e6, False),
            ("--memory-fraction", args.memory_fraction, 0.0, 1.0, True),
            ("--tp-overlap", args.tp_overlap, 0.0, 1.0, False),
            ("--grad-bytes", args.grad_bytes, 0.0, 64.0, False),
            ("--optimizer-bytes", args.optimizer_bytes, 0.0, 64.0, False)):
        check_range(flag, value, low, high, open_low=open_low)
    for flag, value, high in (("--global-batch", args.global_batch, MAX_GLOBAL_BATCH),
                              ("--seq", args.seq, MAX_SEQ), ("--max-tp", args.max_tp, MAX_DEGREE),
                              ("--max-cp", args.max_cp, MAX_DEGREE), ("--top", args.top, MAX_TOP)):
        check_range(flag, value, 1, high, integer=True)


def training_from_args(args: argparse.Namespace, model: Model, cluster: Cluster) -> Training:
    def listed(text: str, allowed: tuple, name: str, kind: type = str) -> tuple:
        items = tuple(kind(x) if kind is str or ascii_digits(x) else x for x in text.split(","))
        bad = [x for x in items if x not in allowed]
        if bad:
            raise UsageError(f"--{name}: {bad[0]!r} is not one of {', '.join(map(str, allowed))}")
        return items

    zeros = listed(args.zero, (0, 1, 2, 3, "layers"), "zero", int)
    if "layers" in zeros and not {0, 1, 2} & set(zeros):
        raise UsageError("--zero layers: name the ZeRO stages its unsharded layers may use too (0, 1 or 2), "
                         "e.g. --zero 1,layers")
    if args.global_batch < 1:
        raise UsageError("--global-batch must be positive")
    check_ranges(args)
    fix = parse_fix(args.fix or "")
    if fix.get("ep", 1) > 1 and not model.moe:
        raise UsageError(f"--fix ep={fix['ep']}: {model.name} has no experts "
                         "(expert parallelism is for MoE models)")
    seq = args.seq or model.seq
    max_cp = (1 if seq < LONG_SEQUENCE else 32) if args.max_cp is None else args.max_cp
    if fix.get("cp", 1) > 1:
        cp = fix["cp"]
        if model.moe:
            raise UsageError(f"--fix cp={cp}: context parallelism is not planned for MoE models")
        if seq % (2 * cp):
            raise UsageError(f"--fix cp={cp}: the sequence ({seq} tokens) must split into 2 x cp equal "
                             "chunks (Megatron-LM's load-balanced causal split)")
        max_cp = max(max_cp, cp)
    if "v" in fix:                              # model chunks per stage are the interleaved schedule's
        if fix.setdefault("schedule", "interleaved") != "interleaved":
            raise UsageError(f"--fix v={fix['v']}: model chunks per stage go with schedule=interleaved, "
                             f"not {fix['schedule']}")
        stages = max(fix.get("pp", 2), 3 if args.launcher == "megatron" else 2)  # launch.restrict's least
        most = len(model.blocks) // stages
        if not 2 <= fix["v"] <= most:
            raise UsageError(f"--fix v={fix['v']}: the interleaved schedule takes 2 to {most} chunks per "
                             f"stage here (at least {stages} stages of {len(model.blocks)} blocks)")
    if fix.get("recompute") and fix["recompute"] not in args.recompute.split(","):
        raise UsageError(f"--fix recompute={fix['recompute']}: add it to --recompute (now {args.recompute})")
    if "slices" in fix:                         # token slices are TeraPipe's
        if fix.setdefault("schedule", "terapipe") != "terapipe":
            raise UsageError(f"--fix slices={fix['slices']}: token slices go with schedule=terapipe, "
                             f"not {fix['schedule']}")
    schedules = listed(args.schedules, SCHEDULES, "schedules")
    if fix.get("schedule") == "terapipe":
        if args.schedules == ",".join(DEFAULT_SCHEDULES):
            schedules += ("terapipe",)          # asked for by name: searched though not a default
        if model.moe or fix.get("cp", 1) > 1:
            raise UsageError("--fix schedule=terapipe: token-level pipelining is planned for dense models "
                             "without context parallelism")
        if fix.get("slices", 1) > seq:
            raise UsageError(f"--fix slices={fix['slices']}: more slices than the sequence's {seq} tokens")
    conflict = heads_not_divided(model, fix["tp"]) if "tp" in fix else None
    if conflict:
        raise UsageError(f"--fix tp={fix['tp']}: the tensor-parallel degree must divide the model's "
                         f"{conflict[0]} {conflict[1]} (Megatron-LM refuses it)")
    precision = args.precision
    no_bf16 = sorted({g.name for g in cluster.groups if not g.bf16})
    if precision == "auto":
        precision = "fp16" if no_bf16 else "bf16"
    elif precision == "bf16" and no_bf16:
        raise UsageError(f"--precision bf16: {', '.join(no_bf16)} GPUs do not compute in bfloat16 "
                         "(use fp16, or leave --precision at auto)")
    weight = {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0}[precision]
    train = Training(
        global_batch=args.global_batch,
        seq=seq,
        weight_bytes=weight,
        grad_bytes=args.grad_bytes,
        optimizer_bytes=args.optimizer_bytes,
        eta=args.eta,
        eta_h0=args.eta_h0,
        pass_overhead=args.pass_overhead * 1e-6,
        slice_overhead=args.slice_overhead * 1e-6,
        sequence_parallel=not args.no_sp,
        recompute=listed(args.recompute, RECOMPUTE, "recompute"),
        zero=tuple(z for z in zeros if z != "layers"),
        zero_layers="layers" in zeros,
        tp_layers=args.tp_layers,
        schedules=schedules,
        max_tp=args.max_tp,
        max_cp=max_cp,
        memory_fraction=args.memory_fraction,
        tp_overlap=args.tp_overlap,
        wan_compression=wan_ratios(args.wan_compression),
        stage_replication=args.stage_replication,
        mixed_tp=args.mixed_tp,
        fix=fix,
        precision=precision,
        **({"interleave": (fix["v"],)} if "v" in fix else {}),
    )
    if args.mixed_tp:
        if args.no_sp:
            raise UsageError("--mixed-tp: uneven tensor-parallel shares need sequence parallelism (the "
                             "activations outside the layers' split by heads); drop --no-sp")
        formations = paired_formations(cluster, train)
        if not formations:
            raise UsageError("--mixed-tp: the cluster has no two groups of different GPUs and names at one "
                             "site with as many GPUs per node to pair")
        if formations > MAX_PAIRED_FORMATIONS:
            most = MAX_PAIRED_FORMATIONS
            raise UsageError(f"--mixed-tp: the cluster's groups pair into more than the {most} formations "
                             "the planner tries; describe fewer pairable groups")
    why = megatron_model_refusal(model) if args.launcher == "megatron" else None
    if why:
        raise UsageError(f"--launcher megatron: {why}")
    return restrict(train, args.launcher)


MAX_WAN_RATIO = 1000.0  # top-k keeping fewer than 1 in 1000 elements is past what FusionLLM trains with


def wan_ratios(text: str) -> tuple[float, ...]:
    """``--wan-compression R[,R...]``: the top-k ratios the planner may use on wide-area links."""
    out = []
    for item in text.split(","):
        try:
            ratio = parse_float(item.strip())
        except ValueError:
            ratio = math.nan
        if not (math.isfinite(ratio) and 1.0 <= ratio <= MAX_WAN_RATIO):
            raise UsageError(f"--wan-compression: {item!r} is not a ratio in [1, {MAX_WAN_RATIO:g}]")
        out.append(ratio)
    return tuple(out)


def network_levels(text: str) -> list[tuple[float, float]]:
    """``--network-slowdown``: ``F[,F...]`` (each level weighted alike) or ``@TRACE`` (a file of
    ``SECONDS FACTOR`` lines) as (weight seconds, factor) pairs."""
    if text.startswith("@"):
        if not text[1:]:
            raise UsageError("--network-slowdown @: name the trace file, as @FILE")
        return read_trace(text[1:])
    levels = []
    for word in text.split(","):
        try:
            factor = parse_float(word.strip())
        except ValueError:
            factor = math.nan
        if not 1 <= factor <= 1e6:
            raise UsageError(f"--network-slowdown: {word.strip()!r} is not a factor between 1 and 1e6 "
                             "(give F[,F...] or @TRACE)")
        levels.append((1.0, factor))
    return levels


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help="preset name, model/HF JSON file, or FILE.py:NAME (required)")
    parser.add_argument("--cluster", help="PRESET:NODESxGPUS[+...] or cluster JSON file (required)")
    parser.add_argument("--global-batch", type=int, help="sequences per iteration (required)")
    parser.add_argument("--validate", action="store_true",
                        help="instead of planning, print the cost model's predictions against published "
                             "training runs (docs/dnn.md, 'Checked against published runs')")
    parser.add_argument("--seq", type=int, default=None, help="sequence length (default: the model's)")
    parser.add_argument(
        "--fix",
        default=None,
        help="pin dimensions: tp=8,pp=8,dp=..,cp=..,ep=..,mb=..,v=..,slices=..,schedule=..,recompute=..,"
             "zero=.. (slices: TeraPipe's token slices per sequence)",
    )
    parser.add_argument("--top", type=int, default=3, help="report the K best shapes (default 3)")
    parser.add_argument("--exhaustive", action="store_true", help="same tree without the bound (slow)")
    parser.add_argument("--precision", choices=["auto", "bf16", "fp16", "fp32"], default="auto",
                        help="auto: bf16 where every GPU has it, else fp16 (V100)")
    parser.add_argument("--launcher", choices=LAUNCHERS, default="none",
                        help="search only plans this launcher can run (none: every plan; the output "
                             "still says which launchers can run the chosen one)")
    parser.add_argument("--grad-bytes", type=float, default=4.0, help="gradient bytes/param (default 4)")
    parser.add_argument("--optimizer-bytes", type=float, default=12.0, help="optimizer bytes/param (Adam 12)")
    parser.add_argument("--recompute", default=",".join(DEFAULT_RECOMPUTE),
                        help=f"allowed recomputation modes, of {', '.join(RECOMPUTE)} (default: all but "
                             "block, per-layer recomputation: the fewest of a stage's layers that fit)")
    parser.add_argument("--zero", default="0,1,2,3",
                        help="allowed ZeRO stages; 'layers' adds per-layer ZeRO-3 (Galvatron-BMW): the "
                             "fewest layers of a stage that let it fit under ZeRO-3, the rest under a stage "
                             "listed")
    parser.add_argument("--schedules", default=",".join(DEFAULT_SCHEDULES),
                        help=f"allowed pipeline schedules, of {', '.join(SCHEDULES)} (default: all but "
                             "terapipe, token-level pipelining, which no launcher runs)")
    parser.add_argument("--no-sp", action="store_true", help="no sequence parallelism with TP")
    parser.add_argument("--max-tp", type=int, default=8, help="largest tensor-parallel degree")
    parser.add_argument("--max-cp", type=int, default=None,
                        help=f"largest context-parallel degree (default: 1 below {LONG_SEQUENCE} tokens, "
                             "else 32; dense models only)")
    parser.add_argument(
        "--eta", type=float, default=DEFAULT_ETA, help="achieved fraction of peak FLOP/s for wide GEMMs"
    )
    parser.add_argument(
        "--pass-overhead", type=float, default=DEFAULT_PASS_OVERHEAD * 1e6, metavar="US",
        help="microseconds each block adds to every pass over a micro-batch, whatever its size (kernel "
             "launches, idle GEMM tiles): small per-GPU GEMMs cost more than their FLOPs")
    parser.add_argument(
        "--slice-overhead", type=float, default=TERAPIPE_SLICE_OVERHEAD * 1e6, metavar="US",
        help="microseconds each TeraPipe token slice adds per block and pass (schedule terapipe; fitted "
             "on TeraPipe's GPT3-175B setting)")
    parser.add_argument(
        "--eta-h0",
        type=float,
        default=DEFAULT_ETA_H0,
        help="hidden width at which eta halves (eta * h / (h + H0); 0: flat eta)",
    )
    parser.add_argument("--memory-fraction", type=float, default=0.9, help="usable share of GPU memory")
    parser.add_argument("--tp-overlap", type=float, default=0.0, metavar="F",
                        help="share of tensor-parallel communication hidden behind GEMMs (0: none, as "
                             f"Megatron-LM by default; {TP_COMM_OVERLAP:g} fits Megatron-Core's "
                             "--tp-comm-overlap)")
    parser.add_argument("--wan-compression", default="1", metavar="R[,R...]",
                        help="top-k ratios allowed on links between sites (FusionLLM's compression of "
                             "activations and their gradients; lossy, so only 1, none, by default)")
    parser.add_argument("--tp-layers", action="store_true",
                        help="per-layer tensor parallelism (Galvatron): a stage may run its fewest first "
                             "layers that let it fit at twice its TP degree and half its data-parallel "
                             "degree; only Galvatron runs such plans")
    parser.add_argument("--mixed-tp", action="store_true",
                        help="pair the nodes of two groups of different GPUs into tensor-parallel groups "
                             "that split each layer unevenly between the kinds (HAP's sharding ratios; "
                             "needs as many GPUs per node in each, and sequence parallelism; the larger "
                             "group's other nodes may join the plan as a group of their own; "
                             "no launcher here runs such plans)")
    parser.add_argument("--stage-replication", action="store_true",
                        help="let pipeline stages differ in data-parallel degree (DAPPLE's per-stage "
                             "replication; neither Megatron-LM nor DeepSpeed runs such plans)")
    parser.add_argument("--network-slowdown", default=None, metavar="F[,F...]|@TRACE",
                        help="Ada-Grouper: for each link slowdown factor (or a trace of 'SECONDS FACTOR' "
                             "lines), the best kFkB group size for the plan's shape and its gain over 1F1B")


def _degrees(plan: dict, moe: bool) -> str:
    """A plan's parallel degrees as the CLI prints them: tp, pp, dp, cp where used, ep for MoE models."""
    cp = f" cp={plan['cp']}" if plan["cp"] > 1 else ""
    ep = f" ep={plan['ep']}" if moe else ""
    tp = plan["tp"]  # a list where the GPU kinds take different degrees: one per group, in its stages
    tp = ",".join(map(str, tp)) if isinstance(tp, list) else tp
    return f"tp={tp} pp={plan['pp']} dp={plan['dp']}{cp}{ep}"


def _schedule(plan: dict) -> str:
    """A plan's pipeline schedule as the CLI prints it, with its interleave factor or group size."""
    if plan["schedule"] == "interleaved":
        return f"interleaved v={plan['interleave']}"
    if plan["schedule"] == "kfkb":
        return f"kfkb k={plan['group_size']}"
    if plan["schedule"] == "terapipe":
        return f"terapipe n={plan['token_slices']} token slices"
    return plan["schedule"]


def _recompute(stage: dict) -> str:
    """A stage's recomputation; ``block:N``: per-layer, its first N layers (per class in hap mode)."""
    if stage["recompute"] != "block":
        return stage["recompute"]
    return f"block:{_per_class(stage['recomputed_layers'])}"


def _per_class(layers: int | list[int]) -> str:
    """A per-layer count: one, or one per class in hap mode, joined by ``/``."""
    return str(layers) if isinstance(layers, int) else "/".join(map(str, layers))


def _zero(stage: dict) -> str:
    """A stage's ZeRO stage; ``B+3:N``: per-layer, its first N layers under ZeRO-3 and the rest under B
    (N per class in hap mode)."""
    layers = stage.get("zero3_layers")
    return str(stage["zero"]) if layers is None else f"{stage['zero']}+3:{_per_class(layers)}"


def _tp(stage: dict) -> str:
    """A stage's TP degree; ``T+W:N``: per-layer, its first N layers at degree W and the rest at T;
    on paired groups (``--mixed-tp``) each GPU kind's share of every TP group's work."""
    shares = stage.get("tp_shares")
    if shares:
        half = stage["tp"] // 2
        return f"{stage['tp']} ({', '.join(f'{half} {name} at {x:.0%}' for name, x in shares.items())})"
    if "wide_tp_layers" not in stage:
        return str(stage["tp"])
    return f"{stage['tp']}+{stage['wide_tp']}:{stage['wide_tp_layers']}"


def _memory(stage: dict) -> str:
    """A stage's peak memory against what a GPU may use; per GPU kind on paired groups."""
    kinds = stage.get("memory_gb_by_gpu")
    if kinds:
        return ", ".join(f"{used:.2f}/{usable:.2f} GiB on {name}" for name, (used, usable) in kinds.items())
    return f"{stage['memory_gb']:.2f}/{stage['capacity_gb']:.2f} GiB"


def _paired(plan: dict) -> str:
    """Where a plan's TP groups pair two GPU kinds (``--mixed-tp``): each kind's share, per paired group."""
    pairs = dict.fromkeys(" / ".join(f"{name} {x:.0%}" for name, x in stage["tp_shares"].items())
                          for stage in plan["stages"] if "tp_shares" in stage)
    return "".join(f" (tp shares {p})" for p in pairs)


def _wan(stage: dict) -> str:
    """What a stage's input crosses between sites, and how it is compressed."""
    wan = stage.get("wan")
    if not wan:
        return ""
    how = f"top-k 1:{wan['compression']:g}" if wan["compression"] > 1 else "uncompressed"
    return f"; input over the {wan['from']}-{wan['to']} wide-area link, {how}"


def _replication(stage: dict) -> str:
    """A stage's own data-parallel degree and micro-batch share where stages differ in them (DAPPLE)."""
    return f" dp={stage['dp']} mb={stage['microbatch']}" if "microbatch" in stage else ""


def _stage_time(stage: dict) -> str:
    """A stage's forward and backward time per micro-batch (one figure per device group of a hap stage)."""
    return "/".join(f"{ms:.2f}" for ms in stage["ms_per_microbatch"]) + " ms per micro-batch (fwd+bwd)"


def solve(args: argparse.Namespace, **params: Any) -> tuple[Result, list[str]]:
    start = time.perf_counter()
    if args.validate:
        ignored = _flags_validate_ignores(args, params)
        if ignored:
            raise UsageError(f"--validate plans each published run whole; it does not take {ignored[0]}")
        return validate(start)
    missing = [flag for flag, value in (("--model", args.model), ("--cluster", args.cluster),
                                        ("--global-batch", args.global_batch)) if value is None]
    if missing:
        raise UsageError(f"the following arguments are required: {', '.join(missing)} (or --validate)")
    if args.top < 1:
        raise UsageError("--top must be at least 1")
    model = load_model(args.model)
    cluster = load_cluster(args.cluster)
    train = training_from_args(args, model, cluster)
    levels = network_levels(args.network_slowdown) if args.network_slowdown is not None else None
    result = plan(model, cluster, train, top=args.top, exhaustive=args.exhaustive, **params)
    x, p = result.extras, result.extras["plan"]
    if p is None:  # ``--estimate`` (the CLI prints the estimate), or stopped before any plan
        stopped = f"No plan yet: the search stopped ({result.status.replace('_', ' ')}) before it found one"
        result.seconds = x["seconds"] = time.perf_counter() - start
        result.timed = "planning: inputs, search"
        return result, [] if args.estimate is not None else [stopped]
    pred = x["predicted"]
    lines = [
        f"Model {model.name} ({model.params / 1e9:.2f}B parameters) on {cluster.describe()}, "
        f"B={train.global_batch}, s={train.seq}",
        f"Plan: {p['mode']} {_degrees(p, model.moe)} microbatch={p['microbatch']} schedule={_schedule(p)}",
        f"Predicted: {pred['iteration_seconds']:.4f} s/iteration, {pred['tflops_per_gpu']:.1f} TFLOP/s per "
        f"GPU ({pred['model_tflops_per_gpu']:.1f} model), {pred['memory_gb_per_gpu']:.2f} GiB peak, "
        f"{pred['gpus']} GPUs",
    ]
    for j, s in enumerate(p["stages"]):
        lines.append(
            f"  stage {j}: blocks {s['blocks'][0]}..{s['blocks'][1] - 1} on {s['group']} tp={_tp(s)}"
            f"{_replication(s)} "
            f"recompute={_recompute(s)} zero={_zero(s)} {_stage_time(s)}, "
            f"{_memory(s)}{_wan(s)}"
        )
    for i, alt in enumerate(x["top"][1:], 2):
        lines.append(
            f"#{i}: {_degrees(alt, model.moe)} mb={alt['microbatch']} {_schedule(alt)}{_paired(alt)} "
            f"{alt['iteration_seconds']:.4f} s"
        )
    if x["sensitivity"]:
        lo, hi = x["sensitivity"]["bandwidth_factor"]
        lines.append(f"Stays best of the top {len(x['top'])} for link bandwidth x{lo:g} .. x{hi:g}")
    for name, label in (("megatron", "Megatron-LM"), ("deepspeed", "DeepSpeed"), ("galvatron", "Galvatron")):
        out = x["launch"][name]
        if "refused" in out:
            lines.append(f"{label}: cannot run this plan: {out['refused']}"
                         + ("" if train.launcher == name else f" (--launcher {name} plans only for it)"))
        elif name == "megatron":
            lines.append(f"{label} ({out['gpus']} GPUs): pretrain_gpt.py {' '.join(out['arguments'])}")
        elif name == "deepspeed":
            lines.append(f"{label} ({out['gpus']} GPUs): {json.dumps(out['config'], sort_keys=True)}")
        else:
            lines.append(f"{label} ({out['gpus']} GPUs): strategy file {json.dumps(out['strategy'])}, "
                         f"with {json.dumps(out['arguments'], sort_keys=True)}")
    if levels is not None:
        x["ada_grouper"] = grouped = ada_grouper(model, cluster, train, p, levels)
        if grouped is None:
            lines.append("Ada-Grouper: the plan has no single-group pipeline (pp = 1 or hap): "
                         "kFkB does not apply")
        else:
            for row in grouped["levels"]:
                k = f"kFkB k={row['best_k']}" if row["best_k"] > 1 else "1F1B stays best"
                lines.append(f"Network x{row['slowdown']:g} slower: 1F1B {row['1f1b_seconds']:.4f} s, {k} "
                             f"{row['best_seconds']:.4f} s ({row['gain']:+.1%})")
            lines.append(f"Ada-Grouper time-weighted gain over 1F1B: {grouped['weighted_gain']:+.1%}")
    result.seconds = x["seconds"] = time.perf_counter() - start
    result.timed = "planning: inputs, search, sensitivity, launch arguments"
    return result, lines


_SEARCH_FLAGS = (("--estimate", "estimate"), ("--time-limit", "time_limit"), ("--node-limit", "node_limit"),
                 ("--checkpoint", "checkpoint"), ("--resume", "resume"), ("--better-than", "initial_bound"),
                 ("--profile", "profile"), ("--no-prune-level", "prune_level"),
                 ("--checkpoint-every", "checkpoint_every"))


def _flags_validate_ignores(args: argparse.Namespace, params: dict) -> list[str]:
    """The flags given with ``--validate`` that it would ignore: each published run pins its own model,
    cluster, batch and cost-model constants, and is planned on one rank by the sequential search."""
    probe = argparse.ArgumentParser(add_help=False)
    configure(probe)
    defaults = vars(probe.parse_args([]))
    ignored = [f"--{dest.replace('_', '-')}" for dest, default in defaults.items()
               if dest != "validate" and getattr(args, dest) != default]
    ignored += [flag for flag, key in _SEARCH_FLAGS if key in params]
    coordination = set(params) - {"coordination", "progress", "progress_json", *dict(_SEARCH_FLAGS).values()}
    if params.get("coordination", "seq") != "seq" or coordination:
        ignored.append("--skeleton or its options")
    return ignored


def validate(start: float) -> tuple[Result, list[str]]:
    """``--validate``: every published run's iteration time against the plan predicted for its layout."""
    rows, nodes, published = [], 0, runs()
    for run in published:
        result = plan(run.model, run.cluster, run.training(), top=1)
        nodes += result.nodes
        group = run.cluster.groups[0]
        rows.append({"source": run.source.key, "run": run.id, "gpus": run.cluster.gpus, "gpu": group.name,
                     "published_seconds": run.seconds, "predicted_seconds": result.objective,
                     "error": result.objective / run.seconds - 1, "held_out": run.held_out,
                     "derived": run.derived or None, "layout": run.fix})
    lines = ["Predicted seconds per iteration with each published layout pinned (the rest searched) against "
             "the published figure; held-out runs (*) took no part in any fit", "",
             f"{'source':<20} {'run':<27} {'GPUs':>12} {'published':>10} {'predicted':>10} {'error':>7}"]
    for row in rows:
        mark = "*" if row["held_out"] else " "
        lines.append(f"{row['source']:<20} {row['run']:<27} {row['gpus']:>5} {row['gpu'][4:8]:<6} "
                     f"{row['published_seconds']:>9.3f}s {row['predicted_seconds']:>9.3f}s "
                     f"{row['error']:>+7.1%}{mark}")
    groups = {"held_out": [r["error"] for r in rows if r["held_out"]],
              "calibration": [r["error"] for r in rows if not r["held_out"]],
              "all": [r["error"] for r in rows]}
    stats = {name: summary(errors) for name, errors in groups.items()}
    lines.append("")
    for name, label in (("held_out", "held out"), ("calibration", "calibration"), ("all", "all")):
        st = stats[name]
        lines.append(f"{label}: {st['runs']} runs, median |error| {st['median_abs_error']:.1%}, "
                     f"max {st['max_abs_error']:.1%}")
    lines.append(f"sources ({len({r['source'] for r in rows})}):")
    lines += [f"  {source.key}: {source.citation}" for source in dict.fromkeys(r.source for r in published)]
    result = Result(kind="enumeration", status="exhausted", nodes=nodes, seconds=time.perf_counter() - start,
                    value=len(rows))
    result.extras = {"validation": rows, "summary": stats}
    result.timed = "validation: every run planned"
    return result, lines
