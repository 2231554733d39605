"""``search()``: run one search kind under one coordination, on one rank or many."""

from __future__ import annotations

import time
from typing import Any

from yewpy._engine import monotonic
from yewpy.core import Core
from yewpy.errors import UsageError
from yewpy.operations.session import Session
from yewpy.ranking import Ranked
from yewpy.result import Result
from yewpy.runtime.interfaces import Transport
from yewpy.runtime.local import LocalTransport
from yewpy.runtime.loop import run_search
from yewpy.runtime.ranks import agree, world
from yewpy.skeletons import coordination as make_coordination


def core_of(problem: Any) -> Core:
    """The engine-level core of a problem: itself when compiled, an adapter when Python."""
    if isinstance(problem, Core):
        return problem
    if hasattr(problem, "_core"):
        return problem._core()
    raise TypeError(f"{type(problem).__name__} is not a yewpy search (subclass Enumeration, "
                    "Decision or Optimisation, or one of their compiled counterparts)")


def search(problem: Any, coordination: Any = "seq", *, target: Any = None, initial_bound: Any = None,
           initial_solution: Any = None, prune_level: bool | None = None, max_depth: int | None = None,
           time_limit: float | None = None, node_limit: int | None = None, comm: Any = None,
           checkpoint: str | None = None, checkpoint_every: float | None = None, resume: str | None = None,
           progress: float | None = None, profile: str | None = None,
           **coordination_params: Any) -> Result:
    """Search ``problem`` and return a :class:`Result`.

    ``coordination``: ``"seq"`` (default), ``"depthbounded"`` (``spawn_depth=``), ``"budget"``
    (``backtracks=``, ``spawn_all=``), ``"stacksteal"`` (``chunked=``), ``"ordered"``
    (``spawn_depth=``, ``discrepancy=``, ``window=``), or a coordination object; all but ordered
    take ``steal="half"|"level"|"one"``, what a victim gives a thief over MPI.  ``target``: what a decision
    search looks for.  ``initial_bound`` (with optional ``initial_solution``) seeds an
    optimisation's incumbent.  ``prune_level``: after one child fails its bound, skip its later
    siblings (default: the problem's ``prune_level`` attribute).  ``max_depth``: nodes at depth
    >= max_depth are never generated.  ``time_limit`` (seconds) and ``node_limit`` stop early.
    ``comm``: an MPI communicator; by default the job's own when started under an MPI launcher.

    Operations: ``checkpoint`` (a file written at the end, every ``checkpoint_every`` seconds, and
    on SIGINT/SIGTERM, which then end the search with status ``interrupted``); ``resume`` (a
    checkpoint of this same problem to continue from, with any number of ranks); ``progress``
    (seconds between progress lines on stderr); ``profile`` (a JSON file for ``yewpy report``).
    """
    start = time.perf_counter()
    comm = world() if comm is None else comm
    rank, size = (comm.Get_rank(), comm.Get_size()) if comm is not None else (0, 1)
    try:
        core = core_of(problem)
        coord = make_coordination(coordination, **coordination_params)
        coord.check(core.kind)
        if not coord.resumable and (checkpoint or resume):
            raise UsageError(f"checkpoint and resume do not apply to {coord.name}: its replicable rounds "
                             "start at the root")
        if prune_level is None:
            prune_level = bool(getattr(problem, "prune_level", False))
        options = dict(max_depth=max_depth, prune_level=prune_level, target=target,
                       initial_bound=initial_bound, node_limit=node_limit,
                       deadline=None if time_limit is None else monotonic() + time_limit)
        options.update(coord.engine_options())
        if isinstance(problem, Ranked):         # a TopK: its solutions are ranked in the engine
            options["ranking"] = problem._ranking = problem.ranking()
            if initial_bound is not None:
                problem._ranking.adopt(problem._ranking.inclusive(initial_bound))
                options["initial_bound"] = None
        session = Session(problem, core, options, start, rank=rank, size=size, checkpoint=checkpoint,
                          checkpoint_every=checkpoint_every, resume=resume, progress=progress,
                          profile=profile)
        failure = None
    except Exception as exc:
        if size == 1:
            raise
        failure = exc                            # every rank must hear of it, or they would wait
    if size > 1:
        from yewpy.runtime.mpi import MPITransport

        agree(comm, failure)                    # raises the first failing rank's error everywhere
        transport: Transport = MPITransport(comm, session, steal=coord.steal_mode)
    else:
        transport = LocalTransport(session)
    return run_search(problem, core, coord, options, transport, session, (initial_bound, initial_solution),
                      start)
