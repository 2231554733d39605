from typing import Any

from yewpy.core import Core

class Prober:
    probes: int
    total: float
    total_sq: float
    deepest: int
    def __init__(self, core: Core, max_depth: int | None = None, prune_level: bool = False,
                 target: Any = None, seed: int = 1) -> None: ...
    def reset(self) -> None: ...
    def run(self, seconds: float, incumbent: float | None = None, most: int = -1) -> int: ...
