from __future__ import annotations

class FillFloor:
    total: float
    largest: float
    c1: float
    div: int
    shift: float
    least: float
    def __init__(self, points: tuple, total: float, largest: float, c1: float, div: int,
                 shift: float = 0.0) -> None: ...
    def at(self, x: float) -> float: ...
    def with_sends(self, exposed: float) -> FillFloor: ...
