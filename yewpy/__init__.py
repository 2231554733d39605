"""yewpy: parallel exact combinatorial search.

Subclass a search kind (:class:`Enumeration`, :class:`Decision`, :class:`Optimisation`,
:class:`TopK`, or the compiled ``EnumerationCore``, ``DecisionCore``, ``OptimisationCore``), then call
``search()`` with a coordination (:class:`Sequential`, :class:`DepthBounded`, :class:`Budget`).
``@yewpy.jit`` compiles a plain-Python search class.
"""

from yewpy import core as _core
from yewpy.compiler import jit
from yewpy.core import DecisionCore, EnumerationCore, OptimisationCore
from yewpy.errors import InputError, UsageError
from yewpy.headers import get_include
from yewpy.kinds import Decision, Enumeration, Optimisation, TopK
from yewpy.result import Result
from yewpy.runtime.ranks import rank
from yewpy.search import estimate, search
from yewpy.skeletons import Budget, Coordination, DepthBounded, Ordered, Sequential, StackStealing, option

__version__ = "0.1.0"

_core.register_search(search)       # Core.search() without the compiled layer importing this one

__all__ = [
    "Budget", "Coordination", "Decision", "DecisionCore", "DepthBounded", "Enumeration", "EnumerationCore",
    "InputError", "Optimisation", "OptimisationCore", "Ordered", "Result", "Sequential", "StackStealing",
    "TopK", "UsageError", "estimate", "get_include", "jit", "option", "rank", "search",
]
