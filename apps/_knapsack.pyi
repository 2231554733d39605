from collections.abc import Sequence

from yewpy.core import OptimisationCore

class KnapsackCore(OptimisationCore):
    n: int
    capacity: float
    def __init__(self, profits: Sequence[float], weights: Sequence[float], capacity: float) -> None: ...
