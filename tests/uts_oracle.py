"""UTS re-implemented in Python over hashlib's SHA-1: the independent oracle for small trees."""

from __future__ import annotations

import hashlib
import math


def uts_tree(t: int, b0: float, d: int, a: int, q: float, m: int, seed: int, f: float,
             limit: int = 2000) -> tuple | None:
    """Nodes, leaves and depth of the UTS tree, or None beyond ``limit`` nodes."""
    def children(state, h):
        u = (int.from_bytes(state[16:20], "big") & 0x7FFFFFFF) / 2**31
        if t == 3:
            return int(b0) if h < d else 0
        if t == 1 or (t == 2 and h < f * d):
            if h == 0:
                b = b0
            elif a == 1:
                b = b0 * math.pow(h, -math.log(b0) / math.log(d))
            elif a == 2:
                b = 0.0 if h > 5 * d else math.pow(b0, math.sin(2.0 * 3.141592653589793 * h / d))
            elif a == 3:
                b = b0 if h < d else 0.0
            else:
                b = b0 * (1.0 - h / d)
            if b <= 0:
                return 0
            k = math.floor(math.log(1 - u) / math.log(1 - 1.0 / (1.0 + b)))
            return max(0, min(k, 100))
        if t == 0 and h == 0:
            return math.floor(b0)
        return min(m, 100) if u < q else 0

    stack = [(hashlib.sha1(bytes(16) + (seed % 2**32).to_bytes(4, "big")).digest(), 0)]
    nodes = leaves = depth = 0
    while stack:
        state, h = stack.pop()
        nodes, depth = nodes + 1, max(depth, h)
        if nodes > limit:
            return None
        k = children(state, h)
        leaves += k == 0
        stack.extend((hashlib.sha1(state + i.to_bytes(4, "big")).digest(), h + 1) for i in range(k))
    return nodes, leaves, depth
