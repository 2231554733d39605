"""The exact node count of the exhaustive planner tree, without walking it.

``ExhaustivePlanSearch`` cannot finish on GPT-3 / 1024 GPUs, so the "fewer nodes than exhaustive"
ratio needs the size of its tree by other means. Below the shape nodes, the subtree of a stage node
depends only on (shape, blocks used, stages left per part, last part): its children are the
memory-feasible options of each (group, blocks) after the path-independent option filter
(``PlanSearch._stage_options``), and none of that reads the path's times. So a memoised recursion
over those keys counts the tree exactly; a test compares it with real ``--exhaustive`` runs. It
counts the tree without a launcher's stage rules (``--launcher megatron`` and ``galvatron`` make
subtrees depend on earlier stages too).
"""

from __future__ import annotations

from yewpy.apps.dnn.planner.pareto import pareto_options
from yewpy.apps.dnn.planner.search import PlanSearch


def exhaustive_nodes(search: PlanSearch, filtered: bool = True) -> int:
    """Nodes ``ExhaustivePlanSearch`` visits on ``search``'s instance (root included).

    ``filtered=False`` counts the larger tree that keeps every memory-feasible (recompute, ZeRO)
    option of a stage, i.e. the plan space itself with no dominance filter at all.
    """
    total = 1  # the root
    for _, by_d in search.forms:
        total += 1  # the formation node
        for sids in by_d.values():
            total += 1  # the data-parallel node
            for sid in sids:
                total += shape_nodes(search, sid, filtered)
    return total


def shape_nodes(search: PlanSearch, sid: int, filtered: bool = True) -> int:
    """Nodes of one shape's subtree (the shape node itself included)."""
    sh, n = search.shapes[sid], search.n
    pipe = sh.mode == "pipe"
    parts = list(range(len(sh.parts))) if pipe else [None]
    memo: dict = {}

    def count(lo: int, counts: tuple, prev: int | None) -> int:
        key = (lo, counts, prev)
        hit = memo.get(key)
        if hit is not None:
            return hit
        q = sum(counts)
        total = 1
        if q:
            j = sh.p - q
            R = n - lo
            ks = [R] if q == 1 else range(sh.v, R - (q - 1) * sh.v + 1)
            for i, g in enumerate(parts):
                if counts[i] == 0:
                    continue
                newcounts = counts[:i] + (counts[i] - 1,) + counts[i + 1 :]
                for k in ks:
                    terms = search.stage_terms(sid, g, lo, lo + k, j, prev)
                    options = len(pareto_options(terms, pipe)) if filtered else len(terms)
                    if options:
                        total += options * count(lo + k, newcounts, g)
        memo[key] = total
        return total

    return count(0, search.start_counts(sid), None)
