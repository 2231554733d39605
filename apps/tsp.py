"""Travelling salesperson (optimisation, minimise): partial tours, Held-Karp Lagrangian bound.

The tree is YewPar's (paths from the first city, nearest city first); the bound is the 1-tree
bound with Lagrangian penalties optimised once at the root by subgradient ascent, and the first
incumbent is a multi-start nearest-neighbour tour improved by 2-opt and Or-opt.

>>> square = [[0, 1, 2, 1], [1, 0, 1, 2], [2, 1, 0, 1], [1, 2, 1, 0]]
>>> r = Tsp(square).search()
>>> r.objective, r.solution
(4, [0, 1, 2, 3])
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from yewpy.apps._tsp import MAX_CITIES, TspCore, held_karp, local_search_tour
from yewpy.apps.tsplib import read_tsplib, tour_length
from yewpy.errors import UsageError
from yewpy.result import Result

__all__ = ["MAX_CITIES", "Tsp"]

#: the app takes ``--better-than V``: the search then proves no tour is shorter than V, or finds one
BETTER_THAN = True

BOUNDS = ("held-karp", "mst")
INCUMBENTS = ("local-search", "nearest")


class Tsp:
    """A symmetric TSP on a full integer distance matrix, searched for a shortest closed tour.

    ``bound="held-karp"`` (default) uses the root's subgradient-optimised penalties;
    ``bound="mst"`` keeps them at zero (the plain spanning-tree bound, for comparison).
    ``incumbent="local-search"`` (default) seeds the search with the best nearest-neighbour tour
    over all starts improved by 2-opt and Or-opt; ``"nearest"`` with the plain nearest-neighbour
    tour from the first city (YewPar's greedy seed).
    Solutions start at the first city and use ``labels`` (default 0..n-1).
    """

    prune_level = False         # sibling bounds are not monotone

    def __init__(self, matrix: Sequence[Sequence[int]], labels: Sequence[Any] | None = None,
                 bound: str = "held-karp", incumbent: str = "local-search", name: str = "") -> None:
        n = len(matrix)
        if n < 1:
            raise UsageError("a TSP needs at least one city")
        if n > MAX_CITIES:
            raise UsageError(f"{name or 'this instance'} has {n} cities; the tsp search keeps the visited "
                             f"set in one 64-bit word and supports at most {MAX_CITIES}")
        if bound not in BOUNDS:
            raise UsageError(f"bound must be one of {', '.join(BOUNDS)}, got {bound!r}")
        if incumbent not in INCUMBENTS:
            raise UsageError(f"incumbent must be one of {', '.join(INCUMBENTS)}, got {incumbent!r}")
        for i, row in enumerate(matrix):
            if len(row) != n:
                raise UsageError(f"row {i} of the distance matrix has {len(row)} entries, not {n}")
            for j in range(i):
                if row[j] != matrix[j][i] or int(row[j]) != row[j]:
                    raise UsageError(f"distances must be symmetric integers: d({i},{j}) = {row[j]}, "
                                     f"d({j},{i}) = {matrix[j][i]}")
        self.n = n
        self.matrix = [[int(x) for x in row] for row in matrix]
        self.labels = list(range(n)) if labels is None else list(labels)
        self.bound = bound
        self.flat = [x for row in self.matrix for x in row]
        if incumbent == "nearest":
            self.tour, self.tour_length = local_search_tour(self.flat, n, starts=[0], improve=False)
        else:
            self.tour, self.tour_length = local_search_tour(self.flat, n)
        if bound == "held-karp":
            self.pi, _, self.iterations = held_karp(self.flat, n, float(self.tour_length))
        else:
            self.pi, self.iterations = [0.0] * n, 0
        self.root_bound = int(self.core().node_bound([0]))      # the bound every search starts from

    @classmethod
    def from_file(cls, path: str, **options: Any) -> Tsp:
        """A TSPLIB file; solutions use its 1-based city numbers.  ``options``: ``bound``, ``incumbent``."""
        inst = read_tsplib(path, max_dimension=MAX_CITIES)
        return cls(inst.matrix, labels=range(1, inst.dimension + 1), name=inst.name, **options)

    def core(self) -> TspCore:
        return TspCore(self.flat, self.n, self.pi)

    def search(self, coordination: Any = "seq", **params: Any) -> Result:
        """The shortest tour, seeded with the local-search tour as incumbent."""
        if params.get("prune_level"):
            raise UsageError("tsp children do not come with monotone bounds: prune_level would be unsound")
        params.setdefault("prune_level", False)
        given = params.pop("initial_bound", None)       # a length to beat: the tour's unless shorter
        if given is None or self.tour_length < given:
            params.update(initial_bound=self.tour_length, initial_solution=list(self.tour))
        else:
            params.update(initial_bound=given, initial_solution=None)
        result = self.core().search(coordination, **params)
        result.metrics["initial_tour_length"] = self.tour_length
        result.metrics["root_bound"] = self.root_bound
        result.metrics["subgradient_iterations"] = self.iterations
        result.metrics["bounds"] = result.metrics["counters"]["bounds"]
        if result.solution is not None:                 # None: no tour is shorter than ``given``
            result.objective = int(result.objective)
            result.solution = [self.labels[c] for c in result.solution]
        return result

    def length(self, tour: Sequence[Any]) -> int:
        """The length of a closed tour given in labels."""
        index = {label: i for i, label in enumerate(self.labels)}
        return tour_length(self.matrix, [index[c] for c in tour])


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", metavar="FILE", help="TSPLIB file (EUC_2D, CEIL_2D, ATT, GEO or EXPLICIT)")
    parser.add_argument("--bound", choices=BOUNDS, default="held-karp",
                        help="held-karp: 1-tree with root Lagrangian penalties (default); mst: no penalties")
    parser.add_argument("--incumbent", choices=INCUMBENTS, default="local-search",
                        help="first tour: local-search (all nearest-neighbour starts + 2-opt + Or-opt, "
                             "default) or nearest (nearest neighbour from city 1)")


def solve(args: argparse.Namespace, **params: Any) -> tuple[Result, list[str]]:
    problem = Tsp.from_file(args.input, bound=args.bound, incumbent=args.incumbent)
    result = problem.search(**params)
    if result.solution is None:
        return result, [f"No tour shorter than {args.better_than} (--better-than): the optimal tour length "
                        f"is at least {args.better_than}",
                        f"Initial tour length ({args.incumbent}): {problem.tour_length}",
                        f"Root lower bound ({args.bound}): {problem.root_bound}"]
    if problem.length(result.solution) != result.objective:
        raise RuntimeError("internal error: the tour's length is not the reported objective")
    proved = result.status == "optimal"
    lines = [f"Tour: {' '.join(map(str, result.solution))}",
             f"{'Optimal' if proved else 'Best (not proved optimal)'} tour length: {result.objective}",
             f"Initial tour length ({args.incumbent}): {problem.tour_length}",
             f"Root lower bound ({args.bound}): {problem.root_bound}"]
    return result, lines
