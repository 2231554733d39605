"""The transport of a single process: no other worker, so nothing to steal or tell."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

from yewpy.operations.session import WATCH_SLICE, Session


class LocalTransport:
    """One worker.  ``poll`` is the session's (progress, checkpoints) when it watches, else free."""

    rank, size = 0, 1

    def __init__(self, session: Session) -> None:
        self.session = session
        self.slice_nodes = -1
        self.slice_seconds = WATCH_SLICE if session.watching else 0
        self.stats: dict = {}

    def poll(self, engine: Any, pool: Any) -> bool:
        return self.session.poll(engine, pool) if self.slice_seconds else True

    def idle(self, engine: Any, pool: Any) -> bool:
        return False

    @contextmanager
    def guard(self):
        yield

    def load(self, session: Session) -> None:
        session.load()

    def conclude(self, engine: Any, pool: Any, status: str) -> str:
        return status

    def gather(self, part: dict) -> list:
        return [part]

    def close(self) -> None:
        pass

    def bcast(self, value: Any) -> Any:
        return value

    def exchange(self, row: list) -> Any:
        """One row per worker, all of them, once every worker has given its row (non-blocking)."""
        return _Done([row])


class _Done:
    def __init__(self, rows: list) -> None:
        self.rows = rows

    def wait(self) -> list:
        return self.rows
