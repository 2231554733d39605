"""Doorbells: one flag per rank in node-shared memory, so a victim answers a thief at once.

A busy rank reads its messages only between slices of search. A thief on the same node also sets
its victim's flag after sending STEAL, and the victim's engine watches that flag (``pause_on``),
ending its slice within 256 nodes instead of at the slice's end. The flag is only a hint: the
request itself travels as a message and is answered at the next poll whether or not the flag
was seen, so a lost or late write costs time, never an answer.
"""

from __future__ import annotations

import os
from typing import Any

LINE = 64          # bytes per rank: each flag on its own cache line


class Doorbells:
    """The flags of the ranks on this node (``ranks_here``: their ranks, in local order)."""

    def __init__(self, MPI: Any, local: Any, ranks_here: list[int], rank: int) -> None:
        self.win = MPI.Win.Allocate_shared(LINE, 1, comm=local)     # collective over the node
        self.flags: dict[int, memoryview] = {}
        for index, other in enumerate(ranks_here):
            buffer, _ = self.win.Shared_query(index)
            self.flags[other] = memoryview(buffer).cast("B")
        self.mine = self.flags[rank]
        self.mine[0] = 0

    def ring(self, rank: int) -> None:
        """Ask ``rank`` to look at its messages soon (nothing happens if it is on another node)."""
        flag = self.flags.get(rank)
        if flag is not None:
            flag[0] = 1

    def answer(self) -> bool:
        """Whether ours was rung, clearing it: called before this rank reads its messages, so a
        ring after this is for the next read."""
        if self.mine[0]:
            self.mine[0] = 0
            return True
        return False

    def free(self) -> None:
        self.mine = memoryview(b"")
        self.flags.clear()
        self.win.Free()


def wanted() -> bool:
    """Doorbells are on unless ``YEWPY_DOORBELLS=0`` (for side-by-side measurements)."""
    return os.environ.get("YEWPY_DOORBELLS", "1") != "0"
