from collections.abc import Sequence

from yewpy.core import OptimisationCore

class MaxCliqueCore(OptimisationCore):
    n: int
    words: int
    expansions: int
    def __init__(self, rows: Sequence[int], n: int, target: int | None = None) -> None: ...
    def counters(self) -> dict[str, int]: ...
