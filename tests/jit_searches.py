"""Plain-Python searches written the way ``@yewpy.jit`` compiles them, shared by the JIT tests
and benchmarks/bench_jit.py: each builds the same tree as one of yewpy's compiled apps.
"""

from __future__ import annotations

import math

import numpy as np

import yewpy


class BitQueens(yewpy.Enumeration):
    """n-queens, row by row: a node is (columns, left diagonals, right diagonals) as bitmasks;
    the value counts complete boards (the tree of ``yewpy nqueens``)."""

    def __init__(self, n):
        self.n = n
        self.full = (1 << n) - 1

    def root(self):
        return (0, 0, 0)

    def children(self, node):
        cols, left, right = node
        free = ~(cols | left | right) & self.full
        while free:
            bit = free & -free
            free ^= bit
            yield (cols | bit, ((left | bit) << 1) & self.full, (right | bit) >> 1)

    def value(self, node):
        return 1 if node[0] == self.full else 0


class MaskKnapsack(yewpy.Optimisation):
    """0/1 knapsack, the tutorial's tree (items by density, Dantzig bound), with the packed items
    as a bitmask in the node: (next item, profit, weight, packed).  Up to 63 items."""

    prune_level = True

    def __init__(self, profits, weights, capacity):
        order = sorted(range(len(profits)), key=lambda i: -profits[i] / weights[i])
        self.order = order
        self.p = [profits[i] for i in order]
        self.w = [weights[i] for i in order]
        self.n = len(order)
        self.capacity = capacity
        self.cum_p = [0]
        self.cum_w = [0]
        for p, w in zip(self.p, self.w):
            self.cum_p.append(self.cum_p[-1] + p)
            self.cum_w.append(self.cum_w[-1] + w)
        self.integral = all(float(x).is_integer() for x in self.p)

    def root(self):
        return (0, 0, 0, 0)

    def children(self, node):
        i, profit, weight, packed = node
        room = self.capacity - weight
        for j in range(i, self.n):
            if self.w[j] <= room:
                yield (j + 1, profit + self.p[j], weight + self.w[j], packed | (1 << j))

    def objective(self, node):
        return node[1]

    def bound(self, node):
        i, profit, weight, _ = node
        limit = self.cum_w[i] + self.capacity - weight
        k, hi = i, self.n              # binary search: the largest k with cum_w[k] <= limit
        while k < hi:
            mid = (k + hi + 1) >> 1
            if self.cum_w[mid] <= limit:
                k = mid
            else:
                hi = mid - 1
        b = profit + self.cum_p[k] - self.cum_p[i]
        if k < self.n:
            b += (limit - self.cum_w[k]) * self.p[k] / self.w[k]
        return math.floor(b) if self.integral else b

    def items(self, node):
        """The input indices of the packed items."""
        return sorted(self.order[j] for j in range(self.n) if node[3] >> j & 1)


class BitsetClique(yewpy.Optimisation):
    """Maximum clique, MCSa1: colour the candidates greedily, branch on the last coloured vertex
    first, bound = size + colour (the tree of ``yewpy maxclique``).  A node is
    (size, bound, members, candidates), the two sets as arrays of 64-bit words."""

    prune_level = True

    def __init__(self, rows, n):
        self.adj = rows                 # n x words uint64: row v holds v's neighbours
        self.n = n
        self.words = rows.shape[1]

    def root(self):
        cand = np.zeros(self.words, dtype=np.uint64)
        for v in range(self.n):
            cand[v >> 6] |= np.uint64(1) << np.uint64(v & 63)
        return (0, self.n, np.zeros(self.words, dtype=np.uint64), cand)

    def children(self, node):
        size, _, clique, cand = node
        rest = cand.copy()
        q = np.empty(self.words, dtype=np.uint64)
        remaining = 0
        for i in range(self.words):
            remaining += int(rest[i]).bit_count()
        order = np.empty(remaining, dtype=np.int64)       # the candidates, in colouring order
        colour = np.empty(remaining, dtype=np.int64)
        k = 0
        c = 0
        while remaining:
            c += 1
            q[:] = rest
            start = 0
            while True:
                while start < self.words and q[start] == 0:
                    start += 1
                if start == self.words:
                    break
                word = int(q[start])
                v = start * 64 + (word & -word).bit_length() - 1
                bit = np.uint64(1) << np.uint64(v & 63)
                rest[start] &= ~bit
                q[start] &= ~bit
                for i in range(start, self.words):
                    q[i] &= ~self.adj[v, i]
                order[k] = v
                colour[k] = c
                k += 1
                remaining -= 1
        p = cand.copy()
        while k > 0:
            k -= 1
            v = order[k]
            bit = np.uint64(1) << np.uint64(v & 63)
            members = clique.copy()
            members[v >> 6] |= bit
            yield (size + 1, size + colour[k], members, p & self.adj[v])
            p[v >> 6] &= ~bit

    def objective(self, node):
        return node[0]

    def bound(self, node):
        return node[1]

    def members(self, node):
        """The clique's vertices (search numbering)."""
        return [v for v in range(self.n) if int(node[2][v >> 6]) >> (v & 63) & 1]


def tutorial_knapsack():
    """The tutorial's 35 items (optimum 12423 in 22,247 nodes): profits, weights, capacity."""
    import random

    rng = random.Random(3)
    weights = [rng.randint(100, 1000) for _ in range(35)]
    profits = [w + 100 for w in weights]
    return profits, weights, sum(weights) // 2



def random_graph(n, p, seed):
    """A seeded G(n, p) as n rows of 64-bit words (row v: the neighbours of v)."""
    rng = np.random.default_rng(seed)
    words = (n + 63) // 64
    rows = np.zeros((n, words), dtype=np.uint64)
    for a in range(n):
        for b in range(a + 1, n):
            if rng.random() < p:
                rows[a, b >> 6] |= np.uint64(1) << np.uint64(b & 63)
                rows[b, a >> 6] |= np.uint64(1) << np.uint64(a & 63)
    return rows



class CliqueDecision(yewpy.Decision):
    """Is there a clique of ``target`` vertices?  Bitmask nodes (clique, candidates), up to 63 vertices."""

    def __init__(self, rows):
        self.adj = [int(r) for r in rows]
        self.n = len(rows)

    def root(self):
        return (0, (1 << self.n) - 1)

    def children(self, node):
        clique, cand = node
        while cand:
            low = cand & -cand
            cand ^= low
            v = low.bit_length() - 1
            yield (clique | low, cand & self.adj[v])

    def objective(self, node):
        return node[0].bit_count()

    def bound(self, node):
        return node[0].bit_count() + node[1].bit_count()
