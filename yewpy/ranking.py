"""The ranking of a top-K search: the best solutions a worker has met, and the bar a new one must pass.

The engine prunes against the bar exactly as an optimisation prunes against its incumbent, and the
runtime shares it between ranks the same way: any rank's bar is valid everywhere, because the
solutions that set it exist.  Scores are ``sign * objective`` (larger is better), as in the engine.
A bar is strict (a solution must beat it) or, where ties must be kept, the score just below the
value to reach (``math.nextafter``), so one comparison, ``score > bar``, serves both.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable
from typing import Any

from yewpy.errors import UsageError


class Ranked:
    """A search whose solutions are ranked (``yewpy.TopK``): ``search()`` puts a fresh ranking of
    its ``ranking()`` in the engine, and ``self._ranking`` points to it (after the search, released:
    ``Ranking.release``)."""

    _ranking: Ranking | None = None

    def ranking(self) -> Ranking:
        raise NotImplementedError


class Ranking:
    """The ``k`` best solutions (at most one per ``key``), or every one within ``gap`` of the best.

    ``tiebreak(solution)`` orders solutions of equal objective (smaller first); with it, ties at the
    bar are kept and the answer does not depend on the order in which workers meet solutions.
    Without it, which of several tied solutions is kept is unspecified; the objectives are exact.
    """

    def __init__(self, sign: float, k: int | None = None, gap: float | None = None,
                 key: Callable[[Any], Any] | None = None,
                 tiebreak: Callable[[Any], Any] | None = None) -> None:
        if k is None and gap is None:
            k = 1
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise UsageError(f"k must be a positive integer, got {k!r}")
        if gap is not None and not (isinstance(gap, (int, float)) and 0 <= gap < math.inf):
            raise UsageError(f"gap must be a finite number >= 0, got {gap!r}")
        self.sign, self.k, self.gap, self.key, self.tiebreak = sign, k, gap, key, tiebreak
        self.orders: list[tuple] = []       # (-score,) or (-score, tiebreak): ascending, best first
        self.entries: list[tuple] = []      # (objective, solution, key), in the same order
        self.keyed: dict[Any, tuple] = {}   # key -> the order of its entry (only with ``key``)
        self.bar = -math.inf                # a solution is wanted only if its score is above it

    def _keep_ties(self) -> bool:
        return self.tiebreak is not None

    def inclusive(self, objective: float) -> float:
        """The bar that keeps solutions as good as ``objective`` (a score)."""
        return math.nextafter(self.sign * objective, -math.inf)

    def add(self, objective: float, solution: Any) -> bool:
        """Rank a solution; true when the bar rose."""
        score = self.sign * objective
        if not score > self.bar:
            return False
        order = (-score, self.tiebreak(solution)) if self.tiebreak is not None else (-score,)
        tag = self.key(solution) if self.key is not None else None
        if self.key is not None:
            held = self.keyed.get(tag)
            if held is not None:
                if held <= order:
                    return False
                old = bisect.bisect_left(self.orders, held)
                while self.entries[old][2] != tag:      # equal orders: another key's entry
                    old += 1
                del self.orders[old], self.entries[old]
            self.keyed[tag] = order
        at = bisect.bisect_right(self.orders, order)
        self.orders.insert(at, order)
        self.entries.insert(at, (objective, solution, tag))
        return self._trim()

    def _trim(self) -> bool:
        """Drop what falls outside ``k`` or ``gap``; raise the bar to what the entries prove."""
        best = -self.orders[0][0]
        cut = len(self.orders)
        if self.gap is not None:
            while cut and -self.orders[cut - 1][0] < best - self.gap:
                cut -= 1
        if self.k is not None:
            cut = min(cut, self.k)
        if self.key is not None:
            for _, _, tag in self.entries[cut:]:
                del self.keyed[tag]
        del self.orders[cut:], self.entries[cut:]
        bar = self.bar
        if self.k is not None and len(self.orders) == self.k:
            kth = -self.orders[-1][0]
            bar = max(bar, math.nextafter(kth, -math.inf) if self._keep_ties() else kth)
        if self.gap is not None:
            bar = max(bar, math.nextafter(best - self.gap, -math.inf))
        raised = bar > self.bar
        self.bar = bar
        return raised

    def adopt(self, score: float) -> bool:
        """Another worker's bar (a score); true when it is higher than this one's."""
        if score > self.bar:
            self.bar = score
            return True
        return False

    def release(self) -> None:
        """Drop ``key`` and ``tiebreak`` once the search is over: they are the search's bound methods,
        and a ranking the search keeps would otherwise tie the search (the DNN planner's: hundreds of
        thousands of cache entries) into a cycle that only a full collection frees. The bar and the
        solutions stay."""
        self.key = self.tiebreak = None

    @property
    def threshold(self) -> float | None:
        """The bar as an objective: a solution is wanted only if strictly better; None: no bar yet."""
        return self.bar * self.sign if self.bar > -math.inf else None

    def solutions(self) -> list[tuple[float, Any]]:
        """``(objective, solution)`` pairs, best first."""
        return [(objective, solution) for objective, solution, _ in self.entries]

    def merge(self, lists: Iterable[list]) -> list[tuple[float, Any]]:
        """Rank every ``(objective, solution)`` of ``lists`` here; the ranked pairs, best first."""
        for pairs in lists:
            for objective, solution in pairs:
                self.add(objective, solution)
        return self.solutions()
