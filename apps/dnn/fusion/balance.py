"""A two-stream seed for the fusion branch and bound: list-schedule a good bucketing, then split the
buckets that start after the whole backward pass between the streams by a subset-sum search.

Once both streams are busy past the last gradient's ready time, every later bucket starts the moment
its stream frees up, so the two ends are ``e_0 + X`` and ``e_1 + (rest - X)`` for the sum X of the
buckets given to stream 0: the tail is a number-partitioning problem.  The search works on the
distinct bucket costs (real profiles repeat a few layer shapes), choosing how many of each go to
stream 0 by a meet-in-the-middle over the counts.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np

__all__ = ["balance_tail", "split_counts"]

SUMS = 1 << 21          # combinations per half of the meet-in-the-middle split


def _sums(classes: list[tuple[int, int]]) -> np.ndarray:
    """Every ``sum a_i cost_i`` with ``0 <= a_i <= n_i``, in mixed-radix order of the counts."""
    out = np.zeros(1, dtype=np.int64)
    for cost, count in classes:
        out = (out[:, None] + cost * np.arange(count + 1, dtype=np.int64)[None, :]).ravel()
    return out


def _counts(classes: list[tuple[int, int]], index: int) -> list[int]:
    """The counts behind ``_sums(classes)[index]``."""
    if not classes:
        return []
    return [int(a) for a in np.unravel_index(index, [count + 1 for _, count in classes])]


def split_counts(classes: list[tuple[int, int]], want2: int, cap: int = SUMS) -> list[int]:
    """Counts ``a_i <= n_i`` of each ``(cost_i, n_i)`` with ``2 * sum a_i cost_i`` nearest ``want2``.

    Meet in the middle: the classes fall into two groups of at most ``cap`` combinations each (the
    cheapest costs first); for every sum of one group a binary search finds the best partner in the
    other.  Classes beyond both groups (the costliest) take about their proportional share (the three
    cheapest of them within +-2 of it, nearest first).
    """
    order = sorted(range(len(classes)), key=lambda i: classes[i][0])
    groups: list[list[int]] = [[], []]
    for g in (0, 1):
        size = 1
        while order and size * (classes[order[0]][1] + 1) <= cap:
            size *= classes[order[0]][1] + 1
            groups[g].append(order.pop(0))
    total = sum(c * n for c, n in classes)
    share = {i: min(classes[i][1], round(classes[i][1] * want2 / (2 * total))) if total else 0
             for i in order}                       # too many combinations: about the proportional share
    low = [classes[i] for i in groups[0]]
    high = [classes[i] for i in groups[1]]
    a, b = _sums(low), _sums(high)
    by = np.argsort(b, kind="stable")
    bs = b[by]
    best: tuple = (None, None, None, None)
    varied = order[:3]
    grid = sorted(itertools.product((0, -1, 1, -2, 2), repeat=len(varied)), key=lambda d: sum(map(abs, d)))
    for deltas in grid:
        counts = dict(share)
        for i, d in zip(varied, deltas):
            counts[i] = counts[i] + d
        if any(not 0 <= counts[i] <= classes[i][1] for i in varied):
            continue
        rest2 = want2 - 2 * sum(classes[i][0] * counts[i] for i in order)
        at = np.clip(np.searchsorted(bs, rest2 / 2 - a), 1, max(len(bs) - 1, 1))
        if len(bs) == 1:
            at = np.zeros(len(a), dtype=np.int64)
        below = np.maximum(at - 1, 0)
        gap_lo = np.abs(2 * (a + bs[below]) - rest2)
        gap_hi = np.abs(2 * (a + bs[at]) - rest2)
        gaps = np.minimum(gap_lo, gap_hi)
        ia = int(np.argmin(gaps))
        if best[0] is None or gaps[ia] < best[0]:
            ib = int(below[ia] if gap_lo[ia] <= gap_hi[ia] else at[ia])
            best = (int(gaps[ia]), counts, ia, int(by[ib]))
        if best[0] <= 1:
            break
    _, counts, ia, ib = best
    out = [counts.get(i, 0) for i in range(len(classes))]
    for i, c in zip(groups[0], _counts(low, ia)):
        out[i] = c
    for i, c in zip(groups[1], _counts(high, ib)):
        out[i] = c
    return out


def balance_tail(ready: list[int], costs: list[int], ends: list[int], start: int, cap: int = SUMS
                 ) -> list[int]:
    """Stream ids (0/1) for a bucketing on two streams: earliest-free list scheduling of the first
    ``start`` buckets, then the balanced split of the rest, each cost's stream-0 share spread evenly
    over its buckets so that neither stream falls behind the gradients."""
    free, streams = [0, 0], []
    k = 0
    while k < min(start, len(ends)):
        s = 0 if max(free[0], ready[ends[k] - 1]) <= max(free[1], ready[ends[k] - 1]) else 1
        free[s] = max(free[s], ready[ends[k] - 1]) + costs[k]
        streams.append(s)
        k += 1
    tail = costs[k:]
    if not tail:
        return streams
    early = 0 if free[0] <= free[1] else 1
    by_cost: dict[int, list[int]] = defaultdict(list)
    for pos, cost in enumerate(tail):
        by_cost[cost].append(pos)
    classes = [(cost, len(at)) for cost, at in by_cost.items()]
    counts = split_counts(classes, free[1 - early] - free[early] + sum(tail), cap)
    side = [1 - early] * len(tail)
    for (cost, n), a in zip(classes, counts):
        for t, pos in enumerate(by_cost[cost]):
            if (t + 1) * a // n > t * a // n:
                side[pos] = early
    return streams + side
