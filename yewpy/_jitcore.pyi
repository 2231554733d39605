"""Type stubs for the compiled core of ``@yewpy.jit`` searches (cext/yewpy/_jitcore.pyx)."""

from collections.abc import Callable
from typing import Any

from yewpy.core import Core

COUNT: int          # how an enumeration folds value(): count nodes,
SUM_INT: int        # sum an integer value,
SUM_FLOAT: int      # or sum a float value

class JitCore(Core):
    width: int
    def __init__(self, problem: Any, codec: Any, root_record: bytes, keep: Any, env: int, width: int,
                 kind: int, has_bound: bool, sign: float, fold: int, expand: int, value: int = 0,
                 objective: int = 0, bound: int = 0, descend: int = 0,
                 leaf: Callable[[Any], bool] | None = None) -> None: ...
