"""Coordinations: how the tree is cut into tasks, chosen at run time, orthogonal to the kind.

A coordination only sets how the engine hands out work (spawn depth, backtrack budget) and
which pool holds the tasks; ``drive`` runs every task of one worker through that pool.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from yewpy._engine import BUDGET, DONE, FOUND, NODE_LIMIT, PAUSED, TIME_LIMIT, Engine

from .pool import POOLS

_STOPS = {FOUND: "found", NODE_LIMIT: "node_limit", TIME_LIMIT: "time_limit"}


@dataclass(frozen=True)
class Coordination:
    """Base: subclasses say which engine options and pool they use."""

    name = "coordination"

    def engine_options(self) -> dict:
        """Keyword arguments for :class:`yewpy._engine.Engine`."""
        return {}

    def check(self, kind: int) -> None:
        """Raise :class:`yewpy.errors.UsageError` if this coordination cannot run that kind."""

    def make_pool(self) -> Any:
        return POOLS["depthpool"]()

    def after_budget(self, engine: Engine) -> list:
        """Work to hand to the pool when the backtrack budget runs out."""
        return []

    def drive(self, engine: Engine, tasks: list | None = None, poll: Any = None, idle: Any = None,
              slice_nodes: int = -1, slice_seconds: float = 0, pool: Any = None, profile: Any = None) -> str:
        """Search from the root (``tasks=None``) or from ``tasks`` until all is explored.

        A runtime that shares work between workers passes two callbacks.  ``poll(engine, pool)``,
        called between slices (``slice_nodes`` nodes or ``slice_seconds``), serves steal requests
        and exchanges incumbents; it returns False to stop.  ``idle(engine, pool)``, called when
        this worker has nothing left, returns True once it has put stolen tasks in the pool and
        False when the whole search is over.  ``pool``: the pool to use (the caller keeps what is
        left in it after a stop); ``profile``: told when each task begins and ends.
        Returns ``done``, ``found``, ``node_limit``, ``time_limit`` or ``stopped``.
        """
        pool = self.make_pool() if pool is None else pool
        if tasks is None:
            engine.start_root()
            if profile is not None:
                profile.begin(engine)
        else:
            pool.extend(tasks)
        while True:
            if not engine.active:
                if not pool and (idle is None or not idle(engine, pool)):
                    return "done"
                if pool:
                    engine.start(pool.pop_local())
                    if profile is not None:
                        profile.begin(engine)
                continue
            status = engine.run(slice_nodes, slice_seconds)
            if profile is not None and not engine.active:
                profile.end(engine)
            if engine.spawned:
                pool.extend(engine.spawned)
                engine.spawned.clear()
            if status == BUDGET:
                pool.extend(self.after_budget(engine))
            elif status != PAUSED and status != DONE:
                return _STOPS[status]
            going = poll is None or engine.found or poll(engine, pool)
            if engine.found:                   # found by this slice, or by a split inside poll
                return "found"
            if not going:
                return "stopped"


@dataclass(frozen=True)
class Sequential(Coordination):
    """Depth-first search of the whole tree on one explicit stack: the reference."""

    name = "seq"


@dataclass(frozen=True)
class DepthBounded(Coordination):
    """Every surviving child of a node shallower than ``spawn_depth`` becomes its own task."""

    spawn_depth: int = 0
    pool: str = "depthpool"
    name = "depthbounded"

    def __post_init__(self) -> None:
        if self.spawn_depth < 0:
            raise ValueError("spawn_depth must be >= 0")
        if self.pool not in POOLS:
            raise ValueError(f"pool must be one of {sorted(POOLS)}, got {self.pool!r}")
        if self.spawn_depth == 0:
            warnings.warn("DepthBounded(spawn_depth=0) makes one task: no parallelism", stacklevel=3)

    def engine_options(self) -> dict:
        return {"spawn_depth": self.spawn_depth}

    def make_pool(self) -> Any:
        return POOLS[self.pool]()


@dataclass(frozen=True)
class Budget(Coordination):
    """Search each task until ``backtracks`` backtracks, then give away unexplored work.

    Shallowest-only (default) offloads the remaining children of the shallowest open level;
    ``spawn_all`` offloads every open level (the original thesis rule).
    """

    backtracks: int = 100_000
    spawn_all: bool = False
    pool: str = "depthpool"
    name = "budget"

    def __post_init__(self) -> None:
        if self.backtracks < 1:
            raise ValueError("backtracks must be >= 1")
        if self.pool not in POOLS:
            raise ValueError(f"pool must be one of {sorted(POOLS)}, got {self.pool!r}")

    def engine_options(self) -> dict:
        return {"backtrack_budget": self.backtracks}

    def make_pool(self) -> Any:
        return POOLS[self.pool]()

    def after_budget(self, engine: Engine) -> list:
        return engine.split(True, self.spawn_all)


@dataclass(frozen=True)
class StackStealing(Coordination):
    """Depth-first search on each worker's own stack; a thief takes the shallowest unexplored
    child of a victim's stack, or with ``chunked`` all the remaining children of that level."""

    chunked: bool = False
    name = "stacksteal"


def _by_name() -> dict:
    from .ordered import Ordered

    return {"seq": Sequential, "sequential": Sequential, "depthbounded": DepthBounded, "budget": Budget,
            "stacksteal": StackStealing, "ordered": Ordered}


def coordination(spec: Any = "seq", **params: Any) -> Coordination:
    """A coordination from a name (``"seq"``, ``"depthbounded"``, ``"budget"``, ``"stacksteal"``,
    ``"ordered"``) or an object.  ``params`` (``spawn_depth``, ``backtracks``, ``spawn_all``,
    ``pool``, ``chunked``, ``discrepancy``) apply to a name.
    """
    if isinstance(spec, Coordination):
        if params:
            raise TypeError(f"unexpected parameters for {spec!r}: {sorted(params)}")
        return spec
    by_name = _by_name()
    if spec not in by_name:
        names = sorted(set(by_name) - {"sequential"})
        raise ValueError(f"unknown coordination {spec!r}; choose one of {names}")
    cls = by_name[spec]
    known = set(cls.__dataclass_fields__)
    unknown = set(params) - known
    if unknown:
        raise TypeError(f"{cls.__name__} does not take {sorted(unknown)}")
    return cls(**params)
