"""Type stubs for the engine contract (cext/yewpy/core.pyx; cimport the types from core.pxd)."""

from typing import Any

from yewpy.result import Result

ENUMERATION: int
DECISION: int
OPTIMISATION: int

def register_search(function: Any) -> None: ...

class Core:
    kind: int
    has_bound: bool
    sign: float
    def search(self, coordination: Any = "seq", **params: Any) -> Result: ...

class EnumerationCore(Core):
    zero: Any
    def combine(self, a: Any, b: Any) -> Any: ...

class DecisionCore(Core): ...
class OptimisationCore(Core): ...
