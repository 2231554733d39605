"""Launch flags for a plan: Megatron-LM command-line flags and a DeepSpeed config (strings only)."""

from __future__ import annotations

import json


def megatron_flags(plan: dict, global_batch: int, seq: int) -> str:
    """Megatron-LM ``pretrain_gpt.py`` flags; uneven stages are noted (Megatron splits evenly)."""
    stages = plan["stages"]
    tp = plan["tp"] if isinstance(plan["tp"], int) else max(plan["tp"])
    flags = [f"--tensor-model-parallel-size {tp}", f"--pipeline-model-parallel-size {plan['pp']}",
             f"--micro-batch-size {plan['microbatch']}", f"--global-batch-size {global_batch}",
             f"--seq-length {seq}", "--bf16"]
    if tp > 1:
        flags.append("--sequence-parallel")
    if plan["schedule"] == "interleaved":
        layers = stages[0]["blocks"][1] - stages[0]["blocks"][0]
        flags.append(f"--num-layers-per-virtual-pipeline-stage {max(1, layers // plan['interleave'])}")
    recompute = {s["recompute"] for s in stages}
    if "full" in recompute:
        flags += ["--recompute-granularity full", "--recompute-method uniform", "--recompute-num-layers 1"]
    elif "selective" in recompute:
        flags.append("--recompute-granularity selective")
    if any(s["zero"] >= 1 for s in stages):
        flags.append("--use-distributed-optimizer")
    sizes = [s["blocks"][1] - s["blocks"][0] for s in stages]
    if len(set(sizes[1:-1])) > 1 or (len(sizes) > 1 and sizes[0] != sizes[-1]):
        flags.append(f"# uneven stages (blocks incl. embedding/head): {sizes}")
    return " ".join(flags)


def deepspeed_config(plan: dict, global_batch: int) -> str:
    """A DeepSpeed JSON config (ZeRO stage = the largest stage used; pipeline parts given as layer counts)."""
    zero = max(s["zero"] for s in plan["stages"])
    config = {"train_batch_size": global_batch, "train_micro_batch_size_per_gpu": plan["microbatch"],
              "bf16": {"enabled": True}, "zero_optimization": {"stage": zero},
              "pipeline": {"stages": plan["pp"], "partition": [s["blocks"][1] - s["blocks"][0]
                                                               for s in plan["stages"]]}}
    if any(s["recompute"] != "none" for s in plan["stages"]):
        config["activation_checkpointing"] = {"partition_activations": plan["tp"] != 1,
                                              "contiguous_memory_optimization": True}
    return json.dumps(config, sort_keys=True)
