"""The planner's dominance memo: a stage state no better than one met earlier is dropped.

A mixin of :class:`~yewpy.apps.dnn.planner.search.PlanSearch`; per worker, and exact because the
kept state comes first in depth-first order (see ``_dominated``).
"""

from __future__ import annotations

from yewpy.apps.dnn.cost import Training
from yewpy.apps.dnn.planner.pareto import end_kind


class Dominance:
    """``_dominated`` and the memo it keeps."""

    train: Training
    memo: dict

    def _dominated(self, child: tuple) -> bool:
        """Per-worker memo: drop a state no better than one seen at equal (shape, blocks, stages left,
        last part: the next stage's p2p link depends on it) that comes first in depth-first order.
        Every completion of the kept state is then no slower and sorts first, so the plan does not
        depend on which state a worker met first (a sequential search meets them in that order)."""
        key = (child[1], child[2], child[3], child[7][-1][0])
        if self.train.megatron_stages and len(child[7]) > 1:  # the middle stages' size binds the rest
            key += (child[7][1][1],)
        if self.train.galvatron_stages:  # the first stage's ZeRO-3 binds the last stage's
            key += (end_kind(child[7][0][3]),)
        seen = self.memo.get(key)
        order = child[8]
        if len(child[4]) == 1:  # pipe: (sum, max, exposed) scalars, compared without generators
            s, x, e = child[4][0], child[5][0], child[6]
            if seen is None:
                self.memo[key] = [(s, x, e, order)]
                return False
            for o in seen:
                if o[0] <= s and o[1] <= x and o[2] <= e and o[3] < order:
                    return True
            seen[:] = [o for o in seen if not (s <= o[0] and x <= o[1] and e <= o[2] and order < o[3])]
            seen.append((s, x, e, order))
            return False
        vec = child[4] + child[5] + (child[6],)
        if seen is None:
            self.memo[key] = [(vec, order)]
            return False
        for old, old_order in seen:
            if old_order < order and all(a <= b for a, b in zip(old, vec)):
                return True
        seen[:] = [(old, old_order) for old, old_order in seen
                   if not (order < old_order and all(a <= b for a, b in zip(vec, old)))]
        seen.append((vec, order))
        return False
