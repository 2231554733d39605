"""Work stealing over MPI: every rank searches, idle ranks steal, termination is exact.

Rank 0 starts from the root; every other rank starts idle and steals.  A victim answers
from its pool (the shallowest task, or that whole depth when chunked) or else splits its
engine's shallowest open frame (one child, or the whole level when chunked).  Improved
incumbents go to every rank; a decision witness, a limit or detected termination ends the
search everywhere with one STOP message.  Termination is detected with Safra's token
algorithm, counting the messages that carry work.  All sends are synchronous-mode and
non-blocking (``issend``), and the final non-blocking barrier runs only once a rank's own
sends are matched, so no message is left in flight when the job ends.

A periodic checkpoint is a consistent cut: rank 0 sends CHECKPOINT; from then until RESUME no
rank gives or asks for work, and each rank snapshots its work once no steal of its own is
unanswered (so no work is in flight to or from it) and sends it to rank 0, which writes the file.
Progress reports travel to rank 0 every few seconds, which prints the line.
"""

from __future__ import annotations

import pickle
import random
import sys
import time
import traceback
from typing import Any

from yewpy._engine import Core, Engine
from yewpy.errors import InputError
from yewpy.metrics import rank_metrics
from yewpy.parts import build_result
from yewpy.session import Session
from yewpy.skeletons import Coordination, Ordered

SLICE_SECONDS = 0.001               # search between two looks at the network
IDLE_SLEEP = 200e-6                 # an idle rank's nap between looks (yields an oversubscribed core)
BACKOFF_START, BACKOFF_CAP = 100e-6, 0.05   # after a failed steal, wait, doubling up to the cap
STEAL, WORK, NOWORK, INCUMBENT, TOKEN, STOP, CHECKPOINT, PART, RESUME, PROGRESS = range(1, 11)


def _use_cloudpickle(MPI: Any) -> None:
    """Let nodes and witnesses of user classes defined in __main__ or in closures travel."""
    import cloudpickle

    MPI.pickle.__init__(cloudpickle.dumps, pickle.loads)


class Runtime:
    """One rank's side of the search: serves thieves, steals when idle, detects termination."""

    def __init__(self, comm: Any, chunked: bool, session: Session) -> None:
        from mpi4py import MPI

        self.MPI = MPI
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.chunked = chunked
        self.requests: list = []
        self.seen_version = 0
        self.stop_reason: str | None = None
        self.rng = random.Random(self.rank * 7919 + 1)
        self.last_victim: int | None = None
        self.waiting = False                # a steal request of ours is unanswered
        self.backoff = BACKOFF_START
        self.next_try = 0.0
        # Safra's algorithm: work messages sent minus received, colour, and the token if held.
        self.count = 0
        self.black = False
        self.token: tuple[int, bool] | None = None
        self.token_out = False
        self.session = session
        self.epoch: int | None = None       # a checkpoint is being taken: no work moves
        self.snapped = False                # this rank's part of it is taken
        self.parts: dict[int, dict] = {}    # rank 0: the parts of the open checkpoint
        self.epochs = 0
        self.reports: dict[int, tuple] = {}  # rank 0: each rank's latest progress report
        self.next_report = session.start + (session.progress_every or float("inf"))
        self.stats = {"steals_sent": 0, "steals_won": 0, "tasks_received": 0, "tasks_given": 0,
                      "steals_served": 0, "messages_sent": 0, "idle_seconds": 0.0}

    # -- sending -------------------------------------------------------------------------

    def send(self, dest: int, tag: int, payload: Any = None) -> None:
        self.requests.append(self.comm.issend(payload, dest=dest, tag=tag))
        self.stats["messages_sent"] += 1

    def broadcast(self, tag: int, payload: Any = None) -> None:
        for other in range(self.size):
            if other != self.rank:
                self.send(other, tag, payload)

    def stop_everyone(self, reason: str) -> None:
        if self.stop_reason is None:
            self.stop_reason = reason
            self.broadcast(STOP, reason)

    # -- receiving -----------------------------------------------------------------------

    def handle(self, engine: Engine, pool: Any, busy: bool, source: int, tag: int, payload: Any) -> None:
        """Act on one message.  Only a busy rank gives work: an idle one would hand straight
        back a task it has just stolen, and two idle ranks could pass it to and fro forever."""
        if tag == STEAL:
            if self.stop_reason is not None:
                return                          # the thief hears STOP too; a reply could outlive us
            tasks = self.give(engine, pool) if busy and self.epoch is None else []
            if tasks:
                self.count += 1
                self.stats["tasks_given"] += len(tasks)
                self.stats["steals_served"] += 1
                self.send(source, WORK, tasks)
            else:
                self.send(source, NOWORK)
        elif tag == WORK:
            self.count -= 1
            self.black = True
            self.waiting = False
            if pool is not None:                # kept after a stop too: a final checkpoint saves it
                pool.extend(payload)
            if self.stop_reason is None:
                self.stats["tasks_received"] += len(payload)
                self.stats["steals_won"] += 1
                self.last_victim = source
                self.backoff = BACKOFF_START
        elif tag == NOWORK:
            self.waiting = False
            self.last_victim = None
            self.next_try = time.perf_counter() + self.backoff
            self.backoff = min(2 * self.backoff, BACKOFF_CAP)
        elif tag == INCUMBENT:
            engine.offer(payload)
        elif tag == TOKEN:
            self.token = payload
        elif tag == STOP:
            if self.stop_reason is None:
                self.stop_reason = payload
        elif tag == CHECKPOINT:
            self.epoch, self.snapped = payload, False
        elif tag == PART:
            epoch, part = payload
            if epoch == self.epoch:
                self.parts[source] = part
        elif tag == RESUME:
            self.epoch, self.snapped = None, False
        elif tag == PROGRESS:
            self.reports[source] = payload

    def give(self, engine: Engine, pool: Any) -> list:
        """Work for a thief: from the pool first, else the shallowest open frame of the engine."""
        if pool is not None and len(pool):
            return pool.steal(self.chunked)
        if engine.active:
            return engine.split(self.chunked)
        return []

    def receive_all(self, engine: Engine, pool: Any, busy: bool) -> None:
        status = self.MPI.Status()
        while self.comm.iprobe(source=self.MPI.ANY_SOURCE, tag=self.MPI.ANY_TAG, status=status):
            source, tag = status.Get_source(), status.Get_tag()
            self.handle(engine, pool, busy, source, tag, self.comm.recv(source=source, tag=tag))
            if not busy and pool is not None and len(pool):
                break                           # work arrived: go and do it
        self.requests = [r for r in self.requests if not r.Test()]

    # -- the two hooks the coordination's drive loop calls -------------------------------

    def share_incumbent(self, engine: Engine) -> None:
        if engine.incumbent_version != self.seen_version:
            self.seen_version = engine.incumbent_version
            self.broadcast(INCUMBENT, engine.incumbent)

    def poll(self, engine: Engine, pool: Any) -> bool:
        """Between slices: publish a better incumbent, serve thieves, read news; False: stop."""
        self.share_incumbent(engine)
        self.receive_all(engine, pool, busy=True)
        if engine.found:
            self.stop_everyone("found")
        self.tick(engine, pool, busy=True)
        return self.stop_reason is None

    def idle(self, engine: Engine, pool: Any) -> bool:
        """Steal until work arrives (True) or the search is over everywhere (False)."""
        started = time.perf_counter()
        profile = self.session.profile
        if profile is not None:
            profile.idle_begin()
        try:
            return self._idle(engine, pool)
        finally:
            self.stats["idle_seconds"] += time.perf_counter() - started
            if profile is not None:
                profile.idle_end()

    def _idle(self, engine: Engine, pool: Any) -> bool:
        self.share_incumbent(engine)
        while True:
            self.receive_all(engine, pool, busy=False)
            if self.stop_reason is not None:
                return False
            if len(pool):
                return True
            self.tick(engine, pool, busy=False)
            self.pass_token()
            if self.stop_reason is not None:
                return False
            if not self.waiting and self.epoch is None and time.perf_counter() >= self.next_try:
                victim = self.last_victim        # the last rank that gave work, else a random one
                if victim is None:
                    victim = self.rng.randrange(self.size - 1)
                    victim += victim >= self.rank
                self.waiting = True
                self.stats["steals_sent"] += 1
                self.send(victim, STEAL)
            time.sleep(IDLE_SLEEP)

    def tick(self, engine: Engine, pool: Any, busy: bool) -> None:
        """The session's share of a look at the network: signals, progress, checkpoints."""
        session = self.session
        if session.interrupted is not None:
            self.stop_everyone("interrupted")
        if self.stop_reason is not None:
            return
        now = time.perf_counter()
        if now >= self.next_report:
            self.next_report = now + session.progress_every
            report = (engine.nodes, self.stats["steals_won"], not busy)
            if self.rank == 0:
                self.reports[0] = report
                reports = self.reports.values()
                session.print_progress(now, sum(r[0] for r in reports), engine.incumbent,
                                       sum(r[1] for r in reports), sum(r[2] for r in reports))
            else:
                self.send(0, PROGRESS, report)
        if self.rank == 0 and self.epoch is None and session.checkpoint_due(now):
            self.epochs += 1
            self.epoch, self.snapped, self.parts = self.epochs, False, {}
            self.broadcast(CHECKPOINT, self.epoch)
        if self.epoch is not None and not self.snapped and not self.waiting:
            part = session.snapshot(engine, pool)
            self.snapped = True
            if self.rank == 0:
                self.parts[0] = part
            else:
                self.send(0, PART, (self.epoch, part))
        if self.rank == 0 and self.epoch is not None and len(self.parts) == self.size:
            session.write_checkpoint([self.parts[r] for r in range(self.size)], "running")
            self.broadcast(RESUME, self.epoch)
            self.epoch, self.snapped, self.parts = None, False, {}

    def pass_token(self) -> None:
        """Safra's token, handled only while this rank is passive (it is: it is idle)."""
        if self.rank == 0:
            if self.token is not None:
                total, black = self.token
                self.token = None
                self.token_out = False
                if not black and not self.black and total + self.count == 0:
                    self.stop_everyone("done")
                    return
            if not self.token_out:
                self.black = False
                self.token_out = True
                self.send(1, TOKEN, (0, False))
        elif self.token is not None:
            total, black = self.token
            self.token = None
            self.send((self.rank + 1) % self.size, TOKEN, (total + self.count, black or self.black))
            self.black = False

    def finish(self, engine: Engine, pool: Any) -> None:
        """Deliver every message this rank sent, then wait until every rank has done the same."""
        while self.requests:
            self.receive_all(engine, pool, busy=False)
        barrier = self.comm.Ibarrier()
        while not barrier.Test():
            self.receive_all(engine, pool, busy=False)
            time.sleep(50e-6)


def run_ordered(coord: Any, engine: Engine, comm: Any, profile: Any = None) -> str:
    """Ordered on several ranks: rank 0's frontier, then rounds of one task per rank, with the
    incumbent agreed between rounds, so nothing depends on timing."""
    rank, size = comm.Get_rank(), comm.Get_size()
    tasks, stop = coord.frontier(engine) if rank == 0 else (None, None)
    tasks, stop, incumbent = comm.bcast((tasks, stop, engine.incumbent), root=0)
    if stop is not None:
        return stop if rank == 0 else "stopped"
    if incumbent is not None:
        engine.offer(incumbent)
    sign = engine.core.sign
    for first in range(0, len(tasks), size):
        mine = first + rank
        status = (Coordination.drive(coord, engine, [tasks[mine]], profile=profile) if mine < len(tasks)
                  else "done")
        shared = comm.allgather((engine.incumbent, status))
        known = [value for value, _ in shared if value is not None]
        if known:
            engine.offer(max(known, key=lambda value: sign * value))
        if any(s != "done" for _, s in shared):
            return status
    return "done"


def _load_everywhere(session: Session, comm: Any) -> None:
    """Every rank reads the checkpoint to resume; if any cannot, every rank raises the same error."""
    try:
        session.load()
        mine = None
    except InputError as exc:
        mine = exc
    errors = comm.allgather(None if mine is None else (mine.path, mine.line, mine.message))
    first = next((e for e in errors if e is not None), None)
    if first is not None:
        raise mine if mine is not None else InputError(*first)


def run_distributed(problem: Any, core: Core, coord: Any, options: dict, comm: Any, start: float,
                    initial: tuple, session: Session) -> Any:
    """Search on every rank of ``comm``; every rank returns the same merged Result."""
    from mpi4py import MPI

    _use_cloudpickle(MPI)
    rank, size = comm.Get_rank(), comm.Get_size()
    _load_everywhere(session, comm)
    runtime = Runtime(comm, chunked=bool(getattr(coord, "chunked", False)), session=session)
    pool = coord.make_pool()
    try:
        engine = Engine(core, **options)
        session.adopt(engine)
        with session.signals():
            if isinstance(coord, Ordered):
                status = run_ordered(coord, engine, comm, session.profile)
                runtime.stop_reason = status
            else:
                status = coord.drive(engine, session.first_tasks(), poll=runtime.poll, idle=runtime.idle,
                                     slice_seconds=SLICE_SECONDS, pool=pool, profile=session.profile)
            if status in ("found", "time_limit", "node_limit"):
                runtime.stop_everyone(status)
            runtime.finish(engine, pool)
        if status in ("done", "stopped") and runtime.stop_reason not in (None, "done"):
            # idle or stopped here when another rank ended the search
            status = "interrupted" if runtime.stop_reason == "interrupted" else "stopped"
        part = session.final_part(engine, pool, status)
        part["per_rank"] = rank_metrics(rank, part, time.perf_counter() - start, runtime.stats)
        parts = comm.allgather(part)            # inside the guard: a summary that fails to pickle aborts
        result = build_result(problem, core, [*parts, *session.prior_parts()], time.perf_counter() - start,
                              initial, ranks=size)
        result.metrics["per_rank"] = [p["per_rank"] for p in parts]
        session.finish(parts, result, coord)
    except KeyboardInterrupt:
        sys.stderr.write(f"yewpy: rank {rank} of {size} interrupted; ending every rank\n")
        sys.stderr.flush()
        comm.Abort(130)
        raise
    except BaseException:
        sys.stderr.write(f"yewpy: rank {rank} of {size} failed:\n{traceback.format_exc()}")
        sys.stderr.flush()
        comm.Abort(1)
        raise
    return result
