"""A leaf of the plan search as the JSON plan users read: global choices, per-stage layout, time,
memory and predicted TF/s (the presentation, apart from the search)."""

from __future__ import annotations

from yewpy.apps.dnn.cost import per_layer_tp, per_layer_zero, share_bytes, stage_cost, zero_base
from yewpy.apps.dnn.planner.search import PlanSearch


def describe(search: PlanSearch, leaf: tuple) -> dict:
    """A leaf as the JSON plan: global choices, per-stage layout, time, memory and predicted TF/s."""
    sid, stages = leaf[1], leaf[7]
    sh, tr, groups = search.shapes[sid], search.train, search.cluster.groups
    seconds, shares = search.leaf_time(leaf)
    node = search.start_node(sid)
    out_stages, flops, lo = [], [], 0
    pipe = sh.mode == "pipe"
    for j, (g, k, rc, z) in enumerate(stages):
        node2 = search.make(sid, node, g if pipe else None, k, rc, z)
        assert node2 is not None
        node = node2
        entries = []
        parts = [g] if pipe else range(len(sh.parts))
        for part in parts:
            tab = search.part_table(sid, part)
            cost = stage_cost(
                tab,
                lo,
                lo + k,
                rc,
                z,
                j,
                sh.p,
                sh.m if pipe else sh.p,
                sh.schedule,
                sh.v,
                sh.k,
                tr,
                search.dp_link(sid, part),
                None,
                search.n - 1,
                search.widened(sid, part) if per_layer_tp(z) else None,
            )
            entries.append((groups[sh.parts[part][0]].name, tab.t, tab, cost))
        # FLOPs per micro-batch do not depend on the group or t: the stage's replicas run them all
        flops.append(entries[0][3].flops * (entries[0][2].d if pipe else 1))
        out_stages.append(
            {
                "blocks": [lo, lo + k],
                "group": entries[0][0] if pipe else [e[0] for e in entries],
                "tp": entries[0][1],
                "dp": sh.part_d(g) if pipe else sh.d,
                **({"microbatch": sh.part_b(g)} if sh.uneven else {}),
                "recompute": rc,
                **({"recomputed_layers": entries[0][3].recomputed if pipe
                    else [e[3].recomputed for e in entries]} if rc == "block" else {}),
                "zero": zero_base(z),
                **({"zero3_layers": entries[0][3].sharded if pipe
                    else [e[3].sharded for e in entries]} if per_layer_zero(z) else {}),
                **({"wide_tp": 2 * entries[0][1], "wide_tp_layers": entries[0][3].widened}
                   if per_layer_tp(z) else {}),
                **(_shares(groups[sh.parts[g][0]].tp_shares, entries[0][3].memory, search)
                   if pipe and groups[sh.parts[g][0]].tp_shares else {}),
                **_wan_entry(search, sid, stages[j - 1][0] if j else None, g),
                "ms_per_microbatch": [round(e[3].tau * 1e3, 4) for e in entries],
                "memory_gb": round(max(e[3].memory for e in entries) / 2**30, 3),
                "capacity_gb": round(min(tr.usable(groups[sh.parts[part][0]]) for part in parts) / 2**30, 3),
            }
        )
        lo += k
    if pipe:
        gpus = sh.c * sum(stages * t * d for _, stages, t, d in sh.parts)
        executed = sum(flops) * sh.m  # per context rank x c
    else:
        gpus = sh.p * sh.t * sh.d
        executed = sum(flops) * tr.global_batch / sh.b
    model_flops = 3 * search.model.forward_flops(tr.global_batch, tr.seq)
    tps = sorted({s["tp"] for s in out_stages})
    dps = sorted({s["dp"] for s in out_stages})
    plan = {
        "mode": sh.mode,
        "tp": tps[0] if len(tps) == 1 else tps,
        "pp": sh.p,
        "dp": dps[0] if len(dps) == 1 else [s["dp"] for s in out_stages],
        "cp": sh.c,
        "ep": sh.ep,
        "microbatch": sh.b,
        "microbatches": sh.m if sh.mode == "pipe" else shares,
        "schedule": sh.schedule,
        "interleave": sh.v,
        "group_size": sh.k,
        "token_slices": sh.n,
        "stages": out_stages,
    }
    if sh.mode == "hap":
        plan["replicas"] = [{"group": groups[gg].name, "count": reps} for gg, reps in sh.parts]
    return {
        "plan": plan,
        "predicted": {
            "iteration_seconds": seconds,
            "gpus": gpus,
            "tflops_per_gpu": executed / gpus / seconds / 1e12,
            "model_tflops_per_gpu": model_flops / gpus / seconds / 1e12,
            "memory_gb_per_gpu": max(max(used for used, _ in s["memory_gb_by_gpu"].values())
                                     if "memory_gb_by_gpu" in s else s["memory_gb"] for s in out_stages),
        },
    }


def _shares(shares: tuple, memory: float, search: PlanSearch) -> dict:
    """A paired stage's GPU kinds: each one's share of every TP group's work (``tp_shares``), and the
    most memory a GPU of that kind holds against what it may use (``memory_gb`` and ``capacity_gb``
    are in bytes of an even share)."""
    usable = {g.name: search.train.usable(g) for g in search.given.groups}
    return {"tp_shares": {name: round(x, 4) for name, x in shares},
            "memory_gb_by_gpu": {name: [round(memory * share_bytes(x) / 2**30, 3),
                                        round(usable[name] / 2**30, 3)] for name, x in shares}}


def _wan_entry(search: PlanSearch, sid: int, prev: int | None, i: int) -> dict:
    """``{"wan": {...}}`` for a pipe stage on part ``i`` whose input crosses a wide-area link: the two
    sites and the top-k ratio sent over it (1: uncompressed); else nothing."""
    if search.shapes[sid].mode != "pipe" or prev is None:
        return {}
    here, there = (search.cluster.groups[search.part_group(sid, x)].site for x in (i, prev))
    if here == there:
        return {}
    return {"wan": {"from": there, "to": here, "compression": search.wan_ratio(sid, prev, i)}}
