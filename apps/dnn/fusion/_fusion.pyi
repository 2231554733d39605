from collections.abc import Sequence

from yewpy.core import OptimisationCore

FS_PER_NS: int
MAX_STREAMS: int
MEMO_SLOTS: int

def replay(nbytes: Sequence[int], ready: Sequence[int], alpha: int, beta: int, gamma: int, streams: int,
           ends: Sequence[int], ranks: Sequence[int] | None = None
           ) -> tuple[int, list[tuple[int, int, int]]]: ...
def dp(nbytes: Sequence[int], ready: Sequence[int], alpha: int, beta: int, gamma: int,
       max_buckets: int = 0, cap: int = 0) -> tuple[int, list[int]]: ...

class FusionCore(OptimisationCore):
    n: int
    streams: int
    max_buckets: int
    bounds: int
    dominated: int
    def __init__(self, nbytes: Sequence[int], ready: Sequence[int], alpha: int, beta: int, gamma: int,
                 streams: int = 1, max_buckets: int = 0, cap: int = 0) -> None: ...
    def counters(self) -> dict[str, int]: ...
    def min_buckets(self, k: int = 0) -> int: ...
    def least_cost(self, k: int = 0) -> int: ...
    def tight_ends(self, j: int) -> list[int] | None: ...
    def node_bound(self, ends: Sequence[int], ranks: Sequence[int] | None = None) -> float: ...
