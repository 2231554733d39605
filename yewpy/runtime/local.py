"""The transport of a single process: no other worker, so nothing to steal or tell."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from yewpy._engine import Engine
from yewpy.operations.session import WATCH_SLICE, Session
from yewpy.runtime.interfaces import Pool


class LocalTransport:
    """One worker (a ``Transport``).  ``poll`` is the session's (progress, checkpoints) when it
    watches, else free."""

    def __init__(self, session: Session) -> None:
        self.rank, self.size = 0, 1
        self.session = session
        self.slice_nodes = -1
        self.slice_seconds: float = WATCH_SLICE if session.watching else 0.0
        self.stats: dict = {}

    def poll(self, engine: Engine, pool: Pool) -> bool:
        return self.session.poll(engine, pool) if self.slice_seconds else True

    def idle(self, engine: Engine, pool: Pool) -> bool:
        return False

    @contextmanager
    def guard(self) -> Iterator[None]:
        yield

    def load(self, session: Session) -> None:
        session.load()

    def conclude(self, engine: Engine, pool: Pool, status: str) -> str:
        return status

    def gather(self, part: dict) -> list[dict]:
        return [part]

    def protocol(self, parts: list[dict]) -> dict:
        return {}

    def close(self) -> None:
        pass

    def bcast(self, value: Any) -> Any:
        return value

    def exchange(self, row: list) -> _Done:
        """One row per worker, all of them, once every worker has given its row (non-blocking)."""
        return _Done([row])


class _Done:
    def __init__(self, rows: list) -> None:
        self.rows = rows

    def wait(self) -> list:
        return self.rows
