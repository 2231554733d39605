"""``search()``: run one search kind under one coordination, on one rank or many."""

from __future__ import annotations

import time
from typing import Any

from yewpy._engine import DECISION, ENUMERATION, OPTIMISATION, Core, Engine, monotonic
from yewpy.metrics import rank_metrics
from yewpy.result import Result
from yewpy.skeletons import coordination as make_coordination

KIND_NAMES = {ENUMERATION: "enumeration", DECISION: "decision", OPTIMISATION: "optimisation"}


def core_of(problem: Any) -> Core:
    """The engine-level core of a problem: itself when compiled, an adapter when Python."""
    if isinstance(problem, Core):
        return problem
    if hasattr(problem, "_core"):
        return problem._core()
    raise TypeError(f"{type(problem).__name__} is not a yewpy search (subclass Enumeration, "
                    "Decision or Optimisation, or one of their compiled counterparts)")


def counters_of(core: Core) -> dict:
    """A core's own counters (``core.counters()``, e.g. maxclique's expansions), if it keeps any."""
    return dict(core.counters()) if hasattr(core, "counters") else {}


def _integral(x: Any) -> Any:
    return int(x) if isinstance(x, float) and x.is_integer() else x


def search(problem: Any, coordination: Any = "seq", *, target: Any = None, initial_bound: Any = None,
           initial_solution: Any = None, prune_level: bool | None = None, max_depth: int | None = None,
           time_limit: float | None = None, node_limit: int | None = None, comm: Any = None,
           **coordination_params: Any) -> Result:
    """Search ``problem`` and return a :class:`Result`.

    ``coordination``: ``"seq"`` (default), ``"depthbounded"`` (``spawn_depth=``), ``"budget"``
    (``backtracks=``, ``spawn_all=``), or a coordination object.  ``target``: what a decision
    search looks for.  ``initial_bound`` (with optional ``initial_solution``) seeds an
    optimisation's incumbent.  ``prune_level``: after one child fails its bound, skip its later
    siblings (default: the problem's ``prune_level`` attribute).  ``max_depth``: nodes at depth
    >= max_depth are never generated.  ``time_limit`` (seconds) and ``node_limit`` stop early.
    ``comm``: an MPI communicator; by default the job's own when started under an MPI launcher.
    """
    core = core_of(problem)
    coord = make_coordination(coordination, **coordination_params)
    coord.check(core.kind)
    if prune_level is None:
        prune_level = bool(getattr(problem, "prune_level", False))
    start = time.perf_counter()
    options = dict(max_depth=max_depth, prune_level=prune_level, target=target,
                   initial_bound=initial_bound, node_limit=node_limit,
                   deadline=None if time_limit is None else monotonic() + time_limit)
    options.update(coord.engine_options())
    from yewpy.ranks import world

    comm = world() if comm is None else comm
    if comm is not None and comm.Get_size() > 1:
        from yewpy.distributed import run_distributed

        return run_distributed(problem, core, coord, options, comm, start,
                               initial=(initial_bound, initial_solution))
    engine = Engine(core, **options)
    part = summary(engine, coord.drive(engine))
    part["counters"] = counters_of(core)
    seconds = time.perf_counter() - start
    result = build_result(problem, core, [part], seconds, (initial_bound, initial_solution), ranks=1)
    result.metrics["per_rank"] = [rank_metrics(0, part, seconds)]
    return result


def summary(engine: Engine, status: str) -> dict:
    """What one worker contributes to the result: picklable, merged by ``build_result``."""
    return {"status": status, "nodes": engine.nodes, "value": engine.take_value()
            if engine.core.kind == ENUMERATION else None,
            "found": engine.found, "witness": engine.witness,
            "witness_objective": engine.witness_objective, "metrics": engine.metrics()}


def _sum_lists(lists: list) -> list:
    out: list = []
    for values in lists:
        out.extend([0] * (len(values) - len(out)))
        for d, v in enumerate(values):
            out[d] += v
    return out


def build_result(problem: Any, core: Core, parts: list, seconds: float, initial: tuple,
                 ranks: int) -> Result:
    """Merge the workers' summaries into one Result."""
    kind = KIND_NAMES[core.kind]
    statuses = {p["status"] for p in parts}
    metrics = {key: _sum_lists([p["metrics"][key] for p in parts])
               for key in ("nodes", "backtracks", "prunes", "spawns")}
    metrics["ranks"] = ranks
    metrics["counters"] = {}
    for p in parts:
        for key, count in p.get("counters", {}).items():
            metrics["counters"][key] = metrics["counters"].get(key, 0) + count
    nodes = sum(p["nodes"] for p in parts)
    stop = next((s for s in ("time_limit", "node_limit") if s in statuses), None)
    result = Result(kind=kind, status="", nodes=nodes, seconds=seconds, metrics=metrics)
    if kind == "enumeration":
        combine = problem.combine
        value = problem.zero
        for p in parts:
            value = combine(value, p["value"])
        result.value = value
        result.status = stop or "exhausted"
    elif kind == "decision":
        finders = [p for p in parts if p["found"]]
        result.found = bool(finders)
        if finders:
            result.solution = finders[0]["witness"]
            result.objective = _integral(finders[0]["witness_objective"])
        result.status = "found" if finders else stop or "exhausted"
    else:
        finders = [p for p in parts if p["witness_objective"] is not None]
        best = None
        for p in finders:
            if best is None or core.sign * p["witness_objective"] > core.sign * best["witness_objective"]:
                best = p
        initial_bound, initial_solution = initial
        if best is not None:
            result.objective = _integral(best["witness_objective"])
            result.solution = best["witness"]
        elif initial_bound is not None:
            result.objective = initial_bound
            result.solution = initial_solution
        result.status = stop or "optimal"
    return result
