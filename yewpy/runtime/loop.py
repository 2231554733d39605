"""The one search loop: a worker runs its engine over its tasks, on any transport.

``drive`` is what every rank of every search runs (Ordered calls it once per task); ``run_search``
is the whole sequence around it, the same for one process and for many ranks: read the resumed
work, drive the coordination, let the transport end the search everywhere, merge every worker's
part into one Result.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from yewpy._engine import BUDGET, DONE, FOUND, NODE_LIMIT, PAUSED, TIME_LIMIT, Engine
from yewpy.core import Core
from yewpy.result import Result
from yewpy.runtime.interfaces import Coordination, Pool, Slices, Task, Transport
from yewpy.runtime.metrics import rank_metrics
from yewpy.runtime.parts import build_result

if TYPE_CHECKING:
    from yewpy.operations.profile import Profile
    from yewpy.operations.session import Session

STOPS = {FOUND: "found", NODE_LIMIT: "node_limit", TIME_LIMIT: "time_limit"}


def drive(coord: Coordination, engine: Engine, transport: Slices, pool: Pool, tasks: list[Task] | None = None,
          profile: Profile | None = None) -> str:
    """Search from the root (``tasks=None``) or from ``tasks`` until this worker's share is explored.

    Between slices of ``transport.slice_nodes`` nodes (or ``slice_seconds``) the transport's
    ``poll(engine, pool)`` serves thieves and reads news (False: stop); with nothing left,
    ``idle(engine, pool)`` returns True once stolen tasks are in the pool, False when the search
    is over.  ``coord.after_budget(engine)``: the work to offload when the backtrack budget runs
    out.  Returns ``done``, ``found``, ``node_limit``, ``time_limit`` or ``stopped``.
    """
    if tasks is None:
        engine.start_root()
        if profile is not None:
            profile.begin(engine)
    else:
        pool.extend(tasks)
    left = transport.slice_nodes              # nodes of this slice still to search (-1: no limit)
    while True:
        if not engine.active:
            if not pool and not transport.idle(engine, pool):
                return "done"
            if pool:
                engine.start(pool.pop_local())
                if profile is not None:
                    profile.begin(engine)
            continue
        before = engine.nodes
        status = engine.run(left, transport.slice_seconds)
        if profile is not None and not engine.active:
            profile.end(engine)
        if engine.spawned:
            pool.extend(engine.spawned)
            engine.spawned.clear()
        if status == BUDGET:
            pool.extend(coord.after_budget(engine))
        elif status != PAUSED and status != DONE:
            return STOPS[status]
        if status == DONE and left > 0 and pool and not engine.found:
            left -= engine.nodes - before       # small tasks share one slice: poll once per slice
            if left > 0:
                continue
        going = engine.found or transport.poll(engine, pool)
        left = transport.slice_nodes
        if engine.found:                       # found by this slice, or by a split inside poll
            return "found"
        if not going:
            return "stopped"


def run_search(problem: Any, core: Core, coord: Coordination, options: dict, transport: Transport,
               session: Session, initial: tuple, start: float) -> Result:
    """Search on every worker of ``transport``; each returns the same merged Result.

    ``result.seconds`` counts from the moment every rank has joined (a job's processes start at
    different times; that wait is ``metrics["startup_seconds"]``)."""
    transport.load(session)                     # every rank has joined once this returns; a bad
    begun = time.perf_counter()                 # checkpoint raises the same InputError on every rank
    session.begin(begun)
    with transport.guard():
        engine = Engine(core, tracking=session.tracking, **options)
        session.adopt(engine)
        pool = coord.make_pool()
        with session.signals():                 # until the final checkpoint is written: a second
            status = coord.run(engine, transport, pool, session.first_tasks(), session.profile)
            status = transport.conclude(engine, pool, status)   # Ctrl-C must not cut it short
            if status == "stopped" and session.interrupted is not None:
                status = "interrupted"
            part = session.final_part(engine, pool, status, coord.holds_open_work)
            seconds = time.perf_counter() - begun
            part["per_rank"] = rank_metrics(transport.rank, part, seconds, transport.stats)
            parts = transport.gather(part)
            result = build_result(problem, core, [*parts, *session.prior_parts()],
                                  time.perf_counter() - begun, initial, ranks=transport.size)
            result.metrics["startup_seconds"] = begun - start    # waiting for the last rank to join
            result.metrics["per_rank"] = [p["per_rank"] for p in parts]
            if transport.size > 1:
                result.metrics["protocol"] = transport.protocol(parts)
            session.finish(parts, result, coord)
        transport.close()
    return result
