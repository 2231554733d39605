"""Random trees for the top-K kind, their brute-force answers, and (run under mpiexec by
test_topk.py) every case under every coordination on this job's ranks.

A node is its path of child indices.  Its objective is the sum of the edge weights on its path
(small integers, so ties are common); its bound adds the largest weight for every level left.
"""

import hashlib
import json
import os
import sys

import yewpy

RANK = int(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
COORDINATIONS = [("seq", {}), ("stacksteal", {}), ("stacksteal", {"chunked": True}),
                 ("depthbounded", {"spawn_depth": 2}), ("budget", {"backtracks": 30}),
                 ("ordered", {"spawn_depth": 2})]
DEPTH, MOST = 7, 4


def _draw(seed: int, path: tuple, salt: str) -> int:
    digest = hashlib.blake2b(f"{seed}/{salt}/{path}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "little")


def weight(seed: int, path: tuple) -> int:
    return _draw(seed, path, "w") % 7 - 3


def fanout(seed: int, path: tuple) -> int:
    """Between 0 and MOST children (the root at least 2), none at DEPTH."""
    return 0 if len(path) == DEPTH else max(2 * (not path), _draw(seed, path, "f") % (MOST + 1))


class _Walks(yewpy.TopK):
    """The best paths of a random tree, maximised or minimised (``sense``)."""

    def __init__(self, seed: int, k=None, gap=None, sense="max", **_):
        self.seed, self.k, self.gap, self.sense = seed, k, gap, sense

    def root(self):
        return ()

    def children(self, path):
        for i in range(fanout(self.seed, path)):
            yield path + (i,)

    def objective(self, path):
        return sum(weight(self.seed, path[:d + 1]) for d in range(len(path)))


class _Bounded:
    def bound(self, path):
        return self.objective(path) + (3 if self.sense == "max" else -3) * (DEPTH - len(path))


class _Keyed:
    def key(self, path):            # one path per subtree of the root
        return path[0]


def tiebreak(path: tuple) -> tuple:
    """Later paths first: against the depth-first order, so first-met is not what ties keep."""
    return tuple(-i for i in path)


class _Tied:
    def tiebreak(self, path):
        return tiebreak(path)


_classes: dict = {}


def Walks(seed: int, keyed=False, ties=False, bounded=True, **case) -> yewpy.TopK:
    """A search of the tree ``seed`` with a bound, a key and a tiebreak as asked."""
    mixins = tuple(m for m, on in ((_Keyed, keyed), (_Tied, ties), (_Bounded, bounded)) if on)
    cls = _classes.get(mixins)
    if cls is None:
        cls = _classes[mixins] = type("Walks", (*mixins, _Walks), {})
    return cls(seed, **case)


def every_path(seed: int) -> list:
    out, stack = [], [()]
    while stack:
        path = stack.pop()
        if path:
            out.append(path)
        stack.extend(path + (i,) for i in range(fanout(seed, path)))
    return out


def brute_force(case: dict) -> list:
    """The answer by sorting every path: ``(objective, path)`` pairs, best first (ties by ``tiebreak``)."""
    seed, sense = case["seed"], case.get("sense", "max")
    score = {p: sum(weight(seed, p[:d + 1]) for d in range(len(p))) for p in every_path(seed)}
    sign = 1 if sense == "max" else -1
    ranked = sorted(score, key=lambda p: (-sign * score[p], tiebreak(p)))
    if case.get("keyed"):
        firsts, kept = set(), []
        for p in ranked:
            if p[0] not in firsts:
                firsts.add(p[0])
                kept.append(p)
        ranked = kept
    k, gap = case.get("k"), case.get("gap")
    if gap is not None:
        best = sign * score[ranked[0]]
        ranked = [p for p in ranked if sign * score[p] >= best - gap]
    if k is not None or gap is None:
        ranked = ranked[: k or 1]
    return [(score[p], p) for p in ranked]


CASES = [dict(seed=s, k=k, sense=sense, ties=ties)
         for s in (1, 2) for k in (1, 4, 9) for sense in ("max", "min") for ties in (False, True)]
CASES += [dict(seed=3, gap=2), dict(seed=4, gap=1, sense="min", ties=True),
          dict(seed=5, gap=3, k=5, ties=True), dict(seed=6, k=3, keyed=True, ties=True),
          dict(seed=9, k=2, keyed=True, sense="min"),
          dict(seed=8, k=5, bounded=False, ties=True)]


def run(case: dict, name: str, params: dict) -> dict:
    """One case under one coordination, as JSON-ready as the test compares it."""
    search = Walks(**case)
    result = search.search(name, **params)
    return {"status": result.status, "kind": result.kind, "threshold": search.threshold,
            "solutions": [[o, list(p)] for o, p in result.solutions]}


def main() -> None:
    out = {}
    for i, case in enumerate(CASES):
        for name, params in COORDINATIONS:
            out[f"{i} {name}{json.dumps(params, sort_keys=True)}"] = run(case, name, params)
    with open(f"topk.{RANK}.json", "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    sys.exit(main())
