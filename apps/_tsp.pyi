from collections.abc import Sequence

from yewpy.core import OptimisationCore

MAX_CITIES: int

def held_karp(dist: Sequence[int], n: int, upper: float, max_iterations: int = 0
              ) -> tuple[list[float], float, int]: ...
def local_search_tour(dist: Sequence[int], n: int, starts: Sequence[int] | None = None
                      ) -> tuple[list[int], int]: ...

class TspCore(OptimisationCore):
    n: int
    bounds: int
    def __init__(self, dist: Sequence[int], n: int, pi: Sequence[float] | None = None) -> None: ...
    def counters(self) -> dict[str, int]: ...
    def node_bound(self, path: Sequence[int]) -> float: ...
