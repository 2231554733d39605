"""The memory-aware stage floor of a one-group pipeline shape: a min-max cut of the blocks into the
shape's stages in which each stage may take only what fits in its memory.

Eq. 1 charges c1 tau + exposed for the costliest stage, and where memory binds the early stages,
which hold the most micro-batches, must recompute, shard their state with ZeRO (whose
communication is then exposed) or take fewer blocks. :class:`StageFloor` answers, for one shape,
whether the blocks cut into its p stages so that every stage fits under some option at a cost of at
most a cap (``cuts``), and bisects for the least such cap (``least``). Every option's cost over
blocks [lo, hi) is the largest of a few prefix-sum differences (``Mode.terms``), so a stage's reach
under a cap is a bisection in a prefix array, and its reach in memory another.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass


@dataclass(frozen=True)
class Mode:
    """One (recompute, ZeRO) option as the floor sees it."""

    terms: tuple  # (prefix, offset) pairs: the cost of [lo, hi) is max(prefix[hi] - prefix[lo] + offset)
    act: list  # activation bytes per in-flight micro-batch, prefix sums
    working_set: float  # bytes held once besides the activations (full recomputation's one block)
    state: float  # model-state bytes per dense parameter on a GPU
    state_e: float  # ... per expert parameter
    gather: float  # ZeRO-3's gathered-weight buffer


class StageFloor:
    """Cuts of blocks [0, n) into ``len(inflight)`` stages under ``modes`` (see the module)."""

    def __init__(self, modes: list[Mode], params: list, expert: list, t: int, usable: float,
                 inflight: list) -> None:
        self.modes, self.params, self.expert, self.t = modes, params, expert, t
        self.usable, self.inflight = usable, inflight
        self.n = len(params) - 1
        self._reach: dict = {}

    def cuts(self, cap: float) -> bool:
        """Whether some cut into the stages has every stage fitting under an option of cost <= cap.
        Greedy: each stage as far as any option takes it. A stage's least cost never falls as it
        gains blocks, so after j stages the greedy reaches at least as far as any such cut."""
        n, pos = self.n, 0
        for j in range(len(self.inflight)):
            best = pos
            for index, mode in enumerate(self.modes):
                hi = n
                for prefix, offset in mode.terms:
                    hi = min(hi, bisect_right(prefix, prefix[pos] + cap - offset, pos, n + 1) - 1)
                if hi > best:
                    best = max(best, min(hi, self._memory_reach(j, pos, index)))
            if best == pos:
                return False
            pos = best
            if pos >= n:
                return True
        return False

    def least(self, low: float, high: float, steps: int) -> float:
        """A lower bound on the least cap that cuts, given that ``low`` does not and ``high`` does
        (or is inf): ``steps`` bisections, after doubling ``high`` until it cuts; inf if none does."""
        if math.isinf(high):
            high = 1.5 * low
            while not self.cuts(high):
                if not self.cuts(math.inf):
                    return math.inf
                low, high = high, 2 * high
        for _ in range(steps):
            mid = (low + high) / 2
            if self.cuts(mid):
                high = mid
            else:
                low = mid
        return low

    def _memory_reach(self, j: int, lo: int, index: int) -> int:
        """The furthest hi at which blocks [lo, hi) fit as stage j under mode ``index`` (memory grows
        with hi); cached."""
        key = (j, lo, index)
        hit = self._reach.get(key)
        if hit is not None:
            return hit
        mode, params, expert, t = self.modes[index], self.params, self.expert, self.t
        held, usable, act = self.inflight[j], self.usable, mode.act

        def fits(hi: int) -> bool:
            experts = (expert[hi] - expert[lo]) / t
            state = ((params[hi] - params[lo]) / t - experts) * mode.state + experts * mode.state_e
            return state + mode.gather + (act[hi] - act[lo]) * held + mode.working_set <= usable

        low, high = lo, self.n  # fits(low): an empty stage holds nothing
        if fits(high):
            low = high
        while high - low > 1:
            mid = (low + high) // 2
            if fits(mid):
                low = mid
            else:
                high = mid
        self._reach[key] = low
        return low
