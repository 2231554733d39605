"""Type stubs for the compiled engine (cext/yewpy/_engine.pyx)."""

from collections.abc import Callable, Iterable
from typing import Any

from yewpy.core import Core
from yewpy.ranking import Ranking

ENUMERATION: int
DECISION: int
OPTIMISATION: int
DONE: int
PAUSED: int
BUDGET: int
FOUND: int
NODE_LIMIT: int
TIME_LIMIT: int

Task = tuple[int, Any]

def monotonic() -> float: ...

class PyCore(Core):
    def __init__(self, problem: Any, kind: int, has_bound: bool, sign: float, counting: bool,
                 leaf: Callable[[Any], bool] | None = None,
                 bound: Callable[[Any], float] | None = None) -> None: ...

class Engine:
    core: Core
    base_depth: int
    max_depth: int
    spawn_depth: int
    prune_level: bool
    backtrack_budget: int
    has_incumbent: bool
    has_witness: bool
    witness: Any
    found: bool
    spawned: list[Task]
    nodes: int
    deadline: float
    incumbent_version: int
    ranking: Ranking | None
    tracking: bool
    keep_leaves: bool
    def __init__(self, core: Core, max_depth: int | None = None, spawn_depth: int = -1,
                 prune_level: bool = False, backtrack_budget: int = 0, target: Any = None,
                 initial_bound: Any = None, node_limit: int | None = None,
                 deadline: float | None = None, ranking: Ranking | None = None,
                 tracking: bool = False) -> None: ...
    def start_root(self) -> None: ...
    def start(self, task: Task) -> None: ...
    def run(self, slice_nodes: int = -1, slice_seconds: float = 0) -> int: ...
    def pause_on(self, flag: memoryview | None) -> None: ...
    def split(self, whole_level: bool = True, all_levels: bool = False, limit: int = 0) -> list[Task]: ...
    @property
    def active(self) -> bool: ...
    @property
    def incumbent(self) -> float | None: ...
    @property
    def witness_objective(self) -> float | None: ...
    def offer(self, value: float) -> bool: ...
    def take_value(self) -> Any: ...
    def metrics(self) -> dict[str, list[int]]: ...
    def open_bound(self, tasks: Iterable[Task] = (), deadline: float = 0) -> float | None: ...
    def frame_node(self, frame: int) -> Any: ...
    def frontier(self) -> tuple[list[tuple[int, Any, int, int, int, bool]],
                                list[tuple[float, float, float]]]: ...
