"""Megatron-LM's and DeepSpeed's own reading of launch arguments, re-written from their rules as the
test oracle for apps/dnn/planner/launch.py (docs/dnn.md cites each rule's source). A rule the launcher would
refuse raises ``Refused`` with the launcher's reason; the result is the plan the launcher would build."""

from __future__ import annotations

VALUED = {"--num-layers", "--hidden-size", "--num-attention-heads", "--ffn-hidden-size", "--num-query-groups",
          "--seq-length", "--max-position-embeddings", "--position-embedding-type",
          "--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--micro-batch-size",
          "--global-batch-size", "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
          "--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
          "--recompute-granularity", "--recompute-method", "--recompute-num-layers", "--num-experts",
          "--moe-router-topk", "--expert-model-parallel-size", "--context-parallel-size"}
SWITCHES = {"--bf16", "--fp16", "--sequence-parallel", "--use-distributed-optimizer", "--swiglu",
            "--disable-bias-linear", "--untie-embeddings-and-output-weights", "--group-query-attention",
            "--tp-comm-overlap"}


class Refused(Exception):
    """The launcher would stop at this argument set."""


def _check(ok: bool, why: str) -> None:
    if not ok:
        raise Refused(why)


def megatron(argv: list[str], world: int) -> dict:
    """What ``pretrain_gpt.py ARGV`` builds on ``world`` GPUs."""
    args: dict = {}
    i = 0
    while i < len(argv):
        flag = argv[i]
        _check(flag in VALUED or flag in SWITCHES, f"unrecognized arguments: {flag}")
        _check(flag not in args, f"{flag} given twice")
        if flag in VALUED:
            args[flag] = argv[i + 1]
            i += 2
        else:
            args[flag] = True
            i += 1
    num = {k: int(v) for k, v in args.items() if isinstance(v, str) and v.lstrip("-").isdigit()}
    tp, pp = num.get("--tensor-model-parallel-size", 1), num.get("--pipeline-model-parallel-size", 1)
    cp = num.get("--context-parallel-size", 1)
    _check(world % (tp * pp * cp) == 0, "world size not divisible by tp * pp * cp")
    dp, layers = world // (tp * pp * cp), num["--num-layers"]
    # get_batch_on_this_cp_rank cuts every sequence into 2 * cp chunks (load-balanced causal attention)
    _check(num["--seq-length"] % (2 * cp) == 0 or cp == 1, "seq_length must be divisible by 2 * cp")
    _check(not (args.get("--bf16") and args.get("--fp16")), "fp16 and bf16 both set")
    # validate_args turns sequence parallelism off at tp = 1, then asserts it for the overlap
    _check(not args.get("--tp-comm-overlap") or (args.get("--sequence-parallel") and tp > 1),
           "Tensor parallel communication/GEMM overlap can happen only when sequence parallelism is enabled")
    _check(num["--num-attention-heads"] % tp == 0, "num_attention_heads must be divisible by tp")
    if args.get("--group-query-attention"):
        _check(num["--num-query-groups"] % tp == 0, "num_query_groups must be divisible by tp")
    mb, batch = num["--micro-batch-size"], num["--global-batch-size"]
    _check(batch % (mb * dp) == 0, "global batch size is not divisible by micro batch size times dp")
    m = batch // (mb * dp)
    first = num.get("--decoder-first-pipeline-num-layers")
    last = num.get("--decoder-last-pipeline-num-layers")
    if first is not None or last is not None:
        _check(first is not None and last is not None and first > 0 and last > 0 and pp > 1,
               "first and last pipeline stage layer counts must be positive, with pp > 1")
        middle = layers - first - last
        _check(middle >= 0 and (middle == 0 if pp == 2 else middle % (pp - 2) == 0),
               "Mismatch: middle layers remaining but middle PP stages do not divide them")
        stage_layers = [first] + [middle // (pp - 2)] * (pp - 2) + [last] if pp > 2 else [first, last]
    else:
        _check(layers % pp == 0, "num_layers must be divisible by pp")
        stage_layers = [layers // pp] * pp
    vpp = None
    if "--num-layers-per-virtual-pipeline-stage" in num:
        _check(first is None and last is None,
               "use --num-virtual-stages-per-pipeline-rank with uneven stages")
        per = num["--num-layers-per-virtual-pipeline-stage"]
        _check((layers // pp) % per == 0, "layers per stage not divisible by layers per virtual stage")
        vpp = layers // pp // per
    elif "--num-virtual-stages-per-pipeline-rank" in num:
        vpp = num["--num-virtual-stages-per-pipeline-rank"]
    if vpp == 1:
        vpp = None
    if vpp:
        _check(pp > 2, "pipeline-model-parallel size should be greater than 2 with interleaved schedule")
        _check(all(k % vpp == 0 for k in stage_layers), "stage layers not divisible by vpp")
        _check(m % pp == 0, "number of microbatches is not divisible by pp with interleaved schedule")
    granularity = args.get("--recompute-granularity")
    if granularity == "selective":
        _check("--recompute-method" not in args, "recompute method is not supported for selective")
        recompute = "selective"
    elif granularity == "full":
        _check(args.get("--recompute-method") in ("uniform", "block"), "full recompute needs a method")
        count = num.get("--recompute-num-layers", 0)
        _check(1 <= count <= min(stage_layers), "recompute_num_layers between 1 and layers per stage")
        # uniform: every layer recomputed (in chunks); block: only the first `count` of each stage, of
        # each virtual stage when interleaved
        partial = args["--recompute-method"] == "block" and count * (vpp or 1) < max(stage_layers)
        recompute = "block" if partial else "full"
        recompute_layers = count * (vpp or 1) if partial else None
    if granularity not in ("selective", "full"):
        _check(granularity is None, f"bad recompute granularity {granularity}")
        recompute = "none"
    experts = num.get("--num-experts", 0)
    if experts:
        ep = num.get("--expert-model-parallel-size", 1)
        _check(experts % ep == 0 and dp % ep == 0, "experts and dp must be divisible by ep")
        _check(not (ep > 1 and args.get("--fp16")), "Expert parallelism is not supported with fp16 training")
    return {"tp": tp, "pp": pp, "dp": dp, "cp": cp, "microbatch": mb, "microbatches": m,
            "schedule": "interleaved" if vpp else "1f1b", "interleave": vpp or 1, "layers": stage_layers,
            "recompute": recompute,
            **({"recompute_layers": recompute_layers} if recompute == "block" else {}),
            "zero": 1 if args.get("--use-distributed-optimizer") and dp * cp > 1 else 0,  # over dp x cp
            "precision": "bf16" if args.get("--bf16") else "fp16" if args.get("--fp16") else "fp32",
            "sequence_parallel": bool(args.get("--sequence-parallel")) and tp > 1,
            "experts": experts, "ep": num.get("--expert-model-parallel-size", 1) if experts else 1}


def deepspeed(config: dict, world: int) -> dict:
    """What DeepSpeed's engine runs with ``config`` on ``world`` data-parallel GPUs."""
    micro, batch = config.get("train_micro_batch_size_per_gpu"), config.get("train_batch_size")
    steps = config.get("gradient_accumulation_steps", 1)
    _check(batch == micro * steps * world, "train_batch_size != micro * grad_acc * world_size")
    fp16, bf16 = config.get("fp16", {}).get("enabled"), config.get("bf16", {}).get("enabled")
    _check(not (fp16 and bf16), "bfloat16 and fp16 modes cannot be simultaneously enabled")
    stage = config.get("zero_optimization", {}).get("stage", 0)
    _check(stage in (0, 1, 2, 3), "ZeRO stage is 0-3")
    return {"dp": world, "microbatch": micro, "microbatches": steps, "zero": stage,
            "precision": "bf16" if bf16 else "fp16" if fp16 else "fp32",
            "recompute": "full" if "activation_checkpointing" in config else "none"}


def plan_view(plan: dict, model_meta: dict, precision: str, sequence_parallel: bool = True) -> dict:
    """The chosen plan in the oracle's terms (layers per stage without the embedding and head)."""
    n = plan["stages"][-1]["blocks"][1]
    layers = [hi - lo - (lo == 0) - (hi == n) for lo, hi in (s["blocks"] for s in plan["stages"])]
    experts = model_meta.get("experts", 0)
    recompute, block = plan["stages"][0]["recompute"], {}
    if recompute == "block":
        r = plan["stages"][0]["recomputed_layers"]
        recompute, block = (("none", {}) if r == 0 else ("full", {}) if r >= max(layers)
                            else ("block", {"recompute_layers": r}))
    return {"tp": plan["tp"], "pp": plan["pp"], "dp": plan["dp"], "cp": plan["cp"],
            "microbatch": plan["microbatch"],
            "microbatches": plan["microbatches"], "schedule": plan["schedule"],
            "interleave": plan["interleave"] if plan["schedule"] == "interleaved" else 1, "layers": layers,
            "recompute": recompute, **block, "zero": max(s["zero"] for s in plan["stages"]),
            "precision": precision, "sequence_parallel": sequence_parallel and plan["tp"] > 1,
            "experts": experts, "ep": plan["ep"]}
