"""The planner's independent oracle: every plan of every shape, by replay (small instances only)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

from yewpy.apps.dnn.cost import per_layer_tp, stage_cost
from yewpy.apps.dnn.models import Model, transformer
from yewpy.apps.dnn.planner import PlanSearch


def small_model(layers: int, hidden: int = 1024) -> Model:
    return transformer("small", layers=layers, hidden=hidden, heads=16, vocab=32000, seq=1024)


def brute_force(search: PlanSearch) -> float:
    """Every shape x every contiguous partition x every (recompute, ZeRO) per stage, by replay."""
    best = math.inf
    zeros = [0, 1, 2, 3]
    for sid, sh in enumerate(search.shapes):
        if sh.mode == "pipe":
            pool = [i for i, part in enumerate(sh.parts) for _ in range(part[1])]
            orders = set(itertools.permutations(pool))
        else:
            orders = {(None,) * sh.p}
        for cuts in itertools.combinations(range(1, search.n), sh.p - 1):
            bounds = (0, *cuts, search.n)
            sizes = [bounds[i + 1] - bounds[i] for i in range(sh.p)]
            for order in orders:
                for rcs in itertools.product(search.train.recompute, repeat=sh.p):
                    for zs in itertools.product(zeros if sh.d > 1 else [0], repeat=sh.p):
                        stages = tuple(
                            (order[j] if sh.mode == "pipe" else 0, sizes[j], rcs[j], zs[j])
                            for j in range(sh.p)
                        )
                        best = min(best, search.replay(("s", sid, 0, (), (), (), 0.0, stages)))
    return best


def check_options_above_floor_modes(search: PlanSearch, wanted: Callable[[int, int], bool]) -> int:
    """Assert that every option (rc, z) with ``wanted(sid, z)`` that fits, on any blocks as any stage
    of a one-group pipe shape, costs (c1 tau + exposed) and holds at least what some stage floor mode
    of its shape does, so a floor built from the modes is at most every plan's time; the count
    checked."""
    checked = 0
    train, n = search.train, search.n
    for sid, sh in enumerate(search.shapes):
        if sh.mode != "pipe" or len(sh.parts) > 1 or sh.c1 < 1 or sh.replicas < 2:
            continue
        tab, usable, zc, _, _, _, infl, _ = search._class_consts(sid, 0, None)
        modes = search._floor_modes(sid, tab, zc)
        for lo in range(n):
            for hi in range(lo + 1, n + 1):
                if hi - lo == n:
                    continue  # a tied head's one copy is what the floor leaves out
                experts = (tab.expert[hi] - tab.expert[lo]) / tab.t
                dense = (tab.params[hi] - tab.params[lo]) / tab.t - experts
                for j in range(sh.p):
                    for rc, z in search._allowed(sid):
                        if not wanted(sid, z):
                            continue
                        wide = search.widened(sid, 0) if per_layer_tp(z) else None
                        cost = stage_cost(tab, lo, hi, rc, z, j, sh.p, sh.m, sh.schedule, sh.v, sh.k, train,
                                          search.dp_link(sid, 0), None, n - 1, wide)
                        if cost.memory > usable:
                            continue
                        actual = sh.c1 * cost.tau + cost.exposed
                        below = [m for m in modes
                                 if max(p[hi] - p[lo] + o for p, o in m.terms) <= actual * (1 + 1e-9)
                                 and dense * m.state + experts * m.state_e + m.gather + m.working_set
                                 + (m.act[hi] - m.act[lo]) * infl[j] <= cost.memory * (1 + 1e-9)]
                        assert below, (sid, lo, hi, j, rc, z)
                        checked += 1
    return checked


def check_bounds_below_completions(search: PlanSearch, exhaustive: PlanSearch, sids: list[int],
                                   wanted: Callable[[tuple], bool], raised: list | None = None) -> int:
    """Walk the exhaustive tree of each shape in ``sids`` and assert that at every stage node with
    ``wanted(node)`` below which a plan exists, ``search``'s bound is at most the best leaf below it
    (the subtree's own walk, independent of any bound), also when asked against a limit just below
    that leaf, which makes it settle its lazy floors there (``time_bound(node, limit)``); the count
    checked. ``raised`` gets one entry per node whose bound a limit raised."""
    checked = 0

    def best_below(node: tuple) -> float:
        nonlocal checked
        if not any(node[3]):
            return exhaustive.objective(node)
        best = min((best_below(child) for child in exhaustive.children(node)), default=math.inf)
        if best < math.inf and wanted(node):
            plain = search.time_bound(node)
            assert plain <= best, (search.shapes[node[1]], node[2], node[3])
            for limit in (best * (1 - 1e-3), best * 0.97):
                settled = search.time_bound(node, limit)
                assert plain <= settled <= best, (search.shapes[node[1]], node[2], node[3], limit)
                if raised is not None and settled > plain:
                    raised.append(node)
            checked += 1
        return best

    for sid in sids:
        best_below(exhaustive.start_node(sid))
    return checked
