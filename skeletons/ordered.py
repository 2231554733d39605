"""Ordered: replicable branch and bound (Archibald et al., JPDC 2018), for decision and optimisation.

The top of the tree is expanded sequentially to ``spawn_depth``; each frontier node becomes a task
with a priority, its left-to-right index or (``discrepancy=True``) the sum of the child indices
on its path, ties by index; tasks are then searched best priority first.  On several ranks the
tasks go in rounds of one per rank; round k starts from the incumbents of rounds up to
k - ``window`` (agreed by a non-blocking allgather), so no rank waits for the slowest task of the
round before, and the node count and the answer depend only on the rank count, never on timing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from yewpy._engine import DONE, ENUMERATION, Engine
from yewpy.errors import UsageError
from yewpy.runtime.interfaces import Pool, Slices, Task, Transport
from yewpy.runtime.loop import STOPS, drive

from .coordination import INT32, Coordination, option

if TYPE_CHECKING:
    from yewpy.operations.profile import Profile


@dataclass(frozen=True)
class Ordered(Coordination):
    """Search frontier tasks at ``spawn_depth`` in a fixed priority order (replicable)."""

    spawn_depth: int = option(1, "-d", "--spawn-depth", low=1, high=INT32, help="spawn depth")
    discrepancy: bool = option(False, "--discrepancy", "--discrepancyOrder",
                               help="priority by discrepancy count instead of left-to-right index")
    window: int = option(4, "--window", low=1, high=INT32, metavar="W",
                         help="rounds a rank may run ahead of the slowest (default 4)")
    name = "ordered"
    resumable = False
    why_not = {"steal": "it does not steal"}

    def __post_init__(self) -> None:
        if self.spawn_depth < 1:
            raise ValueError("Ordered needs spawn_depth >= 1")
        if self.window < 1:
            raise ValueError("Ordered needs window >= 1")

    def check(self, kind: int) -> None:
        if kind == ENUMERATION:
            raise UsageError("ordered is for decision and optimisation searches, not enumeration")

    def frontier(self, engine: Engine) -> tuple[list, str | None]:
        """Expand the top depth-first; the tasks in priority order, or, where a limit ended it, the
        tasks it had not searched (beside the engine's open frames) and the status."""
        self.check(engine.core.kind)
        engine.spawn_depth = self.spawn_depth
        found: list = []
        stack: list = [(0, None)]                 # (discrepancy, task); None is the root
        try:
            while stack:
                discrepancy, task = stack.pop()
                if task is not None and task[0] >= self.spawn_depth:
                    found.append((discrepancy if self.discrepancy else 0, len(found), task))
                    continue
                engine.start_root() if task is None else engine.start(task)
                status = engine.run(-1)
                children, engine.spawned = engine.spawned, []
                if status != DONE:
                    left = children + [t for _, t in stack] + [t for _, _, t in found]
                    return left, STOPS[status]
                for index in range(len(children) - 1, -1, -1):
                    stack.append((discrepancy + index, children[index]))
        finally:
            engine.spawn_depth = -1
        found.sort(key=lambda entry: entry[:2])
        return [task for _, _, task in found], None

    def run(self, engine: Engine, transport: Transport, pool: Pool, tasks: list[Task] | None = None,
            profile: Profile | None = None) -> str:
        """The frontier (rank 0), then every task in priority order: task i on rank i mod P, in
        rounds of one task per rank.  A rank starts round k once every rank's results of round
        k - window are in (a non-blocking allgather), and adopts the best incumbent they hold, so
        each task starts from an incumbent fixed by the rank count, never by timing."""
        if tasks:
            raise UsageError("ordered starts at the root; it cannot resume tasks")
        rank, size = transport.rank, transport.size
        frontier, stop = self.frontier(engine) if rank == 0 else (None, None)
        if stop not in (None, "found") and frontier:    # what the top left unsearched waits in the pool
            pool.extend(frontier)
        frontier, stop, incumbent = transport.bcast((None if stop else frontier, stop, engine.incumbent))
        if stop is not None:
            return stop if rank == 0 else "stopped"
        if incumbent is not None:
            engine.offer(incumbent)
        alone: Slices = transport if size == 1 else _Alone()
        sign = engine.core.sign
        posted: list = []
        status = "done"
        stopped = False
        started: set = set()
        for first in range(0, len(frontier), size):
            round_ = first // size
            if round_ >= self.window:
                stopped = self._adopt(engine, posted[round_ - self.window].wait(), sign)
                if stopped:
                    break
            mine = first + rank
            if mine < len(frontier) and status == "done":
                started.add(mine)
                status = drive(self, engine, alone, pool, [frontier[mine]], profile)
            incumbent = engine.incumbent
            posted.append(transport.exchange([math.nan if incumbent is None else incumbent,
                                              _CODES.index(status)]))
        for exchange in posted[max(0, len(posted) - self.window):]:     # every rank waits for the same ones
            stopped = self._adopt(engine, exchange.wait(), sign) or stopped
        if stopped or status not in ("done", "found"):   # this rank's share not started waits in the pool
            pool.extend([frontier[i] for i in range(rank, len(frontier), size) if i not in started])
        return status if status != "done" or not stopped else "stopped"

    @property
    def holds_open_work(self) -> bool:
        """Its queue goes to the pool when a limit stops it: a stopped optimisation bounds it."""
        return True

    @staticmethod
    def _adopt(engine: Engine, rows: list, sign: float) -> bool:
        """Take the best incumbent of one round's rows; true if any rank ended that round early."""
        known = [value for value, _ in rows if not math.isnan(value)]
        if known:
            engine.offer(max(known, key=lambda value: sign * value))
        return any(code != 0 for _, code in rows)


_CODES = ["done", "found", "node_limit", "time_limit", "stopped"]


class _Alone:
    """``Slices`` for one ordered task: no slices, no messages, no stealing."""

    def __init__(self) -> None:
        self.slice_nodes, self.slice_seconds = -1, 0.0

    def poll(self, engine: Engine, pool: Pool) -> bool:
        return True

    def idle(self, engine: Engine, pool: Pool) -> bool:
        return False
