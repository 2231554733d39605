"""Ordered: replicable branch and bound (Archibald et al., JPDC 2018), for decision and optimisation.

The top of the tree is expanded sequentially to ``spawn_depth``; each frontier node becomes a task
with a priority, its left-to-right index or (``discrepancy=True``) the sum of the child indices
on its path, ties by index; tasks are then searched best priority first.  On several ranks the
tasks go in rounds of one per rank and the incumbent is agreed between rounds, so the node count
and the answer depend only on the rank count, never on timing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from yewpy._engine import DONE, ENUMERATION, Engine
from yewpy.errors import UsageError

from .coordination import _STOPS, Coordination


@dataclass(frozen=True)
class Ordered(Coordination):
    """Search frontier tasks at ``spawn_depth`` in a fixed priority order (replicable)."""

    spawn_depth: int = 1
    discrepancy: bool = False
    name = "ordered"

    def __post_init__(self) -> None:
        if self.spawn_depth < 1:
            raise ValueError("Ordered needs spawn_depth >= 1")

    def check(self, kind: int) -> None:
        if kind == ENUMERATION:
            raise UsageError("ordered is for decision and optimisation searches, not enumeration")

    def frontier(self, engine: Engine) -> tuple[list, str | None]:
        """Expand the top depth-first; the tasks in priority order, or the status that ended it."""
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
                    return [], _STOPS[status]
                for index in range(len(children) - 1, -1, -1):
                    stack.append((discrepancy + index, children[index]))
        finally:
            engine.spawn_depth = -1
        found.sort(key=lambda entry: entry[:2])
        return [task for _, _, task in found], None

    def drive(self, engine: Engine, tasks: list | None = None, poll: Any = None, idle: Any = None,
              slice_nodes: int = -1, slice_seconds: float = 0, pool: Any = None, profile: Any = None) -> str:
        """One worker: the frontier, then every task in priority order."""
        if tasks is None:
            tasks, stop = self.frontier(engine)
            if stop is not None:
                return stop
        for task in tasks:
            status = super().drive(engine, [task], poll=poll, slice_nodes=slice_nodes,
                                   slice_seconds=slice_seconds, profile=profile)
            if status != "done":
                return status
        return "done"
