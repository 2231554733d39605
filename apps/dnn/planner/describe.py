"""A leaf of the plan search as the JSON plan users read: global choices, per-stage layout, time,
memory and predicted TF/s (the presentation, apart from the search)."""

from __future__ import annotations

from yewpy.apps.dnn.cost import stage_cost
from yewpy.apps.dnn.planner.search import PlanSearch


def describe(search: PlanSearch, leaf: tuple) -> dict:
    """A leaf as the JSON plan: global choices, per-stage layout, time, memory and predicted TF/s."""
    sid, stages = leaf[1], leaf[7]
    sh, tr, groups = search.shapes[sid], search.train, search.cluster.groups
    seconds, shares = search.leaf_time(leaf)
    node = search.start_node(sid)
    out_stages, flops, lo = [], [], 0
    for j, (g, k, rc, z) in enumerate(stages):
        node2 = search.make(
            sid, node, g, sh.t if sh.mode == "hap" else dict((pg, pt) for pg, _, pt in sh.parts)[g], k, rc, z
        )
        assert node2 is not None
        node = node2
        entries = []
        for gg, reps in [(g, sh.d)] if sh.mode == "pipe" else sh.parts:
            t = sh.t if sh.mode == "hap" else dict((pg, pt) for pg, _, pt in sh.parts)[gg]
            tab = search.table(gg, t, sh)
            cost = stage_cost(
                tab,
                lo,
                lo + k,
                rc,
                z,
                j,
                sh.p,
                sh.m if sh.mode == "pipe" else sh.p,
                sh.schedule,
                sh.v,
                sh.k,
                tr,
                search.dp_link(sid, gg, t),
                None,
                search.n - 1,
            )
            entries.append((groups[gg].name, t, reps, cost))
        flops.append(entries[0][3].flops)  # FLOPs per micro-batch do not depend on the group or t
        out_stages.append(
            {
                "blocks": [lo, lo + k],
                "group": entries[0][0] if sh.mode == "pipe" else [e[0] for e in entries],
                "tp": entries[0][1],
                "dp": sh.d,
                "recompute": rc,
                **({"recomputed_layers": entries[0][3].recomputed if sh.mode == "pipe"
                    else [e[3].recomputed for e in entries]} if rc == "block" else {}),
                "zero": z,
                **_wan_entry(search, sid, stages[j - 1][0] if j else None, g, entries[0][1]),
                "ms_per_microbatch": [round(e[3].tau * 1e3, 4) for e in entries],
                "memory_gb": round(max(e[3].memory for e in entries) / 2**30, 3),
                "capacity_gb": round(
                    min(
                        tr.usable(groups[x])
                        for x in ([g] if sh.mode == "pipe" else [gg for gg, _ in sh.parts])
                    )
                    / 2**30,
                    3,
                ),
            }
        )
        lo += k
    if sh.mode == "pipe":
        gpus = sh.replicas * sum(s * t for _, s, t in sh.parts)
        executed = sum(flops) * sh.replicas * sh.m  # per context rank x c
    else:
        gpus = sh.p * sh.t * sh.d
        executed = sum(flops) * tr.global_batch / sh.b
    model_flops = 3 * search.model.forward_flops(tr.global_batch, tr.seq)
    tps = sorted({s["tp"] for s in out_stages})
    plan = {
        "mode": sh.mode,
        "tp": tps[0] if len(tps) == 1 else tps,
        "pp": sh.p,
        "dp": sh.d,
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
            "memory_gb_per_gpu": max(s["memory_gb"] for s in out_stages),
        },
    }


def _wan_entry(search: PlanSearch, sid: int, prev: int | None, g: int, t: int) -> dict:
    """``{"wan": {...}}`` for a pipe stage whose input crosses a wide-area link: the two sites and the
    top-k ratio sent over it (1: uncompressed); else nothing."""
    groups = search.cluster.groups
    if search.shapes[sid].mode != "pipe" or prev is None or groups[prev].site == groups[g].site:
        return {}
    ratio = search.wan_ratio(sid, prev, g, t)
    return {"wan": {"from": groups[prev].site, "to": groups[g].site, "compression": ratio}}
