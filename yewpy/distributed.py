"""Spread one search over the ranks of an MPI job (static frontier split, shared incumbents).

Every rank expands the same top of the tree to a frontier of at least ``TASKS_PER_RANK`` tasks
per rank, takes every size-th task, and searches them with the chosen coordination.  Improved
incumbents are sent to every rank, a decision witness stops every rank, and the summaries
are gathered on every rank at the end.  Work stealing between ranks replaces the static
split in a later runtime; the engine contract (split / start) is already what it needs.
"""

from __future__ import annotations

import pickle
import sys
import time
import traceback
from typing import Any

from yewpy._engine import ENUMERATION, Core, Engine
from yewpy.search import build_result, counters_of, summary

TASKS_PER_RANK = 8
SLICE_NODES = 20_000          # nodes between two polls of the network
TAG_INCUMBENT, TAG_STOP = 11, 12


def _use_cloudpickle(MPI: Any) -> None:
    """Let nodes and witnesses of user classes defined in __main__ or closures travel."""
    import cloudpickle

    MPI.pickle.__init__(cloudpickle.dumps, pickle.loads)


def frontier(core: Core, options: dict, ranks: int) -> tuple[Engine, list, dict]:
    """Expand the top of the tree breadth-first until there are enough tasks for ``ranks``.

    Also returns the core's counters from before the expansion that was kept.
    """
    top_options = {k: v for k, v in options.items() if k not in ("spawn_depth", "backtrack_budget")}
    depth = 1
    while True:
        before = counters_of(core)
        engine = Engine(core, spawn_depth=depth, **top_options)
        engine.start_root()
        engine.run(-1)
        tasks = []
        pending = list(engine.spawned)
        engine.spawned.clear()
        while pending:
            task = pending.pop(0)
            if task[0] < depth:
                engine.start(task)
                engine.run(-1)
                pending[:0] = engine.spawned
                engine.spawned.clear()
            else:
                tasks.append(task)
        if engine.found or len(tasks) >= TASKS_PER_RANK * ranks or not tasks or depth >= 8:
            return engine, tasks, before
        engine.take_value()                    # this attempt is discarded: start again deeper
        depth += 1


class _Exchange:
    """Non-blocking sends of incumbents and stop signals, and their receipt between slices."""

    def __init__(self, comm: Any) -> None:
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.requests: list = []
        self.seen_version = 0
        self.stopped = False

    def broadcast(self, tag: int, payload: Any) -> None:
        for other in range(self.size):
            if other != self.rank:
                self.requests.append(self.comm.issend(payload, dest=other, tag=tag))

    def receive(self, engine: Engine | None) -> None:
        from mpi4py import MPI

        status = MPI.Status()
        while self.comm.iprobe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status):
            payload = self.comm.recv(source=status.Get_source(), tag=status.Get_tag())
            if status.Get_tag() == TAG_INCUMBENT and engine is not None:
                engine.offer(payload)
            elif status.Get_tag() == TAG_STOP:
                self.stopped = True

    def poll(self, engine: Engine, pool: Any) -> bool:
        if engine.incumbent_version != self.seen_version:
            self.seen_version = engine.incumbent_version
            self.broadcast(TAG_INCUMBENT, engine.incumbent)
        if engine.found and not self.stopped:
            self.stopped = True
            self.broadcast(TAG_STOP, None)
        self.receive(engine)
        self.requests = [r for r in self.requests if not r.Test()]
        return not self.stopped

    def finish(self, engine: Engine) -> None:
        """Deliver every pending message, then wait for all ranks (non-blocking consensus)."""
        from mpi4py import MPI

        while self.requests:
            self.receive(engine)
            self.requests = [r for r in self.requests if not r.Test()]
        barrier = self.comm.Ibarrier()
        while not barrier.Test():
            self.receive(engine)
            time.sleep(0.0005)
        del MPI


def run_distributed(problem: Any, core: Core, coord: Any, options: dict, comm: Any, start: float,
                    initial: tuple) -> Any:
    """Search on every rank of ``comm``; each rank returns the same merged Result."""
    from mpi4py import MPI

    _use_cloudpickle(MPI)
    rank, size = comm.Get_rank(), comm.Get_size()
    try:
        top, tasks, before = frontier(core, options, size)
        top_part = summary(top, "found" if top.found else "done")
        top_counters = counters_of(core)
        if rank != 0:
            top_part = None                    # every rank expanded the same top: count it once
        main_options = dict(options)
        if top.incumbent is not None and core.kind != ENUMERATION:
            main_options["initial_bound"] = top.incumbent
        engine = Engine(core, **main_options)
        exchange = _Exchange(comm)
        status = "found" if top.found else coord.drive(engine, tasks[rank::size], poll=exchange.poll,
                                                       slice_nodes=SLICE_NODES)
        if status == "stopped":
            status = "done"
        if engine.found:
            exchange.poll(engine, None)
        exchange.finish(engine)
        part = summary(engine, status)
        skip = top_counters if rank != 0 else before     # the frontier is counted on rank 0 only
        part["counters"] = {k: v - skip.get(k, 0) for k, v in counters_of(core).items()}
    except BaseException:
        sys.stderr.write(f"yewpy: rank {rank} of {size} failed:\n{traceback.format_exc()}")
        sys.stderr.flush()
        comm.Abort(1)
        raise
    parts = [p for pair in comm.allgather((top_part, part)) for p in pair if p is not None]
    return build_result(problem, core, parts, time.perf_counter() - start, initial, ranks=size)
