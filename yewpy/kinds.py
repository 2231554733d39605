"""The search kinds a user subclasses in plain Python: Enumeration, Decision, Optimisation, TopK.

A search is a root, a lazy child generator in heuristic order and, where needed, an objective
and an optimistic bound.  ``search()`` runs it on the compiled engine through an adapter.

>>> class Binary(Enumeration):
...     def root(self):
...         return ()
...     def children(self, node):
...         if len(node) < 3:
...             yield node + (0,)
...             yield node + (1,)
>>> Binary().search().value      # 1 + 2 + 4 + 8 nodes
15
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from yewpy._engine import DECISION, ENUMERATION, OPTIMISATION, PyCore
from yewpy.ranking import Ranked, Ranking
from yewpy.result import Result


class _Search:
    """What every kind shares: a root, lazy children, and ``search``."""

    #: The children come with non-increasing bounds (non-decreasing when minimising), so the
    #: first child that fails its bound may end its siblings too (``prune_level``).
    prune_level: bool = False

    def root(self) -> Any:
        """The root node (depth 0)."""
        raise NotImplementedError(f"{type(self).__name__} must define root()")

    def children(self, node: Any) -> Iterable[Any]:
        """The children of ``node``, best first; consumed lazily, so a generator is ideal."""
        raise NotImplementedError(f"{type(self).__name__} must define children(node)")

    def leaf(self, node: Any) -> bool:
        """Optional: true when ``node`` surely has no children. Giving work away (a thief's share,
        a depth-bounded spawn) then searches such a child in place, not as a task of one node."""
        raise NotImplementedError

    def _leaf_test(self) -> Callable[[Any], bool] | None:
        """``leaf`` where the class defines it, else None: the engine then never asks."""
        return self.leaf if type(self).leaf is not _Search.leaf else None

    def search(self, coordination: Any = "seq", **params: Any) -> Result:
        """Run this search; see :func:`yewpy.search` for the coordinations and parameters."""
        from yewpy.search import search

        return search(self, coordination, **params)

    def _core(self) -> PyCore:
        raise NotImplementedError


class Enumeration(_Search):
    """Visit every node and fold ``value(node)`` with ``combine``, starting from ``zero``.

    The default counts nodes.  ``combine`` must be associative and commutative: partial
    results merge in whatever order workers finish.
    """

    zero: Any = 0

    def value(self, node: Any) -> Any:
        """What ``node`` contributes (default 1: count nodes)."""
        return 1

    def combine(self, a: Any, b: Any) -> Any:
        """Merge two partial results (default ``a + b``)."""
        return a + b

    def _core(self) -> PyCore:
        cls = type(self)
        counting = (cls.value is Enumeration.value and cls.combine is Enumeration.combine
                    and self.zero == 0)
        return PyCore(self, ENUMERATION, False, 1.0, counting, self._leaf_test())


class Decision(_Search):
    """Find a node whose ``objective`` is at least ``target`` (pass ``target=`` to search)."""

    def objective(self, node: Any) -> float:
        """The node's objective value."""
        raise NotImplementedError(f"{type(self).__name__} must define objective(node)")

    def bound(self, node: Any) -> float:
        """Optional: an upper bound on the objective of every node below ``node``."""
        raise NotImplementedError

    def _core(self) -> PyCore:
        has_bound = type(self).bound is not Decision.bound
        return PyCore(self, DECISION, has_bound, 1.0, False, self._leaf_test())


class Optimisation(_Search):
    """Branch and bound: the node with the best ``objective`` (``sense = "max"`` or ``"min"``)."""

    sense: str = "max"

    #: ``children`` yields only children whose bound can still win (it prunes as it makes them, as
    #: the DNN planner does): the engine does not bound them again, and ``bound`` serves only the
    #: proven bound of what a stopped search leaves open (``Result.bound``).
    bounded_children: bool = False

    def objective(self, node: Any) -> float:
        """The node's objective value (the root is never a candidate)."""
        raise NotImplementedError(f"{type(self).__name__} must define objective(node)")

    def bound(self, node: Any) -> float:
        """Optional: an optimistic value; nothing below ``node`` is better than it."""
        raise NotImplementedError

    def _core(self) -> PyCore:
        if self.sense not in ("max", "min"):
            raise ValueError(f"sense must be 'max' or 'min', got {self.sense!r}")
        defined = type(self).bound is not Optimisation.bound
        return PyCore(self, OPTIMISATION, defined and not self.bounded_children,
                      1.0 if self.sense == "max" else -1.0, False, self._leaf_test(),
                      self.bound if defined and self.bounded_children else None)


class TopK(Ranked, Optimisation):
    """The ``k`` best solutions, best first, each with its objective (``Result.solutions``).

    With ``gap``: every solution within ``gap`` of the optimum (at most ``k`` of them if ``k`` is set
    too).  The search prunes against the bar, the k-th best objective known (or the best less
    ``gap``), which spreads between ranks like an incumbent.  Define ``key(solution)`` for at most
    one solution per key (the best), and ``tiebreak(solution)`` (smaller first) for an answer that
    does not depend on the order in which workers meet equally good solutions; without it the
    objectives are exact but which of several tied solutions is kept is not.  ``initial_bound``
    is a value the k-th best is known to reach: solutions worse than it are not searched for.
    Read ``self.threshold`` inside ``children`` to prune while generating.
    """

    k: int | None = None
    gap: float | None = None

    def key(self, solution: Any) -> Any:
        """Optional: solutions with equal keys count once (the best of them)."""
        raise NotImplementedError

    def tiebreak(self, solution: Any) -> Any:
        """Optional: orders solutions of equal objective (smaller first)."""
        raise NotImplementedError

    def ranking(self) -> Ranking:
        """A new, empty ranking with this search's ``k``, ``gap``, ``key`` and ``tiebreak``."""
        cls = type(self)
        key = self.key if cls.key is not TopK.key else None
        tiebreak = self.tiebreak if cls.tiebreak is not TopK.tiebreak else None
        return Ranking(1.0 if self.sense == "max" else -1.0, self.k, self.gap, key, tiebreak)

    @property
    def threshold(self) -> float | None:
        """During a search: a solution is wanted only if its objective is strictly better than this
        (the bar this worker knows, its own or another rank's); None while there is none."""
        return None if self._ranking is None else self._ranking.threshold
