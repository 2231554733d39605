"""The runtime's interfaces in one place: what the search loop asks of a pool, a transport and a
coordination.

The loop (``yewpy.runtime.loop``) and every coordination are typed against these protocols, and
each implementation provides all of its protocol (``tests/test_types.py`` runs mypy on the
package).  A protocol is structural: a plugin's transport or coordination need not inherit from
anything here.  The engine (``yewpy._engine.Engine``) and the compiled ``Core`` are concrete
classes with their own stubs; a core's contract is the ``cdef`` interface in ``yewpy/core.pxd``.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from yewpy._engine import Engine
    from yewpy.operations.profile import Profile
    from yewpy.operations.session import Session

#: A unit of work: ``(depth, node)``, the node as ``Core.dump`` gives it.
Task = tuple[int, Any]


class Pool(Protocol):
    """Tasks between engine runs: the owner takes from one end, a thief from the other."""

    def __len__(self) -> int: ...

    def push(self, task: Task) -> None: ...

    def extend(self, tasks: Iterable[Task]) -> None: ...

    def pop_local(self) -> Task:
        """The owner's next task."""
        ...

    def pop_steal(self) -> Task:
        """A thief's task: the one that should hold the most work."""
        ...

    def steal(self, mode: str, most: int = 0) -> list[Task]:
        """A thief's share (``mode``: ``half``, ``level`` or ``one``), at most ``most`` if positive."""
        ...

    def tasks(self) -> list[Task]:
        """Every task held (for a checkpoint; the pool keeps them)."""
        ...


class Slices(Protocol):
    """What ``drive`` needs of a transport: how long a slice is, and what to do between slices and
    when out of work.  ``Ordered`` runs each of its tasks with one of these alone."""

    slice_nodes: int            # nodes per slice (-1: no limit)
    slice_seconds: float        # seconds per slice (0: no limit)

    def poll(self, engine: Engine, pool: Pool) -> bool:
        """Between slices: serve others, read news; False to stop."""
        ...

    def idle(self, engine: Engine, pool: Pool) -> bool:
        """Out of work: True once tasks are in ``pool``, False when the search is over."""
        ...


class Exchange(Protocol):
    """A posted all-to-all exchange of one row per worker."""

    def wait(self) -> list:
        """Every worker's row, in rank order, once all have arrived."""
        ...


class Transport(Slices, Protocol):
    """One worker's link to the others (``LocalTransport`` alone, ``MPITransport`` over MPI)."""

    rank: int
    size: int
    stats: dict                 # this worker's counters, for ``Result.metrics["per_rank"]``

    def guard(self) -> AbstractContextManager[None]:
        """Around the whole search: an error on any worker ends every worker."""
        ...

    def load(self, session: Session) -> None:
        """Read the checkpoint to resume, agreeing on any error with every worker."""
        ...

    def conclude(self, engine: Engine, pool: Pool, status: str) -> str:
        """End the search everywhere and deliver every message; this worker's final status."""
        ...

    def gather(self, part: dict) -> list[dict]:
        """Every worker's part, on every worker. Their per-depth metrics may arrive summed into the
        first part (the others' empty): only their sum over the parts is kept."""
        ...

    def bcast(self, value: Any) -> Any:
        """Worker 0's ``value``, on every worker."""
        ...

    def exchange(self, row: list) -> Exchange:
        """Post this worker's row of floats (non-blocking)."""
        ...

    def protocol(self, parts: list[dict]) -> dict:
        """Message and latency figures for ``Result.metrics["protocol"]`` (empty when alone)."""
        ...

    def close(self) -> None: ...


class Coordination(Protocol):
    """How the tree is cut into tasks; ``skeletons.coordination.Coordination`` is the base the
    bundled ones share."""

    name: str
    #: all its open work is in the engine and the pool, so it can be saved as tasks and resumed
    #: on any rank count
    resumable: bool

    @property
    def holds_open_work(self) -> bool:
        """All its open work is in the engine and the pool once ``run`` returns (a stopped
        optimisation's bound covers it)."""
        ...

    @property
    def steal_mode(self) -> str:
        """What a victim hands a thief: ``half``, ``level`` or ``one``."""
        ...

    @property
    def low_water(self) -> int:
        """A busy rank asks for work while fewer tasks than this wait in its pool (0: when idle)."""
        ...

    def check(self, kind: int) -> None:
        """Raise ``UsageError`` if it cannot run searches of ``kind``."""
        ...

    def engine_options(self) -> dict:
        """Keyword arguments for ``Engine``."""
        ...

    def make_pool(self) -> Pool: ...

    def after_budget(self, engine: Engine) -> list[Task]:
        """Work to hand to the pool when the backtrack budget runs out."""
        ...

    def run(self, engine: Engine, transport: Transport, pool: Pool, tasks: list[Task] | None = None,
            profile: Profile | None = None) -> str:
        """This worker's part of the search; the status ``drive`` returns."""
        ...
