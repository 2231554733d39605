"""``search()``: run one search kind under one coordination, on one rank or many."""

from __future__ import annotations

import copy
import math
import pickle
import time
from typing import Any

from yewpy._engine import monotonic
from yewpy.core import OPTIMISATION, Core
from yewpy.errors import UsageError
from yewpy.operations.session import Session
from yewpy.operations.treesize import (
    EMPTY,
    Sampler,
    TreeSize,
    finite_or_none,
    merge_rows,
    merge_subtrees,
    sample_subtrees,
)
from yewpy.ranking import Ranked
from yewpy.result import FINISHED, Result
from yewpy.runtime.interfaces import Transport
from yewpy.runtime.local import LocalTransport
from yewpy.runtime.loop import run_search
from yewpy.runtime.parts import KIND_NAMES
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
           progress: float | None = None, profile: str | None = None, progress_json: bool = False,
           estimate: float | None = None, walltime: float | None = None,
           **coordination_params: Any) -> Result:
    """Search ``problem`` and return a :class:`Result`.

    ``coordination``: ``"seq"`` (default), ``"depthbounded"`` (``spawn_depth=``), ``"budget"``
    (``backtracks=``, ``spawn_all=``), ``"stacksteal"`` (``chunked=``), ``"ordered"``
    (``spawn_depth=``, ``discrepancy=``, ``window=``), or a coordination object; all but ordered
    take ``steal="half"|"level"|"one"``, what a victim gives a thief over MPI.  ``target``: what a decision
    search looks for.  ``initial_bound`` (with optional ``initial_solution``) seeds an
    optimisation's incumbent (a top-K search's bar; other kinds refuse it): without a solution, a
    result that nothing beat has ``objective`` ``initial_bound`` and ``solution`` None.
    ``prune_level``: after one child fails its bound, skip its later siblings (default: the
    problem's ``prune_level`` attribute).  ``max_depth``: nodes at depth >= max_depth are never
    generated.  ``time_limit`` (seconds) and ``node_limit`` stop early.
    ``comm``: an MPI communicator; by default the job's own when started under an MPI launcher.

    Operations: ``checkpoint`` (a file written at the end, every ``checkpoint_every`` seconds, and
    on SIGINT/SIGTERM, which then end the search with status ``interrupted``); ``resume`` (a
    checkpoint of this same problem to continue from, with any number of ranks); ``progress``
    (seconds between progress lines on stderr, with estimates of the tree and the time left;
    ``progress_json``: as JSON objects); ``profile`` (a JSON file for ``yewpy report``).

    ``estimate`` (seconds): do not search the whole tree; search for half that time to measure the
    node rate, probe the tree for the other half, and return that partial result with
    ``metrics["estimate"]`` (see :func:`estimate`; ``walltime``: the seconds the run may take).
    """
    try:
        if estimate is not None:        # its probes after the short search still read the ranking's bar
            return _estimate(problem, coordination, estimate, walltime, comm,
                             dict(target=target, initial_bound=initial_bound,
                                  initial_solution=initial_solution, prune_level=prune_level,
                                  max_depth=max_depth, **coordination_params))
        return _search(problem, coordination, target=target, initial_bound=initial_bound,
                       initial_solution=initial_solution, prune_level=prune_level, max_depth=max_depth,
                       time_limit=time_limit, node_limit=node_limit, comm=comm, checkpoint=checkpoint,
                       checkpoint_every=checkpoint_every, resume=resume, progress=progress, profile=profile,
                       progress_json=progress_json, **coordination_params)
    finally:
        if isinstance(problem, Ranked) and problem._ranking is not None:
            problem._ranking.release()  # its key and tiebreak would keep the problem in a cycle


def _search(problem: Any, coordination: Any, *, target: Any, initial_bound: Any, initial_solution: Any,
            prune_level: bool | None, max_depth: int | None, time_limit: float | None,
            node_limit: int | None, comm: Any, checkpoint: str | None = None,
            checkpoint_every: float | None = None, resume: str | None = None, progress: float | None = None,
            profile: str | None = None, progress_json: bool = False, open_work_at_end: bool = False,
            **coordination_params: Any) -> Result:
    """``search`` without ``estimate``; ``open_work_at_end``: a search stopped early estimates its
    open work from what it searched (``metrics["open_work"]``)."""
    start = time.perf_counter()
    comm = world() if comm is None else comm
    rank, size = (comm.Get_rank(), comm.Get_size()) if comm is not None else (0, 1)
    try:
        core = core_of(problem)
        coord = make_coordination(coordination, **coordination_params)
        coord.check(core.kind)
        if initial_bound is not None and core.kind != OPTIMISATION and not isinstance(problem, Ranked):
            raise UsageError("an initial bound (--better-than) applies to optimisation searches, not to "
                             f"{KIND_NAMES[core.kind]}")
        if not coord.resumable and (checkpoint or resume):
            raise UsageError(f"checkpoint and resume do not apply to {coord.name}: its replicable rounds "
                             "start at the root")
        options = dict(max_depth=max_depth, prune_level=_prune_level(problem, prune_level), target=target,
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
                          profile=profile, progress_json=progress_json,
                          sampler=(lambda: _sampler(problem, options, rank)) if progress or open_work_at_end
                          else None, open_work_at_end=open_work_at_end)
        failure = None
    except Exception as exc:
        if size == 1:
            raise
        failure = exc                            # every rank must hear of it, or they would wait
    if size > 1:
        from yewpy.runtime.mpi import MPITransport

        agree(comm, failure)                    # raises the first failing rank's error everywhere
        transport: Transport = MPITransport(comm, session, steal=coord.steal_mode,
                                              low_water=coord.low_water)
    else:
        transport = LocalTransport(session)
    return run_search(problem, core, coord, options, transport, session, (initial_bound, initial_solution),
                      start)


def _prune_level(problem: Any, given: bool | None) -> bool:
    """``prune_level`` as given, else the problem's own ``prune_level`` attribute."""
    return bool(getattr(problem, "prune_level", False)) if given is None else given


def _sampler(problem: Any, options: dict, rank: int) -> Sampler | None:
    """Side probes for the progress estimate, on a copy of the problem's core (the engine's own
    frames must not move), made when the first progress report is due; None where the problem
    cannot be copied."""
    try:
        if isinstance(problem, Core):
            core = pickle.loads(pickle.dumps(problem))
        else:
            core = core_of(copy.deepcopy(problem))
    except Exception:
        return None
    return Sampler(core, options, seed=rank + 1)


#: the parallel efficiency ``estimate`` assumes when it counts the ranks a wall time needs
EFFICIENCY = 0.9


def _estimate(problem: Any, coordination: Any, seconds: float, walltime: float | None, comm: Any,
              params: dict) -> Result:
    """``search(estimate=seconds)``: a short search for the node rate and the recursive estimate of
    what it left open (with the tops of its unexplored children counted), then Knuth's probes and
    sampled subtrees (``sample_subtrees``) for an eighth of the time each. The sampled subtrees stand
    where trusted (``Subtrees.trusted``); elsewhere the recursive estimate, which Knuth's probes may
    raise (``TreeSize.combined``)."""
    if not (math.isfinite(seconds) and seconds > 0):
        raise UsageError(f"estimate must be a positive number of seconds, got {seconds}")
    if walltime is not None and not (math.isfinite(walltime) and walltime > 0):
        raise UsageError(f"walltime must be a positive number of seconds, got {walltime}")
    result = _search(problem, coordination, time_limit=seconds / 2, node_limit=None, comm=comm,
                     open_work_at_end=True, **params)
    comm = world() if comm is None else comm
    rank, size = (comm.Get_rank(), comm.Get_size()) if comm is not None else (0, 1)
    searching = result.seconds - result.metrics.pop("open_work_seconds", 0.0)   # not the estimating
    rate = result.nodes / max(searching, 1e-9) / size         # per rank
    estimators: dict = {}
    if result.status in FINISHED:               # the whole tree fitted in the time: exact
        tree = TreeSize(0, float(result.nodes), 0.0)
        exact = True
    else:
        core = core_of(problem)
        options = dict(max_depth=params.get("max_depth"), target=params.get("target"),
                       prune_level=_prune_level(problem, params.get("prune_level")))
        sampler = Sampler(core, options, seed=rank + 1)
        incumbent = result.objective if core.kind == OPTIMISATION else None
        sampler.run(seconds / 8, incumbent)
        row = sampler.row()
        subtrees = sample_subtrees(sampler.prober, incumbent, seconds / 8, rank=rank, ranks=size)
        gathered = comm.allgather((row, subtrees)) if comm is not None and size > 1 else [(row, subtrees)]
        merged = EMPTY
        for other, _ in gathered:
            merged = merge_rows(merged, other, core.sign)
        probed = TreeSize.of(merged)
        samples = merge_subtrees([part for _, part in gathered])
        sampled = samples.tree(incumbent) if samples is not None else None
        open_work = result.metrics.pop("open_work", None)
        recursive = TreeSize.recursive(result.nodes, open_work) if open_work is not None else None
        if samples is not None and sampled is not None and samples.trusted(result.nodes):
            tree = sampled          # a uniform sample of the top's subtrees, wherever they lie
        elif recursive is not None:
            # as in progress lines: the short search's subtrees all closed at the start of the tree,
            # but the counted tops size what it left; Knuth's probes may raise that, never lower it
            tree = recursive.combined(probed, result.nodes)
        else:
            tree = probed or TreeSize(0, float(result.nodes), 0.0)
        estimators = {f"estimate_{name}": None if alone is None else alone.to_dict(result.nodes)
                      for name, alone in (("recursive", recursive), ("knuth", probed), ("sampled", sampled))}
        exact = False
    low, high = tree.range(result.nodes)
    one_rank = [n / rate for n in (tree.at_least(result.nodes), low, high)] if rate > 0 else None
    report = {**tree.to_dict(result.nodes), "exact": exact, "sampled_seconds": seconds,
              "rate_per_rank": rate, "ranks_measured": size,
              "seconds_one_rank": one_rank[0] if one_rank else None,
              "seconds_one_rank_range": [finite_or_none(t) for t in one_rank[1:]] if one_rank else None,
              "efficiency_assumed": EFFICIENCY, "initial_bound": params.get("initial_bound"), **estimators}
    if walltime is not None and one_rank is not None:
        report["walltime"] = walltime
        report["ranks_for_walltime"], *low_high = [max(1, math.ceil(t / (walltime * EFFICIENCY)))
                                                   if math.isfinite(t) else None for t in one_rank]
        report["ranks_for_walltime_range"] = low_high
    result.metrics["estimate"] = report
    return result


def estimate(problem: Any, seconds: float = 10.0, coordination: Any = "seq", *,
             walltime: float | None = None, **params: Any) -> dict:
    """Estimate ``problem``'s tree before searching it, in about ``seconds``: the node count (the
    tree's top counted and a random sample of the subtrees below it searched whole, or where those
    are too few or miss a heavy tail, the recursive estimate of what a short search left open,
    which Knuth's path sampling may raise; a range of two standard errors, whose ``high`` is None
    where a few subtrees hold most of the nodes counted: ``heavy_tailed``), the time on one rank at
    the node rate the short search measured, and, given ``walltime`` (seconds), the ranks that
    finish within it at ``EFFICIENCY``. For an optimisation, the tree under the incumbent the short
    search found."""
    return search(problem, coordination, estimate=seconds, walltime=walltime, **params).metrics["estimate"]
