"""How heterogeneous replicas share the micro-batches (hap mode): the sharding-ratio LP's closed form
and its integer version. Both minimise the slowest replica's time; the bound uses the first, leaves
the second."""

from __future__ import annotations

import heapq
import math


def water_fill(A: list, X: list, d: list, M: float) -> float:
    """min lambda s.t. A_c + m_c X_c <= lambda, sum d_c m_c = M, m_c >= 1 (continuous; the closed form
    of the sharding-ratio LP: shares proportional to speed until a replica is at its floor)."""
    fixed = [False] * len(A)
    while True:
        den = sum(dc / x for dc, x, f in zip(d, X, fixed) if not f)
        num = (
            M
            - sum(dc for dc, f in zip(d, fixed) if f)
            + sum(dc * a / x for a, x, dc, f in zip(A, X, d, fixed) if not f)
        )
        # every replica at its floor (den 0) leaves only the fixed ones' time: -inf here, max below
        lam = num / den if den > 0 else -math.inf
        low = [c for c in range(len(A)) if not fixed[c] and (lam - A[c]) / X[c] < 1]
        if not low:
            floor = max((A[c] + X[c] for c in range(len(A)) if fixed[c]), default=-math.inf)
            return max(lam, floor)
        for c in low:
            fixed[c] = True


def integer_shares(A: list, X: list, d: list, M: int) -> tuple[float, list]:
    """The exact integer version: every replica gets >= 1 micro-batch; greedy by the next finish time."""
    counts = [[1] * dc for dc in d]
    heap = [(A[c] + 2 * X[c], c, r) for c in range(len(A)) for r in range(d[c])]
    heapq.heapify(heap)
    for _ in range(M - sum(d)):
        _, c, r = heapq.heappop(heap)
        counts[c][r] += 1
        heapq.heappush(heap, (A[c] + (counts[c][r] + 1) * X[c], c, r))
    worst = max(A[c] + max(counts[c]) * X[c] for c in range(len(A)))
    return worst, counts
