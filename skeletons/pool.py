"""Work pools that hold tasks, ``(depth, node)`` pairs, between engine runs."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from itertools import groupby
from operator import itemgetter

from yewpy.runtime.interfaces import Pool, Task


class DepthPool:
    """One FIFO queue per depth: the owner takes from the deepest, a thief from the shallowest.

    Deepest-first keeps the pool small and close to depth-first order; shallowest-first hands
    a thief the biggest subtrees.  FIFO within a depth keeps the heuristic order.
    """

    def __init__(self) -> None:
        self._levels: dict[int, deque] = {}
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def push(self, task: Task) -> None:
        self._levels.setdefault(task[0], deque()).append(task)
        self._size += 1

    def extend(self, tasks: Iterable[Task]) -> None:
        levels = self._levels
        for depth, run in groupby(tasks, itemgetter(0)):     # a share comes a depth at a time
            level = levels.get(depth)
            if level is None:
                level = levels[depth] = deque()
            before = len(level)
            level.extend(run)
            self._size += len(level) - before

    def _take(self, depth: int) -> Task:
        level = self._levels[depth]
        task = level.popleft()
        if not level:
            del self._levels[depth]
        self._size -= 1
        return task

    def pop_local(self) -> Task:
        """The oldest task at the deepest depth."""
        return self._take(max(self._levels))

    def pop_steal(self) -> Task:
        """The oldest task at the shallowest depth."""
        return self._take(min(self._levels))

    def tasks(self) -> list:
        """Every task held, shallowest first (for a checkpoint; the pool keeps them)."""
        return [task for depth in sorted(self._levels) for task in self._levels[depth]]

    def steal(self, mode: str, most: int = 0) -> list:
        """For a thief: ``one``, the oldest shallowest task; ``level``, that whole depth; ``half``,
        every other task shallowest first (the thief gets the first, so at least one), at most
        ``most`` of them when ``most > 0``."""
        if not self._size:
            return []
        if mode == "one":
            return [self.pop_steal()]
        if mode == "level":
            depth = min(self._levels)
            tasks = list(self._levels.pop(depth))
            self._size -= len(tasks)
            return tasks
        taken: list = []
        take = True
        for depth in sorted(self._levels):
            level = self._levels[depth]
            kept: list[Task] = []
            while level and not (0 < most <= len(taken)):
                task = level.popleft()
                (taken if take else kept).append(task)
                take = not take
            level.extendleft(reversed(kept))
            if not level:
                del self._levels[depth]
            if 0 < most <= len(taken):
                break
        self._size -= len(taken)
        return taken


class DequePool:
    """A work-stealing deque: the owner takes the newest task, a thief the oldest."""

    def __init__(self) -> None:
        self._tasks: deque = deque()

    def __len__(self) -> int:
        return len(self._tasks)

    def push(self, task: Task) -> None:
        self._tasks.append(task)

    def extend(self, tasks: Iterable[Task]) -> None:
        self._tasks.extend(tasks)

    def pop_local(self) -> Task:
        return self._tasks.pop()

    def tasks(self) -> list:
        """Every task held, oldest first (for a checkpoint; the pool keeps them)."""
        return list(self._tasks)

    def pop_steal(self) -> Task:
        return self._tasks.popleft()

    def steal(self, mode: str, most: int = 0) -> list:
        """For a thief: ``one``, the oldest task; ``level`` or ``half``, the older half (at most
        ``most`` tasks for ``half`` when ``most > 0``)."""
        count = 1 if mode == "one" else max(1, len(self._tasks) // 2)
        if mode == "half" and most > 0:
            count = min(count, most)
        return [self._tasks.popleft() for _ in range(min(count, len(self._tasks)))]


#: The pools a coordination may name (``pool="deque"``); each is a ``yewpy.runtime.interfaces.Pool``.
POOLS: dict[str, Callable[[], Pool]] = {"depthpool": DepthPool, "deque": DequePool}
