from collections.abc import Iterable

from yewpy.core import DecisionCore

class SIPCore(DecisionCore):
    P: int
    T: int
    W: int
    G: int
    refuted: bool
    failures: int
    graphs: list[int]
    def __init__(self, P: int, pattern_edges: Iterable[int], pattern_loops: Iterable[int], T: int,
                 target_edges: Iterable[int], target_loops: Iterable[int], isolated: int = 0,
                 supplementals: bool = True) -> None: ...
    def counters(self) -> dict[str, int]: ...
    def reset_counters(self) -> None: ...
    def root_domain_sizes(self) -> list[int]: ...
