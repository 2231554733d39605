"""Numerical semigroups by genus (enumeration, compiled): count them on the Fromentin-Hivert tree.

The tree holds every numerical semigroup once, at depth = genus; a search to genus G counts
them all, genus by genus.  ``value`` is n(G) and ``metrics["by_genus"]`` is [n(0), ..., n(G)].

>>> r = Semigroups(7).search()
>>> r.value, r.metrics["by_genus"]
(39, [1, 1, 2, 4, 7, 12, 23, 39])
"""

from __future__ import annotations

import argparse
from typing import Any

from yewpy.apps._semigroups import MAX_GENUS, SemigroupsCore
from yewpy.errors import UsageError
from yewpy.result import Result

__all__ = ["MAX_GENUS", "Semigroups"]


class Semigroups:
    """Every numerical semigroup of genus 0..``genus`` (the search tree cut at that depth)."""

    def __init__(self, genus: int) -> None:
        if not 0 <= genus <= MAX_GENUS:
            raise ValueError(f"semigroups needs 0 <= genus <= {MAX_GENUS}, got {genus}")
        self.genus = genus

    def core(self) -> SemigroupsCore:
        return SemigroupsCore(self.genus)

    def search(self, coordination: Any = "seq", **params: Any) -> Result:
        """Count the semigroups of each genus up to ``genus``; ``value`` is n(genus).

        A smaller ``max_depth`` cuts the tree earlier (the missing genera count 0).
        """
        max_depth = params.pop("max_depth", None)
        depth = self.genus + 1 if max_depth is None else min(max_depth, self.genus + 1)
        result = self.core().search(coordination, max_depth=depth, **params)
        by_genus = list(result.value) or [0] * (self.genus + 1)
        result.metrics["by_genus"] = by_genus
        result.value = by_genus[self.genus]
        return result


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-g", "--genus", type=int, required=True, metavar="G",
                        help="count semigroups of genus 0..G, inclusive (YewPar's -g is exclusive)")


def solve(args: argparse.Namespace, **params: Any) -> tuple[Result, list[str]]:
    if not 0 <= args.genus <= MAX_GENUS:
        raise UsageError(f"semigroups needs 0 <= genus <= {MAX_GENUS}, got {args.genus}")
    result = Semigroups(args.genus).search(**params)
    partial = "" if result.status == "exhausted" else f" (partial: stopped by {result.status})"
    lines = ["Results Table:", *(f"{g}: {n}" for g, n in enumerate(result.metrics["by_genus"])),
             f"Semigroups of genus {args.genus}: {result.value}{partial}"]
    return result, lines
