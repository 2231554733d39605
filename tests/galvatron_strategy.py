"""An oracle for Galvatron strategy files: the checks Galvatron's runtime makes when it reads one
(``galvatron/core/runtime/hybrid_parallel_config.py``: ``config2strategy``, the batch assertion and
``check_hp_config``; ``args_schema.py``'s literals), re-implemented from reading them (Hetu-Galvatron,
main, 2026), and the plan the file describes, per stage and per layer."""

from __future__ import annotations


def read(strategy: dict, arguments: dict, world: int, layers: int) -> dict:
    """What Galvatron would run from ``strategy`` and ``arguments`` on ``world`` GPUs for a model of
    ``layers`` transformer layers; AssertionError where Galvatron would refuse it."""
    def ints(key: str) -> list[int]:
        return [int(x) for x in strategy[key].split(",")]

    pp = strategy["pp_deg"]
    tp, dp_types, ckpt = ints("tp_sizes_enc"), ints("dp_types_enc"), ints("checkpoint")
    consecutive, use_sp, division = ints("tp_consecutive_flags"), ints("use_sp"), ints("pp_division")
    assert len(tp) == layers, "Layer_num in json config does not match layer_num in the model!"
    for values in (consecutive, dp_types, ckpt, use_sp):
        assert len(values) == layers
    ranks = [i for i, count in enumerate(division) for _ in range(count)]
    assert len(ranks) == layers and all(0 <= r <= pp - 1 for r in ranks), "Wrong pp_rank!"
    min_tp = min(min(tp), strategy["vtp"])
    assert strategy["global_bsz"] % (world // pp // min_tp) == 0, \
        "global_batch_size should be multiple of world_size//pp_deg//min_tp//min_cp!"
    for size in tp:
        assert 1 <= size <= world // pp and (world // pp) % size == 0, "Wrong tp_size!"
    assert set(consecutive) <= {0, 1} and set(dp_types) <= {0, 1} and set(ckpt) <= {0, 1}
    assert strategy["pipeline_type"] in ("gpipe", "pipedream_flush")
    assert strategy["default_dp_type"] in ("ddp", "zero2", "zero3")
    assert strategy["vocab_sdp"] in (0, 1)
    assert arguments["mixed_precision"] in ("fp32", "fp16", "bf16")
    dp = world // pp // strategy["vtp"]  # the embedding's: a layer of tp T has world // pp // T replicas
    assert strategy["global_bsz"] % (dp * strategy["chunks"]) == 0
    stages, at = [], 0
    for count in division:
        stages.append({"layers": count, "tp": tp[at], "layer_tp": tp[at:at + count],
                       "zero3": dp_types[at:at + count], "checkpoint": ckpt[at:at + count]})
        at += count
    return {"pp": pp, "dp": dp, "microbatch": strategy["global_bsz"] // dp // strategy["chunks"],
            "microbatches": strategy["chunks"], "schedule": strategy["pipeline_type"],
            "default": strategy["default_dp_type"], "vocab_sdp": strategy["vocab_sdp"], "stages": stages}

