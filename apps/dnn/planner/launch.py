"""What a launcher runs for a plan: Megatron-LM arguments, a DeepSpeed config and a Galvatron strategy
file, or why it cannot.

The rules are the launchers' own checks, read from their source and cited in docs/dnn.md: Megatron-LM's
``validate_args`` (``megatron/training/arguments.py``) and ``TransformerConfig``, DeepSpeed's batch
and precision checks (``deepspeed/runtime/config.py``) and its pipeline engine's ZeRO assertion,
Galvatron's strategy reader (``galvatron/core/runtime/hybrid_parallel_config.py``).
:func:`restrict` narrows a :class:`Training` to what a launcher can run, so ``--launcher`` searches
only plans that launcher can express; without it every plan is searched and a launcher that cannot
run the chosen one says why instead of printing arguments.
"""

from __future__ import annotations

from dataclasses import replace

from yewpy.apps.dnn.cost import Training
from yewpy.apps.dnn.models import Model
from yewpy.errors import UsageError

LAUNCHERS = ("none", "megatron", "deepspeed", "galvatron")
GALVATRON_SCHEDULES = {"gpipe": "gpipe", "1f1b": "pipedream_flush"}
GALVATRON_DP_TYPES = {0: "ddp", 2: "zero2", 3: "zero3"}  # its default_dp_type; a layer's 1 is ZeRO-3
MEGATRON_SCHEDULES = ("1f1b", "interleaved")


_UNEVEN_DP = ("its stages differ in data-parallel degree (DAPPLE's per-stage replication): the launcher "
              "builds one data-parallel group size for every stage")


_UNEVEN_TP = ("its tensor-parallel groups split each layer unevenly between GPU types (HAP's sharding "
              "ratios): the launcher splits every layer evenly; HAP's runtime (github.com/ylxdzsw/hap) runs "
              "such plans")


class CannotExpress(Exception):
    """The plan uses something the launcher cannot run; the message says what."""


def restrict(train: Training, launcher: str) -> Training:
    """``train`` narrowed to the plans ``launcher`` can run (``none``: unchanged)."""
    if launcher == "megatron":
        train = replace(train, launcher=launcher, zero=tuple(z for z in train.zero if z <= 1),
                        schedules=tuple(s for s in train.schedules if s in MEGATRON_SCHEDULES),
                        recompute=tuple(r for r in train.recompute if r != "block"),
                        wan_compression=(1.0,), stage_replication=False, zero_layers=False,
                        tp_layers=False, mixed_tp=False, uniform_recompute=True, hap=False, one_tp=True,
                        interleave_min_pp=3,
                        megatron_stages=True)
        if train.precision == "fp16":  # Megatron-LM's MoE layers need bf16 for expert parallelism
            if train.fix.get("ep", 1) != 1:
                raise UsageError("--launcher megatron: Megatron-LM runs no expert parallelism in fp16 "
                                 "(--fix ep=1, or train in bf16)")
            train = replace(train, fix=dict(train.fix, ep=1))
        what = ("ZeRO stage (Megatron-LM's distributed optimizer is ZeRO-1), recomputation mode (one for "
                "every stage: none, selective or full)")
    elif launcher == "deepspeed":
        if train.fix.get("pp", 1) != 1 or train.fix.get("tp", 1) != 1:
            raise UsageError("--launcher deepspeed plans pure data parallelism (pp=1, tp=1): DeepSpeed's "
                             "engine runs no tensor parallelism and its pipeline engine needs the model "
                             "rewritten as a PipelineModule; use --launcher megatron or none")
        if train.fix.get("cp", 1) != 1:
            raise UsageError("--launcher deepspeed plans pure data parallelism: "
                             "no context parallelism (cp=1)")
        train = replace(train, launcher=launcher, fix=dict(train.fix, pp=1, tp=1, cp=1), schedules=("1f1b",),
                        recompute=tuple(r for r in train.recompute if r not in ("selective", "block")),
                        zero_layers=False, tp_layers=False, mixed_tp=False, uniform_recompute=True, hap=False)
        what = "recomputation mode (DeepSpeed checkpoints whole layers: none or full)"
    elif launcher == "galvatron":
        if train.fix.get("cp", 1) != 1 or train.fix.get("ep", 1) != 1:
            raise UsageError("--launcher galvatron: yewpy writes Galvatron strategies without context or "
                             "expert parallelism (cp=1, ep=1)")
        base = next((z for z in (2, 0) if z in train.zero), None)  # one default data-parallel type
        train = replace(train, launcher=launcher,
                        zero=tuple(z for z in train.zero if z == 3 or z == base),
                        schedules=tuple(s for s in train.schedules if s in GALVATRON_SCHEDULES),
                        recompute=tuple(r for r in train.recompute if r != "selective"),
                        wan_compression=(1.0,), stage_replication=False, mixed_tp=False, hap=False,
                        one_tp=True, galvatron_stages=True, fix=dict(train.fix, cp=1, ep=1))
        what = ("ZeRO stage (Galvatron's data-parallel types are DDP, ZeRO-2 and ZeRO-3), recomputation mode "
                "(Galvatron checkpoints whole layers: none, full or block)")
    else:
        return train
    fixed = train.fix
    if (not train.zero or not train.recompute or not train.schedules
            or fixed.get("zero", train.zero[0]) not in train.zero
            or fixed.get("recompute", train.recompute[0]) not in train.recompute
            or fixed.get("schedule", train.schedules[0]) not in train.schedules):
        raise UsageError(f"--launcher {launcher}: the options leave no {what} or schedule it can run")
    return train


def _stage_layers(plan: dict) -> list[int]:
    """Transformer layers per stage: blocks less the embedding (first block) and the head (last)."""
    n = plan["stages"][-1]["blocks"][1]
    return [hi - lo - (lo == 0) - (hi == n) for lo, hi in (s["blocks"] for s in plan["stages"])]


def _decoder_only(model: Model) -> bool:
    """Whether ``model`` is a decoder-only transformer with a vocabulary (a GPT or Llama shape)."""
    meta = model.meta or {}
    return bool(meta.get("layers")) and not meta.get("decoder_layers") and not meta.get("classes") \
        and bool(meta.get("vocab"))


def _one_layout_refusal(plan: dict, no_compression: str) -> str | None:
    """Why a launcher with one micro-batch, tp and dp for every replica and plain sends between stages
    cannot run ``plan``, or None (``no_compression`` ends the compression refusal)."""
    if plan["mode"] == "hap":
        return "it gives replicas on different GPU types different micro-batch shares"
    if any("tp_shares" in s for s in plan["stages"]):
        return _UNEVEN_TP
    if isinstance(plan["tp"], list):
        return "its device groups use different tensor-parallel degrees"
    if isinstance(plan["dp"], list):
        return _UNEVEN_DP
    if any(s.get("wan", {}).get("compression", 1) > 1 for s in plan["stages"]):
        return f"it compresses activations between sites (FusionLLM's top-k), which {no_compression}"
    return None


def megatron_model_refusal(model: Model) -> str | None:
    """Why ``model`` is not one Megatron-LM's ``pretrain_gpt.py`` builds, or None."""
    if not _decoder_only(model):
        return f"{model.name} is not a decoder-only transformer (Megatron-LM's GPT model)"
    return None


def megatron_refusal(plan: dict, model: Model, train: Training) -> str | None:
    """Why Megatron-LM cannot run ``plan`` as chosen, or None."""
    why = megatron_model_refusal(model) or _one_layout_refusal(plan, "Megatron-LM's pipeline sends do not")
    if why:
        return why
    if plan["schedule"] == "terapipe":
        return ("Megatron-LM has no token-level pipelining (TeraPipe slices each sequence; its own "
                "runtime, github.com/zhuohan123/terapipe, runs it)")
    if plan["schedule"] not in MEGATRON_SCHEDULES:
        return f"Megatron-LM has no {plan['schedule']} schedule (1F1B and interleaved 1F1B only)"
    if plan["schedule"] == "interleaved" and plan["pp"] < 3:
        return "Megatron-LM interleaves only with more than 2 pipeline stages"
    stages = plan["stages"]
    if any("zero3_layers" in s for s in stages):
        return ("it shards only some layers with ZeRO-3 (Galvatron-BMW's per-layer choice), and Megatron-LM "
                "shards every layer alike")
    if any("wide_tp_layers" in s for s in stages):
        return ("it runs some layers at a larger TP degree than others (Galvatron's per-layer choice), and "
                "Megatron-LM's TP degree is one for every layer")
    if any(s["zero"] >= 2 for s in stages):
        return "it uses ZeRO-2/3, and Megatron-LM's distributed optimizer is ZeRO-1"
    if len({s["recompute"] for s in stages}) > 1:
        return "its stages recompute differently, and Megatron-LM's recomputation is one setting for all"
    if stages[0]["recompute"] == "block":
        why = _block_refusal([s["recomputed_layers"] for s in stages],
                             plan["interleave"] if plan["schedule"] == "interleaved" else 1)
        if why:
            return why
    layers, v = _stage_layers(plan), plan["interleave"] if plan["schedule"] == "interleaved" else 1
    if min(layers) < 1 or any(k % v for k in layers) or len(set(layers[1:-1])) > 1:
        return (f"its stage layer counts {layers} are not first, equal middle stages and last, each at least "
                f"one layer{f' and a multiple of v={v}' if v > 1 else ''}")
    if plan.get("ep", 1) > 1 and train.precision == "fp16":
        return "Megatron-LM runs no expert parallelism in fp16"
    return None


def _block_refusal(layers: list[int], v: int) -> str | None:
    """Why Megatron-LM's block method (``--recompute-num-layers N``: the first N layers of every
    stage, of every virtual stage when interleaved) cannot recompute ``layers`` per stage, or None."""
    if len(set(layers)) > 1:
        return (f"its stages recompute different numbers of layers {layers}, and Megatron-LM's "
                "--recompute-num-layers is one count for every stage")
    if layers[0] % v:
        return (f"its stages recompute {layers[0]} layers, not a multiple of v={v}: Megatron-LM's "
                "--recompute-num-layers counts per virtual stage")
    return None


def megatron_arguments(plan: dict, model: Model, train: Training) -> list[str]:
    """``pretrain_gpt.py`` arguments for ``plan`` on ``tp * pp * cp * dp`` GPUs (CannotExpress if none)."""
    why = megatron_refusal(plan, model, train)
    if why:
        raise CannotExpress(why)
    meta, tp, pp = model.meta, plan["tp"], plan["pp"]
    args = ["--num-layers", meta["layers"], "--hidden-size", meta["hidden"],
            "--num-attention-heads", meta["heads"], "--ffn-hidden-size", meta["ffn"]]
    if meta.get("kv_heads", meta["heads"]) != meta["heads"]:
        args += ["--group-query-attention", "--num-query-groups", meta["kv_heads"]]
    args += ["--seq-length", train.seq, "--max-position-embeddings", max(train.seq, model.seq)]
    if meta.get("swiglu"):
        args.append("--swiglu")
    if meta.get("bias") is False:
        args.append("--disable-bias-linear")
    if meta.get("tied") is False:
        args.append("--untie-embeddings-and-output-weights")
    if meta.get("positions") is False:
        args += ["--position-embedding-type", "rope"]
    args += ["--tensor-model-parallel-size", tp, "--pipeline-model-parallel-size", pp,
             "--micro-batch-size", plan["microbatch"], "--global-batch-size", train.global_batch]
    if train.precision != "fp32":
        args.append(f"--{train.precision}")
    if tp > 1 and train.sequence_parallel:
        args.append("--sequence-parallel")
        if train.tp_overlap > 0:
            args.append("--tp-comm-overlap")
    if plan.get("cp", 1) > 1:
        args += ["--context-parallel-size", plan["cp"]]
    layers = _stage_layers(plan)
    uneven = len(set(layers)) > 1
    if uneven:
        args += ["--decoder-first-pipeline-num-layers", layers[0],
                 "--decoder-last-pipeline-num-layers", layers[-1]]
    if plan["schedule"] == "interleaved":
        if uneven:  # --num-layers-per-virtual-pipeline-stage cannot go with uneven stages
            args += ["--num-virtual-stages-per-pipeline-rank", plan["interleave"]]
        else:
            args += ["--num-layers-per-virtual-pipeline-stage", layers[0] // plan["interleave"]]
    recompute = plan["stages"][0]["recompute"]
    if recompute == "selective":
        args += ["--recompute-granularity", "selective"]
    elif recompute == "full":
        args += ["--recompute-granularity", "full", "--recompute-method", "uniform",
                 "--recompute-num-layers", 1]
    elif recompute == "block" and plan["stages"][0]["recomputed_layers"]:  # 0 in every stage: none
        v = plan["interleave"] if plan["schedule"] == "interleaved" else 1
        args += ["--recompute-granularity", "full", "--recompute-method", "block",
                 "--recompute-num-layers", plan["stages"][0]["recomputed_layers"] // v]
    if any(s["zero"] == 1 for s in plan["stages"]):
        args.append("--use-distributed-optimizer")
    if meta.get("experts"):
        args += ["--num-experts", meta["experts"], "--moe-router-topk", meta["top_k"],
                 "--expert-model-parallel-size", plan["ep"]]
    return [str(a) for a in args]


def deepspeed_refusal(plan: dict) -> str | None:
    """Why a DeepSpeed config cannot describe ``plan``, or None."""
    if plan["mode"] == "hap":
        return "it gives replicas on different GPU types different micro-batch shares"
    if any("tp_shares" in s for s in plan["stages"]):
        return _UNEVEN_TP
    if isinstance(plan["dp"], list):
        return _UNEVEN_DP
    if plan["tp"] != 1 or plan["pp"] != 1 or "wide_tp_layers" in plan["stages"][0]:
        return ("it uses tensor or pipeline parallelism: DeepSpeed's engine runs no TP, and its pipeline "
                "engine needs a PipelineModule and refuses ZeRO-2/3")
    if plan.get("cp", 1) > 1:
        return "it splits sequences over context-parallel ranks, which DeepSpeed's engine does not"
    if "zero3_layers" in plan["stages"][0]:
        return ("it shards only some layers with ZeRO-3 (Galvatron-BMW's per-layer choice), and DeepSpeed's "
                "ZeRO stage is one setting for the whole model")
    if plan["stages"][0]["recompute"] == "selective":
        return "DeepSpeed checkpoints whole layers (no selective recomputation)"
    if plan["stages"][0]["recompute"] == "block":
        return ("it recomputes only some layers, and which layers DeepSpeed checkpoints is up to the "
                "model's code, not its config")
    return None


def deepspeed_config(plan: dict, train: Training) -> dict:
    """A DeepSpeed JSON config for ``plan`` (CannotExpress if it has none)."""
    why = deepspeed_refusal(plan)
    if why:
        raise CannotExpress(why)
    stage = plan["stages"][0]
    config: dict = {"train_batch_size": train.global_batch,
                    "train_micro_batch_size_per_gpu": plan["microbatch"],
                    "gradient_accumulation_steps": plan["microbatches"],
                    "zero_optimization": {"stage": stage["zero"]}}
    if train.precision != "fp32":
        config[train.precision] = {"enabled": True}
    if stage["recompute"] == "full":
        config["activation_checkpointing"] = {"partition_activations": False,
                                              "contiguous_memory_optimization": True}
    return config


def galvatron_refusal(plan: dict, model: Model, train: Training) -> str | None:
    """Why Galvatron cannot run ``plan`` as chosen, or None."""
    if not _decoder_only(model):
        return (f"{model.name} is not a decoder-only transformer (yewpy writes Galvatron strategies for GPT "
                "models)")
    why = _one_layout_refusal(plan, "Galvatron does not")
    if why:
        return why
    if plan["schedule"] not in GALVATRON_SCHEDULES:
        return f"Galvatron has no {plan['schedule']} schedule (GPipe and 1F1B, its pipedream_flush, only)"
    if plan.get("cp", 1) > 1 or plan.get("ep", 1) > 1:
        return "yewpy writes Galvatron strategies without context or expert parallelism"
    stages = plan["stages"]
    if any(s["recompute"] == "selective" for s in stages):
        return "Galvatron checkpoints whole layers (no selective recomputation)"
    if any(s["zero"] == 1 for s in stages):
        return "it uses ZeRO-1, and Galvatron's data-parallel types are DDP, ZeRO-2 and ZeRO-3"
    if len({s["zero"] for s in stages if s["zero"] != 3}) > 1:
        return ("its stages use different ZeRO stages, and Galvatron's default data-parallel type is one for "
                "all")
    if (stages[0]["zero"] == 3) != (stages[-1]["zero"] == 3):
        return ("its embedding and output layer differ in ZeRO stage, and Galvatron shards both or "
                "neither (vocab_sdp)")
    if min(_stage_layers(plan)) < 1:
        return f"a stage holds no transformer layer (layers per stage {_stage_layers(plan)})"
    return None


def galvatron_config(plan: dict, model: Model, train: Training) -> dict:
    """Galvatron's strategy file for ``plan`` (its ``galvatron_config_path``), per transformer layer, and
    the training arguments it runs with (CannotExpress if none)."""
    why = galvatron_refusal(plan, model, train)
    if why:
        raise CannotExpress(why)
    stages, layers = plan["stages"], _stage_layers(plan)
    bases = {s["zero"] for s in stages if s["zero"] != 3} or {3}
    dp_types, checkpoint, tp_sizes = [], [], []
    for stage, count in zip(stages, layers):
        widened = stage.get("wide_tp_layers", 0)
        tp_sizes += [stage.get("wide_tp", stage["tp"])] * widened + [stage["tp"]] * (count - widened)
        sharded = count if stage["zero"] == 3 else stage.get("zero3_layers", 0)
        dp_types += [1] * sharded + [0] * (count - sharded)
        recomputed = {"none": 0, "full": count}.get(stage["recompute"], stage.get("recomputed_layers", 0))
        checkpoint += [1] * recomputed + [0] * (count - recomputed)

    def listed(values: list[int]) -> str:
        return ",".join(map(str, values))

    total = sum(layers)
    config = {"pp_deg": plan["pp"], "tp_sizes_enc": listed(tp_sizes),
              "tp_consecutive_flags": listed([1] * total), "dp_types_enc": listed(dp_types),
              "use_sp": listed([0] * total), "checkpoint": listed(checkpoint),
              "global_bsz": train.global_batch, "chunks": plan["microbatches"], "pp_division": listed(layers),
              "pipeline_type": GALVATRON_SCHEDULES[plan["schedule"]],
              "default_dp_type": GALVATRON_DP_TYPES[bases.pop()], "vtp": plan["tp"], "vsp": 0,
              "vocab_sdp": int(stages[0]["zero"] == 3)}
    # ZeRO-2 and ZeRO-3 keep gradients sharded only when reduced every micro-batch, as the cost model has them
    sharded_any = any(dp_types) or config["default_dp_type"] != "ddp" or config["vocab_sdp"]
    reduce_each = plan["microbatches"] > 1 and bool(sharded_any)
    settings = {"mixed_precision": train.precision,
                "sequence_parallel": train.sequence_parallel and max(tp_sizes) > 1,
                "async_grad_reduce": not reduce_each}
    return {"strategy": config, "arguments": settings}


def launch_lines(plan: dict, model: Model, train: Training, gpus: int) -> dict:
    """Each launcher's output for ``plan``: ``{"megatron": {"arguments": [...], "gpus": N}}`` or
    ``{"refused": why}``, the same for ``"deepspeed"`` with ``"config"`` and for ``"galvatron"`` with
    ``"strategy"`` and ``"arguments"``."""
    out: dict = {}
    for name, make in (("megatron", lambda: {"arguments": megatron_arguments(plan, model, train)}),
                       ("deepspeed", lambda: {"config": deepspeed_config(plan, train)}),
                       ("galvatron", lambda: galvatron_config(plan, model, train))):
        try:
            out[name] = {**make(), "gpus": gpus}
        except CannotExpress as why:
            out[name] = {"refused": str(why)}
    return out
