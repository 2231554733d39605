"""0/1 knapsack as a plain-Python ``yewpy.Optimisation`` subclass: the tutorial's example.

It builds exactly the tree of the compiled ``Knapsack`` (same order, children and bound).

>>> r = KnapsackPy([60, 100, 120], [10, 20, 30], 50).search()
>>> r.objective, r.solution
(220, [1, 2])
"""

from __future__ import annotations

import math
from bisect import bisect_right
from itertools import accumulate

import yewpy


class KnapsackPy(yewpy.Optimisation):
    """Node: (next item, profit, weight, taken) with ``taken`` a linked list (item, rest)."""

    prune_level = True    # children come in density order, so their bounds never increase

    def __init__(self, profits, weights, capacity):
        self.order = sorted(range(len(profits)), key=lambda i: -profits[i] / weights[i])
        self.p = [profits[i] for i in self.order]
        self.w = [weights[i] for i in self.order]
        self.capacity = capacity
        self.cum_p = [0, *accumulate(self.p)]
        self.cum_w = [0, *accumulate(self.w)]
        self.integral = all(float(x).is_integer() for x in self.p)

    def root(self):
        return (0, 0, 0, None)

    def children(self, node):
        i, profit, weight, taken = node
        room = self.capacity - weight
        for j in range(i, len(self.p)):
            if self.w[j] <= room:
                yield (j + 1, profit + self.p[j], weight + self.w[j], (j, taken))

    def objective(self, node):
        return node[1]

    def bound(self, node):
        """Dantzig: whole items in density order while they fit, then a fraction of the next."""
        i, profit, weight, _ = node
        limit = self.cum_w[i] + self.capacity - weight
        k = bisect_right(self.cum_w, limit, lo=i) - 1
        b = profit + self.cum_p[k] - self.cum_p[i]
        if k < len(self.p):
            b += (limit - self.cum_w[k]) * self.p[k] / self.w[k]
        return math.floor(b) if self.integral else b

    def search(self, coordination="seq", **params):
        result = super().search(coordination, **params)
        if result.solution is None:
            if result.objective is not None and result.objective >= 0:
                return result               # nothing beat the initial bound
            result.objective = 0            # the empty packing, which beats a negative one
        items = []
        taken = result.solution[3] if result.solution else None
        while taken is not None:
            items.append(self.order[taken[0]])
            taken = taken[1]
        result.solution = sorted(items)
        if result.objective is None:
            result.objective = 0
        return result
