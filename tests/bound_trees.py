"""Random optimisation trees whose bounds are exact or loose by a known slack, for the proven bound
of a stopped search (``Result.bound``); run under mpiexec by test_bound.py, every case under
every coordination that holds its open work on this job's ranks.

A node is its path of child indices; its objective is the sum of the edge weights on its path.
With ``slack`` 0 its bound is the best objective in its subtree (brute force), so the proven bound
of a stopped search must be the optimum itself: the optimum was found, or it lies in the open
work, whose bound is exact. With slack, the bound adds up to ``slack`` per node and the proven
bound may only be looser than the optimum, never tighter.
"""

import hashlib
import json
import os
import sys
from functools import lru_cache

import yewpy

RANK = int(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
COORDINATIONS = [("seq", {}), ("stacksteal", {}), ("stacksteal", {"chunked": True}),
                 ("depthbounded", {"spawn_depth": 2}), ("budget", {"backtracks": 5}),
                 ("budget", {"backtracks": 3, "spawn_all": True, "pool": "deque"}),
                 ("ordered", {"spawn_depth": 1}), ("ordered", {"spawn_depth": 3, "discrepancy": True})]
LIMITS = (1, 2, 3, 5, 8, 13, 40, 200)
DEPTH, MOST = 7, 4


def _draw(seed: int, path: tuple, salt: str) -> int:
    digest = hashlib.blake2b(f"{seed}/{salt}/{path}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "little")


class Paths(yewpy.Optimisation):
    """The best path sum of a random tree, maximised or minimised."""

    def __init__(self, seed: int, sense: str = "max", slack: int = 0, root_slack: int = 0) -> None:
        self.seed, self.sense, self.slack, self.root_slack = seed, sense, slack, root_slack
        self.sign = 1 if sense == "max" else -1
        self.best_below = lru_cache(maxsize=None)(self._best_below)

    def fingerprint(self) -> str:
        """What a checkpoint of this tree is checked against (the memo does not pickle)."""
        return f"{self.seed}/{self.sense}/{self.slack}/{self.root_slack}"

    def root(self) -> tuple:
        return ()

    def fanout(self, path: tuple) -> int:
        return 0 if len(path) == DEPTH else max(2 * (not path), _draw(self.seed, path, "f") % (MOST + 1))

    def children(self, path: tuple):
        for i in range(self.fanout(path)):
            yield path + (i,)

    def objective(self, path: tuple) -> float:
        return sum(_draw(self.seed, path[:d + 1], "w") % 7 - 3 for d in range(len(path)))

    def _best_below(self, path: tuple) -> float:
        """The best objective of ``path``'s subtree, itself included unless it is the root."""
        own = [self.objective(path)] if path else []
        return max((*own, *(self.best_below(c) for c in self.children(path))), key=lambda v: self.sign * v)

    def bound(self, path: tuple) -> float:
        loose = self.root_slack if not path else _draw(self.seed, path, "s") % (self.slack + 1)
        return self.best_below(path) + self.sign * loose

    def optimum(self) -> float:
        return self.best_below(())


def cases(seeds: int = 4) -> list:
    """(seed, sense, slack): exact and loose bounds, maximised and minimised."""
    return [(seed, sense, slack) for seed in range(seeds) for sense in ("max", "min") for slack in (0, 3)]


def run_all(seeds: int = 4, limits: tuple = LIMITS) -> dict:
    """Every case x coordination x node limit: [status, objective, bound] (the bound None if unknown)."""
    out = {}
    for seed, sense, slack in cases(seeds):
        for name, params in COORDINATIONS:
            for limit in limits:
                result = Paths(seed, sense, slack).search(name, node_limit=limit, **params)
                key = f"{seed}/{sense}/{slack}/{name}{json.dumps(params, sort_keys=True)}/{limit}"
                out[key] = [result.status, result.objective, result.bound]
    return out


if __name__ == "__main__":
    results = run_all(2, (2, 8, 40))     # every rank joins every search: fewer of them
    with open(os.path.join(sys.argv[1], f"bounds.{RANK}.json"), "w") as f:
        json.dump(results, f)
