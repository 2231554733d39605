"""What each protocol mixin of :class:`~yewpy.runtime.mpi.transport.MPITransport` may call on the
transport: the sends and the rank's place on the spanning tree (for type checkers)."""

from __future__ import annotations

from typing import Any

from yewpy.operations.session import Session
from yewpy.runtime.tree import SpanningTree


class Link:
    """The transport's part that every protocol uses; :class:`MPITransport` provides it."""

    rank: int
    size: int
    tree: SpanningTree
    session: Session
    stats: dict[str, Any]
    stop_reason: str | None

    def send(self, dest: int, tag: int, payload: Any = None) -> None:
        raise NotImplementedError

    def send_up(self, tag: int, payload: Any) -> None:
        """To the parent on the spanning tree (every rank but 0 has one)."""
        assert self.tree.parent is not None
        self.send(self.tree.parent, tag, payload)

    def down(self, tag: int, payload: Any) -> None:
        """To every child on the spanning tree."""
        for child in self.tree.children:
            self.send(child, tag, payload)

    def stop_everyone(self, reason: str, source: int | None = None) -> None:
        raise NotImplementedError
