"""The planner's seed: real plans met before the search, whose times bound what it must beat.

A mixin of :class:`~yewpy.apps.dnn.planner.search.PlanSearch` (it reads the search's shapes,
tables and bounds): the K-th best seeded time is the bar the search starts from, and each seeded
shape's own time limits that shape.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Any


class Seeding:
    """``_seed`` and the dives it makes."""

    def _seed(self, tries: int = 8, budget: int = 150) -> float:
        """An upper bound on the top-th best shape's time before the search. In each of the ``tries *
        max(top, 3)`` shapes with the least start-node bounds (``_start_bound``, which counts the
        memory that the root bounds leave out), among 16 times as many with the least root bounds
        (GPT-3 on 32+32 mixed nodes: the best plan's shape ranks 117th by root bound and 9th by
        start bound): the min-max cut's leaf (``_cut_leaf``), or
        where the cut finds none, the first leaf of a depth-first walk that may backtrack
        (``budget`` nodes at most: a greedy dive mostly dies where memory runs out), pruned against
        what is known so far. It becomes that shape's own limit (``seeded``), the top-th best over
        the shapes the threshold. Every worker computes the same, so a thief prunes at once."""
        saved, self.memo_on = self.memo_on, False  # a dive must not fill the dominance memo
        times: list[float] = []
        try:
            for sid in self._seed_shapes(tries * max(self.top, 3)):
                # the walk only where the cut found no plan: it seldom beats the cut, and costs more
                cut = self._cut_leaf(sid)
                seconds = cut if cut < math.inf else self._first_leaf(sid, budget)
                if seconds < math.inf:
                    self.seeded[sid] = seconds
                    times.append(seconds)
                    times.sort()
                    if len(times) >= self.top:  # later dives prune against it
                        self.seed_bar = times[self.top - 1]
        finally:
            self.memo_on = saved
        return times[self.top - 1] if len(times) >= self.top else math.inf

    def _seed_shapes(self, many: int) -> list[int]:
        """The ``many`` shapes with the least start bounds (``_start_bound``) among the ``16 * many``
        with the least root bounds, in order. A start bound is never below its root bound, so a shape
        is taken once its start bound is at most the next root bound: start bounds are computed
        only as far as the root bounds reach the many-th least of them."""
        order = sorted(range(len(self.shapes)), key=lambda i: (self.root_lb[i], i))[: 16 * many]
        waiting: list[tuple[float, int]] = []
        chosen: list[int] = []
        for sid in order:
            while waiting and waiting[0][0] <= self.root_lb[sid] and len(chosen) < many:
                chosen.append(heapq.heappop(waiting)[1])
            if len(chosen) == many:
                return chosen
            heapq.heappush(waiting, (self._start_bound(sid), sid))
        while waiting and len(chosen) < many:
            chosen.append(heapq.heappop(waiting)[1])
        return chosen

    def _start_bound(self, sid: int) -> float:
        """Shape ``sid``'s start-node bound: its root bound with the floor the constructor left out
        of it: a several-part or hap shape's is bounded again with it; a one-part shape's stage floor
        is added to its root bound (``_stage_floored``)."""
        sh = self.shapes[sid]
        if sh.mode == "hap" or len(sh.parts) > 1:
            return self._bound_state(sid, 0, self.start_counts(sid), *self.zero_state(sid))
        self._stage_floored(sid)
        return self.root_lb[sid]

    def _cut_leaf(self, sid: int, rounds: int = 6) -> float:
        """The time of a leaf of a one-group pipe shape whose stages are cut as long as a cap on each
        stage's steady term plus exposed time, c1 x steady + exposed, allows (each stage taking
        its memory-feasible option of least fill time under the cap), the cap bisected ``rounds``
        times: Eq. 1 is dominated by its largest stage, and memory makes the early stages (more
        micro-batches in flight) shorter, which the tree's balanced first child is not (inf where
        not a one-group pipe shape, or if no cut fits)."""
        sh = self.shapes[sid]
        one_group_pipe = sh.mode == "pipe" and len(sh.parts) == 1 and not (
            self.train.megatron_stages or self.train.galvatron_stages)  # the cut knows neither rule
        if not one_group_pipe or self.root_lb[sid] == math.inf:
            return math.inf
        n, v, c1 = self.n, sh.v, sh.c1

        def cut(cap: float) -> tuple | None:
            lo, prev, stages = 0, None, []
            for j in range(sh.p):
                left = sh.p - j - 1
                best = None
                for hi in [n] if not left else range(lo + v, n - left * v + 1):
                    fit = [o for o in self._stage_options(sid, 0, lo, hi, j, prev) if c1 * o[1] + o[2] <= cap]
                    if not fit:
                        break  # no option of a longer stage fits either
                    best = (hi, min(fit, key=lambda o: o[0]))
                if best is None:
                    return None
                hi, (_, _, _, rc, z) = best
                stages.append((0, hi - lo, rc, z))
                lo, prev = hi, 0
            return tuple(stages)

        low = max(c1 * self._floors(sid, 0, self.start_counts(sid))[1], self.stage_floors[sid])
        high = max(1.05 * low, 1e-9)
        for _ in range(64):  # a cap that fits: grow from the stage floor
            stages = cut(high)
            if stages is not None:
                break
            low, high = high, high * 1.5
        else:
            return math.inf
        for _ in range(rounds):
            mid = (low + high) / 2
            tighter = cut(mid)
            if tighter is None:
                low = mid
            else:
                high, stages = mid, tighter
        return self.replay(("s", sid, n, (), (), (), 0.0, stages, ()))

    def _first_leaf(self, sid: int, budget: int) -> float:
        """The time of the first leaf a depth-first walk of shape ``sid`` meets within ``budget`` nodes
        (inf if none). Slots keep the tree's order (balanced stages first); a slot's (recompute, ZeRO)
        options are tried by least bound, so one costly option (ZeRO-2's exposed reduce-scatters) is
        not taken because it comes first."""
        stack = [self._dive_children(sid, self.start_node(sid))]
        while stack and budget > 0:
            child = next(stack[-1], None)
            if child is None:
                stack.pop()
                continue
            budget -= 1
            if not any(child[3]):
                seconds = self.objective(child)
                if seconds < math.inf:
                    return seconds
                continue
            stack.append(self._dive_children(sid, child))
        return math.inf

    def _dive_children(self, sid: int, node: tuple) -> Any:
        """``node``'s children in tree order of their slots, each slot's options by least bound."""
        stride = len(self._allowed(sid))
        for _, options in itertools.groupby(self._stage_children(node), key=lambda c: c[8][-1] // stride):
            yield from sorted(options, key=self.time_bound)
