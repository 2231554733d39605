"""The spanning tree that carries every control message: O(log P) hops from any rank to any other."""

from __future__ import annotations

ARITY = 2


class SpanningTree:
    """A binary heap over the ranks: rank r's parent is (r - 1) // 2, its children 2r + 1 and 2r + 2.

    Waves (termination, checkpoints) go down from rank 0 and come back up; floods (incumbents,
    stop) go out along every edge once, so each event costs each rank at most three messages and
    crosses at most 2 log2(P) edges.
    """

    def __init__(self, rank: int, size: int) -> None:
        self.rank, self.size = rank, size
        self.parent: int | None = None if rank == 0 else (rank - 1) // ARITY
        self.children: list[int] = [c for c in range(ARITY * rank + 1, ARITY * rank + ARITY + 1) if c < size]
        self.neighbours: list[int] = ([] if self.parent is None else [self.parent]) + self.children

    def others(self, source: int | None) -> list[int]:
        """The neighbours a flood that came from ``source`` goes on to."""
        return [n for n in self.neighbours if n != source]

    def depth(self) -> int:
        """Edges from rank 0 to the deepest rank."""
        return max(0, (self.size).bit_length() - 1)
