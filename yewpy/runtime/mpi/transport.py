"""One rank's MPI transport: the message loop, the floods (INCUMBENT, STOP), the search loop's
hooks (``poll``, ``idle``) and the sequence around the search; the protocols are its mixins."""

from __future__ import annotations

import os
import pickle
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from yewpy._engine import Engine
from yewpy.errors import InputError
from yewpy.operations.session import Session
from yewpy.runtime.interfaces import Pool
from yewpy.runtime.mpi import doorbells
from yewpy.runtime.mpi.checkpoints import Checkpoints
from yewpy.runtime.mpi.doorbells import Doorbells
from yewpy.runtime.mpi.progress import Progress
from yewpy.runtime.mpi.stealing import Stealing
from yewpy.runtime.mpi.tags import INCUMBENT, KIND_OF_TAG, STOP
from yewpy.runtime.mpi.termination import Termination
from yewpy.runtime.parts import METRICS
from yewpy.runtime.ranks import agree
from yewpy.runtime.tree import SpanningTree

if TYPE_CHECKING:
    from mpi4py import MPI

# seconds of search between two looks at the network, where a thief may be on another node (it is
# answered only then) and where every thief can ring our doorbell, which the engine reads every
# BELL_NODES nodes: where that is sooner than SLICE_TARGET, the looks pace only incumbents, control
# and progress, and fewer cost less (docs/benchmarks.md, "16 ranks, fifth lease");
# YEWPY_SLICE_TARGET sets both, for experiments
SLICE_TARGET, SLICE_TARGET_RUNG = 100e-6, 300e-6
SLICE_OVERRIDE = float(os.environ.get("YEWPY_SLICE_TARGET") or 0)
BELL_NODES = 256                    # Engine.pause_on: the flag is read with the clock
SLICE_FIRST, SLICE_MIN, SLICE_MAX = 64, 1, 1 << 22
NAP_MIN = 20e-6                     # an idle rank's nap (Linux adds its 50 us timer slack), doubling
                                    # while nothing happens and no answer is awaited ...
NAP_MAX, NAP_MAX_CROWDED = 1e-3, 4e-3   # ... up to this (more when ranks outnumber cores)
RUNG_LOOKS = 32                     # probes for the message that rang our doorbell (~1 us each)
ABORT_GRACE = 0.2                   # seconds between an error's message and MPI_Abort (Hydra drops
                                    # a killed rank's stderr that it has not forwarded yet)


def _dumps(obj: Any) -> bytes:
    """pickle when it can (fast), cloudpickle for what it cannot (lambdas, local classes)."""
    try:
        return pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
    except Exception:
        import cloudpickle

        return cloudpickle.dumps(obj)


def slice_seconds(rate: float, target: float) -> float:
    """The seconds a slice aims at, at ``rate`` nodes a second: ``target``, unless it is the long
    target of a rung rank and a doorbell read (every BELL_NODES nodes) would come later than the
    short target's end, as with a slow Python search; then the short one, or thieves would wait."""
    if target == SLICE_TARGET_RUNG and not SLICE_OVERRIDE and rate * SLICE_TARGET < BELL_NODES:
        return SLICE_TARGET
    return target


def _node_cores(local: Any) -> int:
    """The cores the ranks of one node may run on, all together (each rank's affinity may be one
    core when the launcher binds ranks)."""
    try:
        mine = sorted(os.sched_getaffinity(0))
    except AttributeError:                      # not Linux
        return os.cpu_count() or 1
    return len(set().union(*local.allgather(mine)))


class MPITransport(Stealing, Termination, Checkpoints, Progress):
    """One rank's side of the search: serves thieves, steals when idle, relays control on the tree."""

    def __init__(self, comm: MPI.Comm, session: Session, steal: str = "half", low_water: int = 0) -> None:
        from mpi4py import MPI

        MPI.pickle.__init__(_dumps, pickle.loads)  # type: ignore[misc]  # mpi4py's documented way
        self.MPI = MPI
        self.comm = comm.Dup()              # its own: nothing of this search reaches a later one
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.session = session
        self.tree = SpanningTree(self.rank, self.size)
        local = self.comm.Split_type(MPI.COMM_TYPE_SHARED, key=self.rank)
        self.crowded = local.Get_size() > _node_cores(local)                # ranks share cores
        ranks_here = local.allgather(self.rank)
        self.bells = Doorbells(MPI, local, ranks_here, self.rank) if local.bcast(
            doorbells.wanted() and len(ranks_here) > 1) else None
        self.belled: Engine | None = None   # the engine watching our doorbell
        every_thief_rings = self.bells is not None and len(ranks_here) == self.size
        self.slice_target = SLICE_OVERRIDE or (SLICE_TARGET_RUNG if every_thief_rings else SLICE_TARGET)
        local.Free()
        self.nap_max = NAP_MAX_CROWDED if self.crowded else NAP_MAX
        self.slice_nodes, self.slice_seconds = SLICE_FIRST, 0.0
        self.last_poll, self.last_nodes = time.perf_counter(), 0
        self.status = MPI.Status()
        self.requests: list = []
        self.seen_version = 0
        self.stop_reason: str | None = None
        self.finishing = False              # in finish: nothing more is sent
        self.stats: dict[str, Any] = {
                      "steals_sent": 0, "steals_won": 0, "tasks_received": 0, "tasks_given": 0,
                      "steals_served": 0, "messages_sent": 0, "idle_seconds": 0.0,
                      "sent_steal": 0, "sent_work": 0, "sent_control": 0, "waves": 0,
                      "polls": 0, "slice_nodes_mean": 0.0, "last_node": 0.0, "returned": 0.0,
                      "steal_wait_seconds": 0.0, "steal_wait_max": 0.0, "doorbells_rung": 0,
                      "slice_target": self.slice_target}
        self.init_stealing(ranks_here, steal, low_water)
        self.init_termination()
        self.init_checkpoints()
        self.init_progress()

    # -- sending ---------------------------------------------------------------------------

    def send(self, dest: int, tag: int, payload: Any = None) -> None:
        if self.finishing:                  # the final barrier would not wait for it to arrive
            return
        self.requests.append(self.comm.issend(payload, dest=dest, tag=tag))
        self.stats["messages_sent"] += 1
        self.stats["sent_" + KIND_OF_TAG.get(tag, "control")] += 1

    def flood(self, tag: int, payload: Any, source: int | None = None) -> None:
        for other in self.tree.others(source):
            self.send(other, tag, payload)

    def stop_everyone(self, reason: str, source: int | None = None) -> None:
        if self.stop_reason is None:
            self.stop_reason = reason
            self.flood(STOP, reason, source)

    # -- receiving ---------------------------------------------------------------------------

    def receive(self, engine: Engine, pool: Pool, busy: bool) -> bool:
        """Act on every message waiting (an idle rank stops at the first work); true if any."""
        MPI, comm = self.MPI, self.comm
        # MPICH matches a message that has just arrived only on a later probe than the one that
        # pulled it in: look twice, and harder when a rung doorbell says one is on its way to us
        looks = 2
        if self.bells is not None:
            if self.bells.answer():
                looks = RUNG_LOOKS
                self.stats["doorbells_rung"] += 1
            if engine is not self.belled:
                engine.pause_on(self.bells.mine)
                self.belled = engine
        got = False
        while True:
            message = comm.improbe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=self.status)
            if message is None:
                looks -= 1
                if got or looks <= 0:
                    break
                continue
            got = True
            source, tag = self.status.Get_source(), self.status.Get_tag()
            self.handle(engine, pool, busy, source, tag, message.recv())
            if not busy and not self.finishing and len(pool):
                break                           # work arrived: go and do it
        if self.requests:
            self.requests = [r for r in self.requests if not r.Test()]
        return got

    def handle(self, engine: Engine, pool: Pool, busy: bool, source: int, tag: int, payload: Any) -> None:
        """Act on one message: each tag belongs to one protocol, whose mixin handles it."""
        self.HANDLERS[tag](self, engine, pool, busy, source, payload)

    # -- floods: INCUMBENT, STOP ---------------------------------------------------------------

    def on_incumbent(self, engine: Engine, pool: Pool, busy: bool, source: int, payload: float) -> None:
        if engine.offer(payload):
            self.flood(INCUMBENT, payload, source)

    def on_stop(self, engine: Engine, pool: Pool, busy: bool, source: int, payload: str) -> None:
        self.stop_everyone(payload, source)

    HANDLERS: dict[int, Callable[..., None]] = {
        INCUMBENT: on_incumbent, STOP: on_stop, **Stealing.TAGS, **Termination.TAGS,
        **Checkpoints.TAGS, **Progress.TAGS}

    # -- the two hooks of the search loop ------------------------------------------------------

    def share_incumbent(self, engine: Engine) -> None:
        if engine.incumbent_version != self.seen_version:
            self.seen_version = engine.incumbent_version
            self.flood(INCUMBENT, engine.incumbent)

    def poll(self, engine: Engine, pool: Pool) -> bool:
        """Between slices: adapt the slice, publish a better incumbent, serve thieves, read news."""
        now = time.perf_counter()
        spent, searched = now - self.last_poll, engine.nodes - self.last_nodes
        if spent > 5e-6 and searched > 0:      # nodes per slice: the node rate times the target
            rate = searched / spent
            aim = int(rate * slice_seconds(rate, self.slice_target))
            self.slice_nodes = min(SLICE_MAX, max(SLICE_MIN, (self.slice_nodes + aim) // 2))
        stats = self.stats
        stats["polls"] += 1
        stats["slice_nodes_mean"] += (self.slice_nodes - stats["slice_nodes_mean"]) / stats["polls"]
        self.share_incumbent(engine)
        self.receive(engine, pool, busy=True)
        if engine.found:
            self.stop_everyone("found")
        if len(pool) < self.low_water and self.stop_reason is None:
            self.ask(now)                       # steal ahead: the answer overlaps our last nodes
        self.tick(engine, pool, now, busy=True)
        self.last_poll, self.last_nodes = time.perf_counter(), engine.nodes
        return self.stop_reason is None

    def idle(self, engine: Engine, pool: Pool) -> bool:
        """Steal until work arrives (True) or the search is over everywhere (False)."""
        started = time.perf_counter()
        self.stats["last_node"] = time.time()
        profile = self.session.profile
        if profile is not None:
            profile.idle_begin()
        try:
            return self._idle(engine, pool)
        finally:
            self.stats["idle_seconds"] += time.perf_counter() - started
            self.last_poll, self.last_nodes = time.perf_counter(), engine.nodes
            if profile is not None:
                profile.idle_end()

    def _idle(self, engine: Engine, pool: Pool) -> bool:
        self.share_incumbent(engine)
        nap = NAP_MIN
        while True:
            got = self.receive(engine, pool, busy=False)
            if self.stop_reason is not None:
                return False
            if len(pool):
                return True
            now = time.perf_counter()
            self.tick(engine, pool, now, busy=False)
            self.terminate_step()
            if self.stop_reason is not None:
                return False
            got = self.ask(now) or got
            if self.waiting and not self.crowded:
                os.sched_yield()                # the answer comes within a victim's slice: a nap
                continue                        # (>= 70 us here) would double the latency
            nap = NAP_MIN if got or self.waiting else min(2 * nap, self.nap_max)
            time.sleep(nap)

    def tick(self, engine: Engine, pool: Pool, now: float, busy: bool) -> None:
        """The session's share of a look at the network: signals, progress, checkpoints."""
        session = self.session
        if session.interrupted is not None:
            self.stop_everyone("interrupted")
        if self.stop_reason is not None:
            return
        if now >= self.next_report:
            self.report(engine, pool, now, busy)
        if self.rank == 0 and self.epoch is None and session.checkpoint_due(now):
            self.begin_checkpoint()
        if self.epoch is not None:
            self.checkpoint_step(engine, pool)

    # -- the sequence around the search loop -----------------------------------------------------

    @contextmanager
    def guard(self) -> Iterator[None]:
        """An exception on any rank ends every rank (MPI_Abort), after printing it once."""
        try:
            yield
        except KeyboardInterrupt:
            self.abort(f"yewpy: rank {self.rank} of {self.size} interrupted; ending every rank\n", 130)
            raise
        except BaseException:
            self.abort(f"yewpy: rank {self.rank} of {self.size} failed:\n{traceback.format_exc()}", 1)
            raise

    def abort(self, message: str, code: int) -> None:
        """Print ``message``, give the launcher a moment to forward it, then end every rank."""
        sys.stderr.write(message)
        sys.stderr.flush()
        time.sleep(ABORT_GRACE)
        self.comm.Abort(code)

    def load(self, session: Session) -> None:
        """Every rank reads the checkpoint to resume; if any cannot, every rank raises the same error."""
        try:
            session.load()
            failure = None
        except InputError as exc:
            failure = exc
        agree(self.comm, failure)
        self.next_report = time.perf_counter() + (session.progress_every or float("inf"))  # all joined

    def conclude(self, engine: Engine, pool: Pool, status: str) -> str:
        """End the search everywhere (a witness or a limit found here stops every rank), deliver
        every message, and return this rank's status."""
        if status in ("found", "time_limit", "node_limit"):
            self.stop_everyone(status)
        self.finish(engine, pool)
        self.stats["returned"] = time.time()
        if status in ("done", "stopped") and self.stop_reason not in (None, "done"):
            return "interrupted" if self.stop_reason == "interrupted" else "stopped"
        return status

    def finish(self, engine: Engine, pool: Pool) -> None:
        """Deliver every message this rank sent, then wait until every rank has done the same.
        From here on a rank sends nothing (it has already passed on its STOP, if any), so the
        barrier, which waits only for the sends made before it, leaves nothing in flight."""
        self.finishing = True
        while self.requests:
            self.receive(engine, pool, busy=False)
            time.sleep(NAP_MIN)
        barrier = self.comm.Ibarrier()
        nap = NAP_MIN
        while not barrier.Test():
            self.receive(engine, pool, busy=False)
            time.sleep(nap)
            nap = min(2 * nap, self.nap_max)

    def gather(self, part: dict) -> list[dict]:
        """Every rank's part, in rank order (inside the guard: a part that fails to pickle aborts).

        The per-depth counts are most of a part's bytes on a deep tree (UTS T3L: 4 x 17,845), and
        sent to every rank they cost each rank P unpicklings and a P-way sum. One allreduce adds
        them up instead: the first part carries the sum and the others none, which is what
        ``merge_parts`` adds up to either way."""
        import numpy as np

        MPI = self.MPI
        part = dict(part)
        depths = part.pop("metrics")
        length = self.comm.allreduce(max(map(len, depths.values()), default=0), op=MPI.MAX)
        table = np.zeros((len(METRICS), length), dtype=np.int64)
        for row, key in enumerate(METRICS):
            table[row, :len(depths[key])] = depths[key]
        self.comm.Allreduce(MPI.IN_PLACE, table, op=MPI.SUM)
        parts = self.comm.allgather(part)
        for other in parts:
            other["metrics"] = {key: [] for key in METRICS}
        parts[0]["metrics"] = dict(zip(METRICS, table.tolist()))
        return parts

    def close(self) -> None:
        if self.bells is not None:
            if self.belled is not None:
                self.belled.pause_on(None)
            self.bells.free()
        self.comm.Free()

    def bcast(self, value: Any) -> Any:
        return self.comm.bcast(value, root=0)

    def exchange(self, row: list) -> _Exchange:
        """Every rank's row of floats, once all have given theirs: a non-blocking allgather."""
        import numpy as np

        send = np.asarray(row, dtype=np.float64)
        recv = np.empty((self.size, len(row)), dtype=np.float64)
        return _Exchange(self.comm.Iallgather(send, recv), recv, send)

    def protocol(self, parts: list[dict]) -> dict:
        """Messages per rank by kind, waves, the termination latency (the last rank's last node to
        the last rank's return) and the steal latency (a request to its answer, at the thief)."""
        rows = [p["per_rank"] for p in parts]
        last_node = max(r["last_node"] for r in rows)       # 0: no rank was ever idle (Ordered)
        return {"termination_seconds": max(r["returned"] for r in rows) - last_node if last_node else None,
                **{f"{kind}_per_rank": sum(r[f"sent_{kind}"] for r in rows) / len(rows)
                   for kind in ("steal", "work", "control")},
                "waves": rows[0]["waves"],
                "steal_latency_mean": sum(r["steal_wait_seconds"] for r in rows)
                / max(1, sum(r["steals_attempted"] for r in rows)),
                "steal_latency_max": max(r["steal_wait_max"] for r in rows)}


class _Exchange:
    """A posted non-blocking allgather; ``wait`` returns its rows as lists."""

    def __init__(self, request: Any, recv: Any, send: Any) -> None:
        self.request, self.recv, self.send = request, recv, send

    def test(self) -> bool:
        return bool(self.request.Test())

    def wait(self) -> list:
        while not self.request.Test():          # polled, so SIGTERM and Ctrl-C still reach Python
            time.sleep(NAP_MIN)
        return self.recv.tolist()
