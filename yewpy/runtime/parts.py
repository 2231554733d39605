"""Worker parts: what one worker's search contributes, and how parts merge into a Result.

A part is a picklable dict (nodes, enumeration value, witness, a top-K search's ranked
solutions, per-depth metrics, counters) so
it can travel between ranks and sit in a checkpoint; any number of parts merge into one.
"""

from __future__ import annotations

import math
from typing import Any

from yewpy._engine import Engine
from yewpy.core import DECISION, ENUMERATION, OPTIMISATION, Core
from yewpy.result import BOUNDED, STOPPED, Result

KIND_NAMES = {ENUMERATION: "enumeration", DECISION: "decision", OPTIMISATION: "optimisation"}
METRICS = ("nodes", "backtracks", "prunes", "spawns")


def counters_of(core: Core) -> dict:
    """A core's own counters (``core.counters()``, e.g. maxclique's expansions), if it keeps any."""
    return dict(core.counters()) if hasattr(core, "counters") else {}


def summary(engine: Engine, status: str) -> dict:
    """One worker's part (the enumeration value accumulated since the engine last gave it)."""
    return {"status": status, "nodes": engine.nodes, "value": engine.take_value()
            if engine.core.kind == ENUMERATION else None,
            "found": engine.found, "witness": engine.witness,
            "witness_objective": engine.witness_objective, "metrics": engine.metrics(),
            **({"ranked": engine.ranking.solutions()} if engine.ranking is not None else {})}


def _sum_lists(lists: list) -> list:
    out: list = []
    for values in lists:
        out.extend([0] * (len(values) - len(out)))
        for d, v in enumerate(values):
            out[d] += v
    return out


def merge_parts(problem: Any, core: Core, parts: list) -> dict:
    """One part that accounts for all of ``parts``: sums, the combined value, the best witness."""
    merged: dict = {"status": "merged", "nodes": sum(p["nodes"] for p in parts), "value": None,
                    "found": any(p["found"] for p in parts), "witness": None, "witness_objective": None,
                    "metrics": {key: _sum_lists([p["metrics"][key] for p in parts]) for key in METRICS},
                    "counters": {}}
    for p in parts:
        for key, count in p.get("counters", {}).items():
            merged["counters"][key] = merged["counters"].get(key, 0) + count
    if core.kind == ENUMERATION:
        value = problem.zero
        for p in parts:
            value = problem.combine(value, p["value"])
        merged["value"] = value
    elif core.kind == DECISION:
        finder = next((p for p in parts if p["found"]), None)
        if finder is not None:
            merged["witness"], merged["witness_objective"] = finder["witness"], finder["witness_objective"]
    elif "ranked" in parts[0]:
        merged["ranked"] = problem.ranking().merge(p["ranked"] for p in parts)
        if merged["ranked"]:
            merged["witness_objective"], merged["witness"] = merged["ranked"][0]
    else:
        for p in parts:
            score = p["witness_objective"]
            if score is not None and (merged["witness_objective"] is None
                                      or core.sign * score > core.sign * merged["witness_objective"]):
                merged["witness"], merged["witness_objective"] = p["witness"], score
    return merged


def _integral(x: Any) -> Any:
    return int(x) if isinstance(x, float) and x.is_integer() else x


def build_result(problem: Any, core: Core, parts: list, seconds: float, initial: tuple,
                 ranks: int) -> Result:
    """Merge the workers' parts into one Result."""
    kind = KIND_NAMES[core.kind] if "ranked" not in parts[0] else "topk"
    statuses = {p["status"] for p in parts}
    merged = merge_parts(problem, core, parts)
    metrics = dict(merged["metrics"])
    metrics["ranks"] = ranks
    metrics["counters"] = merged["counters"]
    stop = next((s for s in STOPPED if s in statuses), None)
    result = Result(kind=kind, status="", nodes=merged["nodes"], seconds=seconds, metrics=metrics)
    if kind == "enumeration":
        result.value = merged["value"]
        result.status = stop or "exhausted"
    elif kind == "decision":
        result.found = merged["found"]
        if merged["found"]:
            result.solution = merged["witness"]
            result.objective = _integral(merged["witness_objective"])
        result.status = "found" if merged["found"] else stop or "exhausted"
    elif kind == "topk":
        result.solutions = [(_integral(objective), solution) for objective, solution in merged["ranked"]]
        if result.solutions:
            result.objective, result.solution = result.solutions[0]
        result.status = stop or "optimal"
    else:
        initial_bound, initial_solution = initial
        if merged["witness_objective"] is not None:
            result.objective = _integral(merged["witness_objective"])
            result.solution = merged["witness"]
        elif initial_bound is not None:
            result.objective = initial_bound
            result.solution = initial_solution
        result.status = stop or "optimal"
    if kind in BOUNDED and result.status in STOPPED:
        result.stopped_bound = proven_bound(result, parts, initial[0], core.sign)
    return result


def proven_bound(result: Result, parts: list, initial_bound: Any, sign: float) -> Any:
    """The best objective that any solution of a stopped search can have, proven: the best of its
    answer, ``initial_bound`` (what is worse was pruned) and every rank's ``open_bound`` (its open
    work's); None where a rank could not bound its open work."""
    # every rank this run stopped bounds its open work (a resumed checkpoint's part is "merged",
    # its work back in the pools; a rank "done" has none): one that did not makes it unknown
    stopped = [p for p in parts if p["status"] not in ("done", "found", "merged")]
    opened = [p.get("open_bound") for p in stopped]
    if not opened or None in opened:
        return None
    known = [sign * float(v) for v in (result.objective, initial_bound) if v is not None]
    best = max(opened + known)
    return None if best == -math.inf else _integral(sign * best)
