"""Coordinations: how the tree is cut into tasks, chosen at run time, orthogonal to the kind.

A coordination only sets how the engine hands out work (spawn depth, backtrack budget), which
pool holds the tasks and what a victim gives a thief (``steal``); its ``run`` is the runtime's one
search loop (``yewpy.runtime.loop.drive``) unless it has a multi-rank behaviour of its own
(Ordered).  A subclass with a ``name`` registers itself (``registry``); its parameters, declared
with :func:`option`, are also the ``yewpy`` command's flags.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from yewpy._engine import Engine
from yewpy.runtime import interfaces
from yewpy.runtime.interfaces import Pool, Task, Transport
from yewpy.runtime.loop import drive
from yewpy.runtime.share import STEALS

from . import registry
from .pool import POOLS

if TYPE_CHECKING:
    from yewpy.operations.profile import Profile

INT32, INT64 = 2 ** 31 - 1, 2 ** 63 - 1       # what the engine's C counters hold


def option(default: Any, *flags: str, help: str, low: int | None = None, high: int | None = None,
           choices: tuple | None = None, metavar: str | None = None) -> Any:
    """A coordination parameter that is also a ``yewpy`` flag: its ``flags`` (the field's
    ``--name`` when none), its ``help``, and the range or the choices the command line checks."""
    return field(default=default, metadata={"flags": flags, "help": help, "low": low, "high": high,
                                            "choices": choices, "metavar": metavar})


def _steal() -> Any:
    return option("half", "--steal", choices=STEALS,
                  help="over MPI, what a victim gives a thief: half its open work (default), its "
                       "shallowest level, or one task")


#: the default low-water mark of ``steal_ahead`` (docs/benchmarks.md, "Steal ahead", chose it)
STEAL_AHEAD = 0


def _steal_ahead() -> Any:
    return option(STEAL_AHEAD, "--steal-ahead", low=0, high=INT32, metavar="N",
                  help="over MPI, a busy rank asks for work once fewer than N tasks wait in its pool, "
                       "so the answer overlaps its last nodes (0: only when it runs out)")


def _pool() -> Any:
    return option("depthpool", "--pool", "--poolType", choices=tuple(POOLS),
                  help="the task pool: depthpool (one FIFO per depth, the default) or deque")


@dataclass(frozen=True)
class Coordination:
    """Base of the bundled coordinations (``yewpy.runtime.interfaces.Coordination``): subclasses
    say which engine options and pool they use."""

    name = "coordination"
    resumable = True            # its work can be saved as tasks and resumed on any rank count
    #: Other names it answers to, and, per flag it lacks, why (the command line's message).
    aliases: ClassVar[tuple] = ()
    why_not: ClassVar[dict] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            registry.register(cls)

    def engine_options(self) -> dict:
        """Keyword arguments for :class:`yewpy._engine.Engine`."""
        return {}

    def check(self, kind: int) -> None:
        """Raise :class:`yewpy.errors.UsageError` if this coordination cannot run that kind."""

    def make_pool(self) -> Pool:
        return POOLS["depthpool"]()

    def after_budget(self, engine: Engine) -> list[Task]:
        """Work to hand to the pool when the backtrack budget runs out."""
        return []

    def run(self, engine: Engine, transport: Transport, pool: Pool, tasks: list[Task] | None = None,
            profile: Profile | None = None) -> str:
        """This worker's part of the search on ``transport``: the runtime's one loop over ``pool``,
        from the root (``tasks=None``) or from ``tasks``.  Returns the status ``drive`` returns."""
        return drive(self, engine, transport, pool, tasks, profile)

    @property
    def holds_open_work(self) -> bool:
        """Whether all its open work is in the engine and the pool once ``run`` returns, so that a
        stopped optimisation can bound it (``Result.bound``): a resumable coordination's is."""
        return self.resumable

    @property
    def steal_mode(self) -> str:
        """What a victim hands a thief over MPI: ``half``, ``level`` or ``one`` (see ``STEALS``)."""
        return getattr(self, "steal", "half")

    @property
    def low_water(self) -> int:
        """Over MPI, a busy rank asks for work while fewer tasks than this wait (0: only when idle)."""
        return getattr(self, "steal_ahead", 0)

    def _check_steal(self) -> None:
        if self.steal_mode not in STEALS:
            raise ValueError(f"steal must be one of {list(STEALS)}, got {self.steal_mode!r}")
        if self.low_water < 0:
            raise ValueError(f"steal_ahead must be >= 0, got {self.low_water}")


@dataclass(frozen=True)
class Sequential(Coordination):
    """Depth-first search of the whole tree on one explicit stack: the reference."""

    steal: str = _steal()
    steal_ahead: int = _steal_ahead()
    name = "seq"
    aliases = ("sequential",)

    def __post_init__(self) -> None:
        self._check_steal()


@dataclass(frozen=True)
class DepthBounded(Coordination):
    """Every surviving child of a node shallower than ``spawn_depth`` becomes its own task."""

    spawn_depth: int = option(0, "-d", "--spawn-depth", low=0, high=INT32, help="spawn depth")
    pool: str = _pool()
    steal: str = _steal()
    steal_ahead: int = _steal_ahead()
    name = "depthbounded"

    def __post_init__(self) -> None:
        self._check_steal()
        if self.spawn_depth < 0:
            raise ValueError("spawn_depth must be >= 0")
        if self.pool not in POOLS:
            raise ValueError(f"pool must be one of {sorted(POOLS)}, got {self.pool!r}")
        if self.spawn_depth == 0:
            warnings.warn("DepthBounded(spawn_depth=0) makes one task: no parallelism", stacklevel=3)

    def engine_options(self) -> dict:
        return {"spawn_depth": self.spawn_depth}

    def make_pool(self) -> Pool:
        return POOLS[self.pool]()


@dataclass(frozen=True)
class Budget(Coordination):
    """Search each task until ``backtracks`` backtracks, then give away unexplored work.

    Shallowest-only (default) offloads the remaining children of the shallowest open level;
    ``spawn_all`` offloads every open level (the original thesis rule).
    """

    backtracks: int = option(100_000, "-b", "--backtrack-budget", low=1, high=INT64,
                             help="backtracks per task (default 100000)")
    spawn_all: bool = option(False, "--spawn-all", help="offload every open level")
    pool: str = _pool()
    steal: str = _steal()
    steal_ahead: int = _steal_ahead()
    name = "budget"

    def __post_init__(self) -> None:
        self._check_steal()
        if self.backtracks < 1:
            raise ValueError("backtracks must be >= 1")
        if self.pool not in POOLS:
            raise ValueError(f"pool must be one of {sorted(POOLS)}, got {self.pool!r}")

    def engine_options(self) -> dict:
        return {"backtrack_budget": self.backtracks}

    def make_pool(self) -> Pool:
        return POOLS[self.pool]()

    def after_budget(self, engine: Engine) -> list[Task]:
        return engine.split(True, self.spawn_all)


@dataclass(frozen=True)
class StackStealing(Coordination):
    """Depth-first search on each worker's own stack; a thief takes a share of a victim's open
    work (``steal``); ``chunked=True`` is YewPar's chunked stack stealing, ``steal="level"``."""

    chunked: bool = option(False, "--chunked", help="steal a whole level (= --steal level)")
    steal: str = _steal()
    steal_ahead: int = _steal_ahead()
    name = "stacksteal"

    def __post_init__(self) -> None:
        if self.chunked:
            if self.steal not in ("half", "level"):
                raise ValueError(f"chunked is steal='level'; it contradicts steal={self.steal!r}")
            object.__setattr__(self, "steal", "level")
        self._check_steal()


def coordination(spec: Any = "seq", **params: Any) -> interfaces.Coordination:
    """A coordination from a registered name (``"seq"``, ``"depthbounded"``, ``"budget"``,
    ``"stacksteal"``, ``"ordered"``, or a plugin's) or an object.  ``params`` (``spawn_depth``,
    ``backtracks``, ``spawn_all``, ``pool``, ``chunked``, ``steal``, ``discrepancy``, ``window``,
    or a plugin's own fields) apply to a name.
    """
    if isinstance(spec, Coordination):
        if params:
            raise TypeError(f"unexpected parameters for {spec!r}: {sorted(params)}")
        return spec
    cls = registry.lookup(spec) if isinstance(spec, str) else None
    if cls is None:
        raise ValueError(f"unknown coordination {spec!r}; choose one of {sorted(registry.classes())}")
    known = set(getattr(cls, "__dataclass_fields__", ()))
    unknown = set(params) - known
    if unknown:
        raise TypeError(f"{cls.__name__} does not take {sorted(unknown)}")
    return cls(**params)
