"""The planner's independent oracle: every plan of every shape, by replay (small instances only)."""

from __future__ import annotations

import itertools
import math

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
